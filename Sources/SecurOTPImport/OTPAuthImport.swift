import SecurOTPCore

/// One `otpauth://` key URI (Google Authenticator's Key Uri Format) as an imported token.
/// Parsing itself is SecurOTPCore's `OTPAuthURI`; this maps its result and errors.
enum OTPAuthImport {
    static let source = "otpauth"

    static func token(fromURI text: String) throws(ImportError) -> ImportedToken {
        let uri: OTPAuthURI
        do throws(OTPAuthError) {
            uri = try OTPAuthURI.parse(text)
        } catch {
            throw ImportError(.malformed, "otpauth URI: \(error.description)")
        }
        if let problem = uri.parameters.problem { throw ImportError(.unsupported, "otpauth URI: \(problem)") }
        return ImportedToken(kind: .oath(uri.parameters), secret: uri.secret,
                             issuer: uri.issuer.flatMap { $0.isEmpty ? nil : $0 }, account: uri.account,
                             source: source)
    }
}
