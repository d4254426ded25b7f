import Foundation
import Hummingbird
import HummingbirdTesting
import SecurOTPServer
import Testing

/// The phone page under /app/ (docs/push.md, "Phones without an app"): what securotpd serves is
/// webapp/ byte for byte (scripts/embed-webapp.sh was run), with the contract's headers, and
/// the page keeps to its own rules (no inline code, nothing from elsewhere, text never parsed
/// as HTML).
@Suite("The phone page's files and headers")
struct WebAppRoutesTests {
    static let webapp = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("webapp")

    static let contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        + "manifest-src 'self'; worker-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    static func files() throws -> [String: String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: webapp.path).sorted()
        return try Dictionary(uniqueKeysWithValues: names.map { name in
            (name, try String(contentsOf: webapp.appendingPathComponent(name), encoding: .utf8))
        })
    }

    static let types = ["index.html": "text/html; charset=utf-8", "app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8",
                        "manifest.webmanifest": "application/manifest+json", "sw.js": "text/javascript; charset=utf-8", "icon.svg": "image/svg+xml"]

    @Test("Each file of webapp/ is served as it is on disk, with its type and the contract's headers (stale embedding fails here: run scripts/embed-webapp.sh)")
    func servedAsOnDisk() async throws {
        let files = try Self.files()
        #expect(Set(files.keys) == Set(Self.types.keys), "webapp/ holds \(files.keys.sorted()); the contract names \(Self.types.keys.sorted())")
        let fixture = try await ValidatorFixture.make()
        try await fixture.application().test(.router) { client in
            for (name, text) in files {
                let path = name == "index.html" ? "/app/" : "/app/" + name
                let response = try await client.execute(uri: path, method: .get)
                #expect(response.status == .ok, "\(path)")
                #expect(String(buffer: response.body) == text, "\(path) differs from webapp/\(name): run scripts/embed-webapp.sh")
                #expect(response.headers[.contentType] == Self.types[name], "\(path): \(response.headers)")
                #expect(response.headers[.contentSecurityPolicy] == Self.contentSecurityPolicy, "\(path)")
                #expect(response.headers[.xContentTypeOptions] == "nosniff", "\(path)")
                #expect(response.headers[HTTPFields.Element.Name("Referrer-Policy")!] == "no-referrer", "\(path)")
                #expect(response.headers[.cacheControl] == "no-cache", "\(path)")
                #expect(response.headers[.strictTransportSecurity] == nil, "plain HTTP (loopback): no HSTS")
                #expect(response.headers[.setCookie] == nil, "no cookie anywhere")
            }
        }
        await fixture.cleanUp()
    }

    @Test("/app redirects to /app/; /app/index.html, unknown files and other paths are 404")
    func onlyThePage() async throws {
        let fixture = try await ValidatorFixture.make()
        try await fixture.application().test(.router) { client in
            let bare = try await client.execute(uri: "/app", method: .get)
            #expect(bare.status == .movedPermanently && bare.headers[.location] == "/app/", "\(bare.status) \(bare.headers)")
            for path in ["/app/index.html", "/app/missing.js", "/app/..%2Fsecurotpd.conf", "/app/app.js/x"] {
                let response = try await client.execute(uri: path, method: .get)
                #expect(response.status == .notFound, "\(path): \(response.status)")
            }
        }
        await fixture.cleanUp()
    }

    @Test("The page has no inline script or style, loads nothing from elsewhere, and never parses text as HTML")
    func pageRules() throws {
        let files = try Self.files()
        let html = try #require(files["index.html"])
        // Every <script> has a same-origin src; no style element or attribute; no event handler attributes.
        let scripts = html.components(separatedBy: "<script").dropFirst()
        #expect(!scripts.isEmpty && scripts.allSatisfy { $0.hasPrefix(" src=\"/app/") }, "inline or outside script in index.html")
        #expect(!html.contains("<style") && !html.contains(" style="), "inline style in index.html")
        #expect(html.range(of: #"\son[a-z]+="#, options: .regularExpression) == nil, "an inline event handler in index.html")
        for (name, text) in files {
            // Only the SVG namespace name may look like a URL; nothing is fetched from elsewhere.
            let outside = text.replacingOccurrences(of: "xmlns=\"http://www.w3.org/2000/svg\"", with: "")
            #expect(!outside.contains("http://") && !outside.contains("https://") && !outside.contains("//cdn"), "webapp/\(name) names an outside URL")
        }
        let script = try #require(files["app.js"])
        for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setTimeout(\"", "setInterval(\""] {
            #expect(!script.contains(sink), "app.js uses \(sink): insert outside strings with textContent only")
        }
        #expect(!script.contains("sessionStorage") && !script.contains("localStorage.setItem(\"securotp.session"),
                "the session token stays in memory only")
    }
}
