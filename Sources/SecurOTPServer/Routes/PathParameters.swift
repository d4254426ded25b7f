import Foundation
import Hummingbird
import SecurOTPCore
import SecurOTPService

extension ValidatorRequestContext {
    /// The path parameter `name`, percent-decoded: clients (`securotp --server`,
    /// RemoteTokenService.segment) encode every byte but letters, digits and `-._~` — a user
    /// `alice@corp` arrives as `alice%40corp` — and the router hands the segment over as sent.
    /// Every route with a parameter reads it here, so all agree on the name.
    func pathParameter(_ name: String) throws -> String {
        let raw: String = try parameters.require(name)
        guard let decoded = raw.removingPercentEncoding else {
            throw ServiceError(.invalidInput, "\(name) in the path is not valid percent-encoding")
        }
        // No name or serial has one; refused here, none reaches a message, a log or a query.
        guard TerminalText.isSafe(decoded) else {
            throw ServiceError(.invalidInput, "\(name) in the path contains a control character")
        }
        return decoded
    }
}
