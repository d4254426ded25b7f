// swift-tools-version: 6.0
//
// Target graph (docs/design.md, "Target graph" and "What the module may link"): everything
// pam_securotp.so links — CPAM, COpenSSL, CSQLite, CPosix, CHTTP, SecurOTPCore, SecurOTPSecurID,
// SecurOTPStore, SecurOTPPAM — is Foundation-free and concurrency-free, and its Swift targets
// are compiled with `pamSafe`. The CLI and the QR renderer may use more; the module never
// links them.
import PackageDescription

let pamSafe: [SwiftSetting] = [
    .unsafeFlags([
        "-Xfrontend", "-disable-implicit-concurrency-module-import",
        "-Xfrontend", "-disable-implicit-string-processing-module-import",
    ]),
]

let versionScript = Context.packageDirectory + "/pam/pam_securotp/exports.map"

let package = Package(
    name: "securotp",
    platforms: [.macOS(.v14)],
    products: [
        // File name: libpam_securotp.so; `make install` copies it to .../security/pam_securotp.so.
        .library(name: "pam_securotp", type: .dynamic, targets: ["PAMModule"]),
        .executable(name: "securotp", targets: ["securotp"]),
        .executable(name: "pam-check", targets: ["PAMCheck"]),
        .executable(name: "securotp-authenticator", targets: ["securotp-authenticator"]),
        .executable(name: "securotpd", targets: ["securotpd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
    ],
    targets: [
        // C shims: real Linux-PAM / OpenSSL / SQLite headers, non-variadic wrappers.
        .target(name: "CPAM", linkerSettings: [.linkedLibrary("pam")]),
        .target(name: "COpenSSL", linkerSettings: [.linkedLibrary("crypto")]),
        .target(name: "CSQLite", linkerSettings: [.linkedLibrary("sqlite3")]),
        .target(name: "CPosix"),
        // HTTP(S) to a validator through libcurl, loaded with dlopen only when used (the
        // module's remote mode and the CLI's --server).
        .target(name: "CHTTP"),
        // FIDO security keys through libfido2, likewise loaded with dlopen only when used (a
        // user with a FIDO credential logs in; `securotp fido enroll`).
        .target(name: "CFido2"),
        // The application side of PAM (pam_start + libpam_misc's terminal conversation) for
        // `securotp test`. CLI only: the module never links it.
        .target(name: "CPAMClient", linkerSettings: [.linkedLibrary("pam"), .linkedLibrary("pam_misc")]),

        // OTP algorithms, base32, otpauth URIs, constant-time compare, secret buffers.
        .target(name: "SecurOTPCore", dependencies: ["COpenSSL"], swiftSettings: pamSafe),
        // The verification engine and its policy, storage-free: token records, the kinds' codes,
        // lockout, decisions and the conditional writes that record them (docs/design.md).
        .target(name: "SecurOTPEngine", dependencies: ["SecurOTPCore", "SecurOTPSecurID", "COpenSSL"], swiftSettings: pamSafe),
        // Encrypted SQLite store, key file, config file, file-permission policy, binding IDs;
        // re-exports the engine, which every user of the store decides with.
        .target(name: "SecurOTPStore", dependencies: ["SecurOTPEngine", "SecurOTPCore", "SecurOTPSecurID", "CSQLite", "CPosix"], swiftSettings: pamSafe),
        // The PAM module's logic: options, conversation, groups, verify-and-record, and the
        // remote mode's requests to a validator (CHTTP: libcurl is dlopen'd, never linked).
        .target(name: "SecurOTPPAM", dependencies: ["SecurOTPStore", "CPAM", "CPosix", "CHTTP", "CFido2"], swiftSettings: pamSafe),
        // RSA SecurID 128-bit tokencodes (time-based, AES) with PIN modes. Linked by the module.
        .target(name: "SecurOTPSecurID", dependencies: ["SecurOTPCore", "COpenSSL"], swiftSettings: pamSafe),
        // Token import formats: otpauth URIs, Google Authenticator migration, PSKC (RFC 6030),
        // SecurID .sdtid files and CTF strings. CLI and authenticator only — never the module,
        // so it may use Foundation (XML) and OpenSSL's EVP interface (COpenSSLImport).
        .target(name: "COpenSSLImport", linkerSettings: [.linkedLibrary("crypto")]),
        .target(name: "SecurOTPImport", dependencies: ["SecurOTPCore", "SecurOTPSecurID", "COpenSSL", "COpenSSLImport"]),
        // What both command-line tools share: one-line errors, secret input from the terminal,
        // text tables, reading an import's source, password and transport key, making a FIDO
        // credential on an attached key (libfido2, dlopened by CFido2).
        .target(name: "SecurOTPCommandLine", dependencies: [
            "SecurOTPCore", "SecurOTPImport", "SecurOTPEngine", "CFido2",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // QR code encoder and renderers (terminal half blocks, PNG). Used by the CLI only.
        .target(name: "SecurOTPQR"),

        // Everything a caller can ask of securotp (TokenService) and the /v1 API's JSON shapes,
        // with the SQLite implementation (SQLiteTokenService). CLI and daemon only.
        .target(name: "SecurOTPService", dependencies: ["SecurOTPStore", "SecurOTPImport", "SecurOTPCore", "CHTTP", "COpenSSL", "COpenSSLImport"]),
        // The TokenService of a PostgreSQL database several securotpd nodes share (postgres-nio).
        .target(name: "SecurOTPPostgres", dependencies: [
            "SecurOTPService", "SecurOTPStore", "SecurOTPCore",
            .product(name: "PostgresNIO", package: "postgres-nio"),
        ]),
        // The validator's HTTP application (Hummingbird): routes, authentication, rate limits,
        // metrics, configuration. `buildApplication` serves securotpd and the tests alike.
        .target(name: "SecurOTPServer", dependencies: [
            "SecurOTPService",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdTLS", package: "hummingbird"),
            .product(name: "Prometheus", package: "swift-prometheus"),
        ]),
        .executableTarget(name: "securotpd", dependencies: [
            "SecurOTPServer", "SecurOTPService", "SecurOTPPostgres",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        // The .so: only the @_cdecl entry points. Swift runtime linked statically, exports
        // limited to pam_sm_* by the version script (docs/design.md, "What the module may link").
        .target(
            name: "PAMModule",
            dependencies: ["SecurOTPPAM"],
            path: "pam/pam_securotp",
            exclude: ["exports.map"],
            swiftSettings: pamSafe,
            linkerSettings: [
                .unsafeFlags([
                    "-static-stdlib",
                    "-use-ld=lld",
                    "-Xlinker", "--version-script=\(versionScript)",
                    "-Xlinker", "-z", "-Xlinker", "nodelete",
                    "-Xlinker", "-z", "-Xlinker", "now",
                    "-Xlinker", "-z", "-Xlinker", "relro",
                    "-Xlinker", "--gc-sections",
                    // `make` links libcrypto, libsqlite3 and libstdc++ statically into the module
                    // through this directory (scripts/module-static-libs.sh): loading their shared
                    // copies cost ~2.2 ms per process, most of a login (bench/README.md).
                    // Without it, plain `swift build` links them dynamically.
                    "-L\(Context.packageDirectory)/.build/module-static-libs",
                ]),
            ]
        ),

        .executableTarget(
            name: "securotp",
            dependencies: [
                "SecurOTPStore", "SecurOTPQR", "SecurOTPService", "SecurOTPPostgres", "SecurOTPCommandLine", "CPAMClient", "CHTTP", "CFido2",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // The user's side: a software token in the user's home, like the mobile SDKs' apps.
        // The logic (its own sealed store, binding to user and machine, codes) is a library the
        // tests link; the executable holds only the command tree. Never linked by the module.
        .target(name: "SecurOTPAuthenticator", dependencies: ["SecurOTPCore", "SecurOTPSecurID", "SecurOTPImport", "SecurOTPStore", "COpenSSLImport", "CHTTP"]),
        .executableTarget(
            name: "securotp-authenticator",
            dependencies: [
                "SecurOTPAuthenticator", "SecurOTPImport", "SecurOTPCore", "SecurOTPCommandLine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // Test driver: runs one PAM conversation through the real libpam with a private
        // service directory (pam_start_confdir) and prints the outcome.
        .executableTarget(name: "PAMCheck", path: "Tests/PAMCheck", linkerSettings: [.linkedLibrary("pam")]),

        // What several test targets share: seeded randomness, and the memory backend (the
        // pipeline's storage contract over dictionaries). No product links it.
        .target(name: "TestSupport", dependencies: ["SecurOTPService", "SecurOTPStore", "SecurOTPEngine", "SecurOTPCore"],
                path: "Tests/TestSupport"),
        .testTarget(name: "SecurOTPCoreTests", dependencies: ["SecurOTPCore", "TestSupport"], resources: []),
        .testTarget(name: "SecurOTPStoreTests", dependencies: ["SecurOTPEngine", "SecurOTPStore", "SecurOTPService", "TestSupport"]),
        // The PAM module's own logic (SecurOTPPAM) and the texts it shows and logs.
        .testTarget(name: "SecurOTPPAMTests", dependencies: ["SecurOTPPAM", "SecurOTPStore", "CPAM"]),
        .testTarget(name: "SecurOTPQRTests", dependencies: ["SecurOTPQR"]),
        .testTarget(name: "SecurOTPSecurIDTests", dependencies: ["SecurOTPSecurID"]),
        .testTarget(name: "SecurOTPImportTests", dependencies: ["SecurOTPImport"]),
        .testTarget(name: "IntegrationTests", dependencies: ["SecurOTPCore"]),
        .testTarget(name: "SecurOTPServerTests", dependencies: [
            "SecurOTPServer", "SecurOTPService", "SecurOTPPostgres", "SecurOTPStore", "SecurOTPCore", "TestSupport",
            .product(name: "HummingbirdTesting", package: "hummingbird"),
        ]),
        .testTarget(name: "AuthenticatorTests", dependencies: ["securotp-authenticator", "SecurOTPAuthenticator", "SecurOTPImport", "SecurOTPSecurID",
                                                      "SecurOTPStore", "SecurOTPCore"]),
        // securotp's commands run in-process against an injected CommandContext.
        .testTarget(name: "CLITests", dependencies: ["securotp", "SecurOTPService", "SecurOTPStore", "SecurOTPCore", "SecurOTPCommandLine"]),
    ]
)
