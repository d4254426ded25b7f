// otpauth:// key URIs (OTPAuthURI.parse in SecurOTPCore; `securotp import` and the
// authenticator read them from files and QR codes).
//
// Properties: what parse accepts is in range (digits 6–8, period 1–300 s, a secret, an
// account); render() of it parses back to the same token — the parameters that make the
// codes, the secret, the account and the issuer.
import FuzzSupport
@testable import SecurOTPCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOTPAuth(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: Fuzz.bytes(data, size), as: UTF8.self)
    let uri: OTPAuthURI
    do {
        uri = try OTPAuthURI.parse(text)
    } catch {
        Fuzz.require(!error.description.isEmpty, "empty error for \(text)")
        return 0
    }
    checkRanges(uri, text)
    checkRoundTrip(uri, text)
    return 0
}

private func checkRanges(_ uri: OTPAuthURI, _ text: String) {
    let p = uri.parameters
    Fuzz.require(OTP.digitRange.contains(p.digits), "digits \(p.digits) from \(text)")
    Fuzz.require(OTP.periodRange.contains(p.period), "period \(p.period) from \(text)")
    Fuzz.require(p.problem == nil, "parameters with a problem from \(text)")
    Fuzz.require(uri.secret.count > 0, "empty secret from \(text)")
    Fuzz.require(!uri.account.isEmpty, "empty account from \(text)")
    // The codes the parsed token makes must be computable (the verifier relies on it).
    Fuzz.require(OTP.hotp(secret: uri.secret, counter: p.counter, digits: p.digits, algorithm: p.algorithm).count == p.digits,
                 "no code for \(text)")
}

private func checkRoundTrip(_ uri: OTPAuthURI, _ text: String) {
    let rendered = uri.render()
    let again: OTPAuthURI
    do {
        again = try OTPAuthURI.parse(rendered)
    } catch {
        Fuzz.require(false, "render() of \(text) gave \(rendered), which does not parse: \(error)")
        return
    }
    let (a, b) = (uri.parameters, again.parameters)
    Fuzz.require(a.kind == b.kind && a.algorithm == b.algorithm && a.digits == b.digits,
                 "\(text) → \(rendered): kind/algorithm/digits changed")
    switch a.kind {
    case .totp: Fuzz.require(a.period == b.period, "\(text) → \(rendered): period \(a.period) became \(b.period)")
    case .hotp: Fuzz.require(a.counter == b.counter, "\(text) → \(rendered): counter \(a.counter) became \(b.counter)")
    }
    Fuzz.require(again.secret.constantTimeEquals(uri.secret), "\(text) → \(rendered): secret changed")
    Fuzz.require(again.account == uri.account, "\(text) → \(rendered): account \"\(uri.account)\" became \"\(again.account)\"")
    let issuer = uri.issuer.flatMap { $0.isEmpty ? nil : $0 }
    let issuerAgain = again.issuer.flatMap { $0.isEmpty ? nil : $0 }
    Fuzz.require(issuer == issuerAgain, "\(text) → \(rendered): issuer \(issuer ?? "nil") became \(issuerAgain ?? "nil")")
}
