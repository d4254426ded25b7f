import Foundation
import Logging
import SecurOTPServer
import SecurOTPService
import SecurOTPStore
import Testing

@Suite("docs/api/openapi.yaml matches the server")
struct OpenAPITests {
    @Test("Every route the server registers is documented, and every documented operation is served")
    func routesMatchTheDocument() async throws {
        let fixture = try await ValidatorFixture.make()
        let router = buildRouter(configuration: fixture.configuration, service: fixture.service)
        await fixture.cleanUp()
        // Hummingbird writes parameters as :name, OpenAPI as {name}.
        let served = Set(router.routes.map { route in
            OpenAPIDocument.Operation(method: route.method.rawValue, path: "\(route.path)".split(separator: "/").map { segment in
                segment.hasPrefix(":") ? "{\(segment.dropFirst())}" : String(segment)
            }.reduce("") { $0 + "/" + $1 })
        })
        let documented = Set(try OpenAPIDocument.shared.operations().keys)
        #expect(served.subtracting(documented).isEmpty, "served but not documented: \(served.subtracting(documented))")
        #expect(documented.subtracting(served).isEmpty, "documented but not served: \(documented.subtracting(served))")
        #expect(served.count >= 20)
    }
}
