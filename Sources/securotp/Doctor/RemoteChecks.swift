import CHTTP
import Foundation
import SecurOTPCore
import SecurOTPStore

/// Remote mode (`validator=`): what the module needs on this host instead of a local store —
/// the host credential, the TLS files, and a validator that answers. The health call goes
/// through the module's own HTTP client (CHTTP: libcurl, the same TLS settings), so a failure
/// here is the failure a login would see.
enum RemoteChecks {
    /// The health call's bound: the module's timeout, at most five seconds.
    static let maxHealthSeconds = 5

    static func check(_ remote: ValidatorSettings, origin: String, _ report: Doctor.Report) {
        guard let address = remote.address else { return }
        report.ok("\(origin): remote mode, validator \(address) (the tokens are on the validator; this host keeps no store)")
        checkCredential(remote.hostCredential, origin: origin, report)
        if let caFile = remote.caFile {
            checkCertificateFile(caFile, what: "ca_file", report)
        } else if case .https = address {
            report.ok("\(origin): no ca_file: the validator's certificate must chain to the system's CA bundle (a self-signed certificate is its own ca_file)")
        }
        if let certificate = remote.clientCertificate { checkCertificateFile(certificate, what: "client_cert", report) }
        if let key = remote.clientKey {
            do {
                try FileSecurity.check(key, .secret)
                report.ok("client_key \(key) is owner-only")
            } catch {
                report.error("client_key: \(error.message)")
            }
        }
        health(remote, address, report)
    }

    private static func checkCredential(_ file: String?, origin: String, _ report: Doctor.Report) {
        guard let file else {
            report.error("\(origin): validator= without host_credential=; make one on the validator (securotp host add NAME --output FILE), copy it here (root-owned, mode 0600) and set host_credential=FILE")
            return
        }
        do {
            var bytes = try FileSecurity.contents(of: file, .secret, maxSize: 4096)
            defer { bytes.withUnsafeMutableBytes { buffer in for index in buffer.indices { buffer[index] = 0 } } }
            // The first line, trimmed: sotp_h_<16 hex>_<64 hex> (the secret itself is never printed).
            let line = bytes.prefix { $0 != 0x0a && $0 != 0x0d }.drop { $0 == 0x20 || $0 == 0x09 }
            let trimmed = line.reversed().drop { $0 == 0x20 || $0 == 0x09 }
            let prefix = Array("sotp_h_".utf8)
            guard trimmed.count == prefix.count + 16 + 1 + 64, line.starts(with: prefix) else {
                report.error("host_credential \(file) holds no host credential (expected one line sotp_h_…); make one on the validator with: securotp host add NAME --output FILE, and copy it here (root-owned, mode 0600)")
                return
            }
            report.ok("host_credential \(file) is root-owned, owner-only and holds a host credential")
        } catch where error.code == .missing {
            report.error("host_credential \(file) does not exist: every login is refused; make it on the validator (securotp host add NAME --output FILE), copy it here, then: chown root: \(file); chmod 600 \(file)")
        } catch {
            // FileSecurity's message names the fix (chown root: / chmod 600).
            report.error("host_credential: \(error.message) (the module refuses a credential others can read)")
        }
    }

    /// Readable by the module's rules (root-owned, not writable by others) and PEM with at least
    /// one certificate whose DER is an X.509 SEQUENCE.
    static func checkCertificateFile(_ file: String, what: String, _ report: Doctor.Report) {
        let bytes: [UInt8]
        do {
            bytes = try FileSecurity.contents(of: file, .policy, maxSize: 1 << 20)
        } catch where error.code == .missing {
            report.error("\(what) \(file) does not exist; copy the CA certificate that signed the validator's certificate there (for a self-signed certificate: the certificate itself)")
            return
        } catch {
            report.error("\(what): \(error.message)")
            return
        }
        let count = certificateCount(bytes)
        if count == 0 {
            report.error("\(what) \(file) holds no PEM certificate (-----BEGIN CERTIFICATE-----); copy the validator's CA certificate (PEM) there (check with: openssl x509 -in \(file) -noout -subject)")
        } else {
            report.ok("\(what) \(file) is readable and holds \(count) certificate\(count == 1 ? "" : "s")")
        }
    }

    /// PEM CERTIFICATE blocks whose base64 decodes to a DER SEQUENCE of the length it says.
    static func certificateCount(_ bytes: [UInt8]) -> Int {
        guard let text = String(validating: bytes, as: UTF8.self) else { return 0 }
        var count = 0
        var rest = Substring(text)
        while let begin = rest.range(of: "-----BEGIN CERTIFICATE-----"), let end = rest[begin.upperBound...].range(of: "-----END CERTIFICATE-----") {
            let body = rest[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
            if let der = Data(base64Encoded: String(body)), isDERSequence([UInt8](der)) { count += 1 }
            rest = rest[end.upperBound...]
        }
        return count
    }

    private static func isDERSequence(_ der: [UInt8]) -> Bool {
        guard der.count > 2, der[0] == 0x30 else { return false }
        var length = Int(der[1])
        var header = 2
        if length & 0x80 != 0 {
            let octets = length & 0x7f
            guard (1...3).contains(octets), der.count > 2 + octets else { return false }
            length = 0
            for index in 0..<octets { length = length << 8 | Int(der[2 + index]) }
            header += octets
        }
        return header + length == der.count
    }

    /// One GET /v1/health (no credential needed), bounded.
    private static func health(_ remote: ValidatorSettings, _ address: ValidatorAddress, _ report: Doctor.Report) {
        let seconds = min(remote.timeout, maxHealthSeconds)
        var response = securotp_http_response()
        defer { securotp_http_response_free(&response) }
        let rc = address.url(APIPath.health.template).withCString { url in
            optionalCString(remote.caFile) { caFile in
                optionalCString(remote.clientCertificate) { certificate in
                    optionalCString(remote.clientKey) { key in
                        "GET".withCString { method in
                            var request = securotp_http_request()
                            request.method = method
                            request.url = url
                            request.ca_file = caFile
                            request.client_cert = certificate
                            request.client_key = key
                            request.timeout_ms = seconds * 1000
                            request.max_response = 4096
                            return securotp_http_perform(&request, &response)
                        }
                    }
                }
            }
        }
        guard rc == 0 else {
            let reason = withUnsafeBytes(of: response.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            report.error("""
                validator \(address) did not answer /v1/health within \(seconds) s: \(TerminalText.excerpt(reason, maxScalars: 200)); \
                logins are refused (failmode=\(remote.failMode.rawValue)\(remote.failMode == .safe ? ": they pass without a code" : "")). \
                Check that securotpd runs there (systemctl status securotpd), that this host reaches its port, and that ca_file names \
                the CA that signed its certificate
                """)
            return
        }
        let body = response.body.map { String(decoding: UnsafeBufferPointer(start: $0, count: response.body_length), as: UTF8.self) } ?? ""
        let compact = body.filter { !$0.isWhitespace }
        if response.status == 200, compact.contains("\"status\":\"ok\"") {
            report.ok("validator \(address) answers /v1/health: ok")
        } else {
            report.error("validator \(address) answered /v1/health with HTTP \(response.status) \(TerminalText.quoted(body, limit: 120)); is that a securotpd? Check validator= and the daemon's log (journalctl -u securotpd)")
        }
    }
}

private func optionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString(body)
}
