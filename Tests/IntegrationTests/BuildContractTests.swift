// The shape of the shipped module (docs/design.md, "What the module may link"): only the PAM
// entry points exported, the Swift runtime linked in (no libswift*.so needed at run time), and
// loadable with every symbol bound.
import Foundation
import Testing

@Suite("Build contract: libpam_securotp.so")
struct BuildContractTests {
    @Test("nm -D --defined-only lists exactly pam_sm_authenticate and pam_sm_setcred")
    func exportsOnlyEntryPoints() throws {
        let module = try Binaries.module()
        let nm = try Run.run("/usr/bin/nm", ["-D", "--defined-only", module])
        try #require(nm.status == 0, "\(nm)")
        let symbols = nm.lines.compactMap { $0.split(separator: " ").last.map(String.init) }
        #expect(symbols.sorted() == ["pam_sm_authenticate", "pam_sm_setcred"], "exported: \(symbols)")
        #expect(nm.lines.allSatisfy { $0.split(separator: " ").dropFirst().first == "T" }, "\(nm.stdout)")
    }

    @Test("readelf -d: no libswift* among the NEEDED libraries")
    func noSwiftRuntimeDependency() throws {
        let module = try Binaries.module()
        let readelf = try Run.run("/usr/bin/readelf", ["-d", module])
        try #require(readelf.status == 0, "\(readelf)")
        let needed = readelf.lines.filter { $0.contains("(NEEDED)") }.compactMap { line -> String? in
            guard let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]") else { return nil }
            return String(line[line.index(after: open)..<close])
        }
        #expect(needed.contains("libpam.so.0"), "\(needed)")
        #expect(!needed.contains { $0.hasPrefix("libswift") || $0.hasPrefix("libFoundation") || $0.hasPrefix("libdispatch") },
                "the module needs the Swift runtime at run time: \(needed)")
        #expect(readelf.stdout.contains("BIND_NOW") || (readelf.stdout.contains("FLAGS_1") && readelf.stdout.contains("NOW")),
                "linked with -z now: \(readelf.stdout)")
    }

    @Test("libcurl is not linked: no libcurl NEEDED and no curl_* symbol to bind; remote mode dlopens it")
    func libcurlIsLoadedOnlyWhenUsed() throws {
        let module = try Binaries.module()
        let readelf = try Run.run("/usr/bin/readelf", ["-d", module])
        try #require(readelf.status == 0, "\(readelf)")
        let needed = readelf.lines.filter { $0.contains("(NEEDED)") }
        #expect(!needed.contains { $0.contains("libcurl") || $0.contains("libssl") || $0.contains("libnghttp") }, "\(needed)")
        let nm = try Run.run("/usr/bin/nm", ["-D", "--undefined-only", module])
        try #require(nm.status == 0, "\(nm)")
        #expect(!nm.lines.contains { $0.contains("curl_") }, "libcurl symbols bound at load time: \(nm.stdout)")
        let strings = try Run.run("/usr/bin/strings", [module])
        #expect(strings.lines.contains("libcurl.so.4"), "the module names the library it dlopens")
    }

    @Test("dlopen(RTLD_NOW) succeeds in a plain C program and finds both entry points")
    func loadsWithRTLDNow() throws {
        let module = try Binaries.module()
        let box = try Sandbox()
        let source = box.path("load.c")
        try box.write("""
            #include <dlfcn.h>
            #include <stdio.h>
            int main(int argc, char **argv) {
                void *handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
                if (handle == NULL) { fprintf(stderr, "dlopen: %s\\n", dlerror()); return 1; }
                if (dlsym(handle, "pam_sm_authenticate") == NULL || dlsym(handle, "pam_sm_setcred") == NULL) {
                    fprintf(stderr, "entry point missing\\n");
                    return 2;
                }
                if (dlsym(handle, "swift_retain") != NULL) { fprintf(stderr, "Swift runtime symbols are visible\\n"); return 3; }
                puts("loaded");
                return 0;
            }
            """, to: source)
        let compiler = ["/usr/bin/cc", "/usr/bin/clang", "/usr/bin/gcc"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let cc = try #require(compiler, "no C compiler (cc, clang or gcc) to build the dlopen check")
        let binary = box.path("load")
        let build = try Run.run(cc, ["-o", binary, source, "-ldl"])
        try #require(build.status == 0, "\(build)")
        let load = try Run.run(binary, [module])
        #expect(load.status == 0 && load.stdout == "loaded\n", "\(load)")
    }
}
