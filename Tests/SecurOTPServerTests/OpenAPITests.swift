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
        let routes = router.routes.map { ($0.method, $0.path) } + buildMetricsRouter(ValidatorMetrics()).routes.map { ($0.method, $0.path) }
        let served = Set(routes.map { (method, path) in
            OpenAPIDocument.Operation(method: method.rawValue, path: "\(path)".split(separator: "/").map { segment in
                segment.hasPrefix(":") ? "{\(segment.dropFirst())}" : String(segment)
            }.reduce("") { $0 + "/" + $1 })
        })
        let documented = Set(try OpenAPIDocument.shared.operations().keys)
        #expect(served.subtracting(documented).isEmpty, "served but not documented: \(served.subtracting(documented))")
        #expect(documented.subtracting(served).isEmpty, "documented but not served: \(documented.subtracting(served))")
        #expect(served.count >= 20)
    }
}
