import Foundation
import SecurOTPCore
import SecurOTPImport
import SecurOTPStore

/// Builds the tokens enroll and import add, for every backend: parameters checked, seeds made
/// or parsed, nothing stored yet.
public enum NewTokens {
    /// A token with a fresh seed, and the seed (shown once).
    public static func enrolled(_ request: EnrollRequest) throws(ServiceError) -> NewToken {
        let kindName = request.kind ?? TokenKind.totp.rawValue
        // SecurID tokens come from their vendor's files (import), never from enroll.
        guard let kind = TokenKind(rawValue: kindName), kind != .securid else {
            throw ServiceError(.invalidInput, "kind must be totp, hotp or ocra (got \(kindName))")
        }
        let nickname = request.nickname ?? ""
        let issuer = request.issuer ?? "securotp"
        if kind == .ocra {
            guard let text = request.suite else { throw ServiceError(.invalidInput, "an OCRA token needs its suite, e.g. OCRA-1:HOTP-SHA1-6:QN08") }
            let suite: OCRASuite
            do { suite = try OCRASuite(text) } catch { throw ServiceError(.invalidInput, "OCRA suite \(text): \(error.message)") }
            let seed = try randomSeed(for: suite.algorithm)
            return NewToken(kind: .ocra, parameters: OATHParameters(kind: .hotp, algorithm: suite.algorithm, digits: suite.digits),
                            seed: seed, nickname: nickname, issuer: issuer, suite: suite.text)
        }
        let algorithmName = request.algorithm ?? "SHA1"
        guard let algorithm = HashAlgorithm(name: algorithmName) else {
            throw ServiceError(.invalidInput, "algorithm must be SHA1, SHA256 or SHA512 (got \(algorithmName))")
        }
        let parameters = OATHParameters(kind: kind == .hotp ? .hotp : .totp, algorithm: algorithm, digits: request.digits ?? 6,
                                        period: request.period ?? 30, counter: 0)
        if let problem = parameters.problem { throw ServiceError(.invalidInput, problem) }
        return NewToken(kind: kind, parameters: parameters, seed: try randomSeed(for: algorithm),
                        nickname: nickname, issuer: issuer)
    }

    /// RFC 4226 §4 asks for at least 128 bits; use the hash's own output length.
    static func randomSeed(for algorithm: HashAlgorithm) throws(ServiceError) -> SecretBytes {
        let length = switch algorithm { case .sha1: 20; case .sha256: 32; case .sha512: 64 }
        guard let seed = SecretBytes.random(count: length) else { throw ServiceError(.system, "no randomness available from getrandom(2)") }
        return seed
    }

    /// Parses an import source (otpauth, migration, PSKC, SDTID, CTF) bound for `bindingID`.
    public static func imported(_ request: ImportRequest, bindingID: String, now: Int64) throws(ServiceError) -> [NewToken] {
        guard let source = Data(base64Encoded: request.source) else { throw ServiceError(.invalidInput, "source must be base64") }
        var transportKey: SecretBytes?
        if let hex = request.keyHex {
            guard let bytes = Hex.decode(hex.trimmingCharacters(in: .whitespacesAndNewlines)), [16, 24, 32].contains(bytes.count) else {
                throw ServiceError(.invalidInput, "the transport key must be 16, 24 or 32 bytes of hex")
            }
            transportKey = SecretBytes(copying: bytes)
        }
        let options = ImportOptions(password: request.password.map { Array($0.utf8) }, transportKey: transportKey,
                                    bindingID: bindingID, now: now)
        let tokens: [ImportedToken]
        do {
            tokens = try TokenImporter.parse(Array(source), options: options)
        } catch {
            throw ServiceError(error.code == .password || error.code == .deviceBinding ? .importDenied : .importInvalid, error.message)
        }
        guard !tokens.isEmpty else { throw ServiceError(.importInvalid, "no tokens found") }
        return tokens.map { newToken($0, nickname: request.nickname) }
    }

    static func newToken(_ token: ImportedToken, nickname: String?) -> NewToken {
        let label = nickname ?? String((token.account ?? "").prefix(32))
        switch token.kind {
        case .oath(let parameters):
            return NewToken(kind: parameters.kind == .hotp ? .hotp : .totp, parameters: parameters, seed: token.secret,
                            serial: token.serial, nickname: label, issuer: token.issuer ?? "", pinMode: token.pinMode,
                            expires: token.expires ?? 0, source: token.source)
        case .securID(let parameters):
            return NewToken(kind: .securid, parameters: OATHParameters(kind: .totp, digits: parameters.digits, period: parameters.interval),
                            seed: token.secret, serial: token.serial, nickname: label, issuer: token.issuer ?? "RSA SecurID",
                            pinMode: token.pinMode, expires: token.expires ?? parameters.expiresAt ?? 0, source: token.source)
        }
    }
}
