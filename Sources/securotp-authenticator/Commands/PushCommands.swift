import ArgumentParser
import Foundation
import Glibc
import SecurOTPAuthenticator
import SecurOTPCommandLine
import SecurOTPCore

/// Reading PINs for push approval: --pin-file's first line, else the terminal with echo off
/// (a line of standard input when it is not a terminal).
enum PushPIN {
    static func current(file: String?) throws -> SecretBytes {
        var line: [UInt8]?
        if let file { line = try Terminal.firstLine(of: file, what: "PIN") } else { line = try Terminal.secretLine(prompt: "Device PIN: ", what: "PIN") }
        defer { wipe(&line) }
        return SecretBytes(copying: line ?? [])
    }

    /// A new PIN: from the file, or typed twice on a terminal.
    static func new(file: String?, policy: ActivatedPINPolicy) throws -> SecretBytes {
        if let file {
            var line: [UInt8]? = try Terminal.firstLine(of: file, what: "PIN")
            defer { wipe(&line) }
            return SecretBytes(copying: line ?? [])
        }
        let prompt = "New device PIN (\(policy.minLength)–\(policy.maxLength) characters): "
        var first: [UInt8]? = try Terminal.secretLine(prompt: prompt, what: "PIN")
        defer { wipe(&first) }
        if Terminal.isInteractive {
            var second: [UInt8]? = try Terminal.secretLine(prompt: "Again: ", what: "PIN")
            defer { wipe(&second) }
            guard first == second else { throw CLIError(.invalidInput, "the two PINs differ; run the command again") }
        }
        return SecretBytes(copying: first ?? [])
    }
}

/// One request as text: every string from outside escaped before it reaches the terminal.
enum PendingPushText {
    static func line(_ request: PendingPush, now: Int64) -> String {
        var parts = ["\(TerminalText.escaped(request.id))", "user \(TerminalText.quoted(request.user))",
                     "host \(TerminalText.quoted(request.host))", "service \(TerminalText.quoted(request.service))"]
        if !request.remoteAddress.isEmpty { parts.append("from \(TerminalText.quoted(request.remoteAddress))") }
        if !request.tty.isEmpty { parts.append("tty \(TerminalText.quoted(request.tty))") }
        if !request.command.isEmpty { parts.append("command \(TerminalText.quoted(request.command, limit: 200))") }
        parts.append("expires in \(max(0, request.expires - now))s")
        return parts.joined(separator: "  ")
    }

    static func json(_ request: PendingPush) -> [String: Any] {
        ["id": request.id, "user": request.user, "host": request.host, "service": request.service,
         "remote_address": request.remoteAddress, "tty": request.tty, "command": request.command,
         "expires": request.expires]
    }

    static func printJSON(_ value: Any) throws {
        let data = try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes])
        print(String(decoding: data, as: UTF8.self))
    }
}

struct Activate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Enroll this store as a push-approval device with an activation code from your administrator.",
        discussion: """
        Makes a P-256 key pair whose private key stays sealed in the store, registers the public key with the validator using the single-use CODE (securotp device add USER prints it), and keeps the device credential the validator returns sealed too. When the validator's policy asks for a device PIN (4-8 characters by default), you choose it now: from --pin-file's first line, or typed twice. Only a slow hash of it is kept. One device per store.

        The administrator's link (securotp-activate:https://HOST[:PORT]?code=CODE, printed and shown as a QR code by securotp device add) carries both the code and the validator; --server is then not needed, and refused if it names another validator.

        Examples:
          securotp-authenticator activate 'securotp-activate:https://otp.example.com:8443?code=ABCD-EFGH-JKMN-PQRS'
          securotp-authenticator activate ABCD-EFGH-JKMN-PQRS --server https://otp.example.com:8443
          securotp-authenticator activate ABCD-EFGH-JKMN-PQRS --server https://otp.example.com --ca-file /etc/ssl/otp-ca.pem --pin-file pin.txt
        """
    )

    @OptionGroup var store: StoreOptions
    @Argument(help: "The activation code (ABCD-EFGH-JKMN-PQRS), or the securotp-activate: link holding it and the validator.") var code: String
    @Option(help: ArgumentHelp("The validator: https://HOST[:PORT] (http:// only on loopback); not needed with a link.", valueName: "URL")) var server: String?
    @Option(name: .customLong("ca-file"), help: ArgumentHelp("PEM CA bundle to check the validator's certificate with.", valueName: "FILE")) var caFile: String?
    @Option(name: .customLong("pin-file"), help: ArgumentHelp("Read the new device PIN from the first line of FILE.", valueName: "FILE")) var pinFile: String?
    @Option(help: "A name for this device, shown to administrators (default: this machine's host name).") var name: String?

    func run() throws {
        let (code, server) = try Self.codeAndServer(code, server: server)
        let context = try Context(store)
        let opened = try context.open(create: true)
        let registration = try PushDevice.activate(store: opened, code: code, server: server, caFile: caFile,
                                                   name: name ?? ProcessInfo.processInfo.hostName, now: context.now) { policy in
            try PushPIN.new(file: pinFile, policy: policy)
        }
        print("Device \(registration.device) of \(TerminalText.quoted(registration.user)) is active at \(registration.server)"
              + (registration.pinPolicy.required ? "; approvals ask for its PIN." : "."))
    }

    /// From a link, its code and validator (--server, if given, must name the same one); from a
    /// bare code, --server.
    static func codeAndServer(_ argument: String, server: String?) throws(AuthenticatorError) -> (code: String, server: String) {
        if ActivationLink.isLink(argument) {
            let link = try ActivationLink(argument)
            return (link.code, try link.server(agreeingWith: server))
        }
        guard let server else {
            throw AuthenticatorError(.invalidInput, "give the validator with --server https://HOST[:PORT], or activate with the securotp-activate: link your administrator gave you")
        }
        return (argument, server)
    }
}

struct Pending: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the logins waiting for your approval.",
        discussion: """
        Each request shows who logs in where (user, host, service, remote address, tty, for sudo the command) and when it expires. The number to type is shown by the login, never here.

        Examples:
          securotp-authenticator pending
          securotp-authenticator pending --format json
        """
    )

    @OptionGroup var store: StoreOptions
    @Option(help: "text or json.") var format: OutputFormat = .text

    func run() throws {
        let context = try Context(store)
        let device = try PushDevice(store: try context.open())
        let requests = try device.pending()
        switch format {
        case .json:
            try PendingPushText.printJSON(requests.map(PendingPushText.json))
        case .text:
            if requests.isEmpty { print("No pending requests.") }
            for request in requests { print(PendingPushText.line(request, now: context.now)) }
        }
    }
}

struct Approve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Approve a login: type the number it shows.",
        discussion: """
        Signs the request (its context, the host's nonce and the NUMBER you type) with the device key. With a PIN policy the device PIN is checked first (--pin-file or the terminal); three wrong PINs block the device until an unlock code.

        Example:
          securotp-authenticator approve pr0123... --number 492817
        """
    )

    @OptionGroup var store: StoreOptions
    @Argument(help: "The request id (see pending).") var id: String
    @Option(help: "The six digits the login shows.") var number: String
    @Option(name: .customLong("pin-file"), help: ArgumentHelp("Read the device PIN from the first line of FILE.", valueName: "FILE")) var pinFile: String?

    func run() throws {
        let context = try Context(store)
        let device = try PushDevice(store: try context.open())
        let pin = try device.registration.pinPolicy.required && !device.registration.blocked ? PushPIN.current(file: pinFile) : nil
        let result = try device.approve(id: id, number: number, pin: pin)
        try report(result, verb: "approved")
    }
}

struct Respond: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Answer a login's offline challenge when this device cannot reach the validator.",
        discussion: """
        The login's prompt shows an offline challenge (8 digits, e.g. "offline challenge 1234 5678"). This prints the 8-digit response to type at that prompt; it needs no network. With a PIN policy the device PIN is checked first (--pin-file or the terminal); wrong PINs count towards the block as for approve. Devices activated before offline approval existed have no offline mode.

        Example:
          securotp-authenticator respond 12345678
        """
    )

    @OptionGroup var store: StoreOptions
    @Argument(help: "The 8-digit offline challenge the login shows (spaces allowed).") var challenge: [String]
    @Option(name: .customLong("pin-file"), help: ArgumentHelp("Read the device PIN from the first line of FILE.", valueName: "FILE")) var pinFile: String?

    func run() throws {
        let context = try Context(store)
        let device = try PushDevice(store: try context.open())
        let pin = try device.registration.pinPolicy.required && !device.registration.blocked ? PushPIN.current(file: pinFile) : nil
        print(try device.respond(challenge: challenge.joined(separator: " "), pin: pin))
    }
}

/// Prints the validator's verdict; anything but the expected state is an error exit.
func report(_ result: (state: String, reason: String?), verb: String) throws {
    let state = TerminalText.excerpt(result.state)
    let reason = result.reason.map { " (\(TerminalText.excerpt($0, maxScalars: 200)))" } ?? ""
    switch result.state {
    case "approved", "consumed", "denied":
        print("Request \(verb): \(state)\(reason).")
    default:
        throw CLIError(.answerNotTaken, "the validator did not take the answer: state \(state)\(reason)")
    }
}

struct Deny: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Deny a login; --fraud also blocks further pushes for you until an administrator clears it.",
        discussion: """
        Use --fraud when you did not try to log in: someone knows your password. It is audited.

        Examples:
          securotp-authenticator deny pr0123...
          securotp-authenticator deny pr0123... --fraud
        """
    )

    @OptionGroup var store: StoreOptions
    @Argument(help: "The request id (see pending).") var id: String
    @Flag(help: "I did not try to log in: block pushes for me and alert the administrators.") var fraud = false

    func run() throws {
        let context = try Context(store)
        let device = try PushDevice(store: try context.open())
        try report(try device.deny(id: id, fraud: fraud), verb: fraud ? "denied and reported" : "denied")
    }
}

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show each login request as it arrives, until interrupted (Ctrl-C).",
        discussion: """
        Long-polls the validator: a request shows as soon as it is made, without a polling interval. Answer it from another terminal with approve or deny. When the validator cannot be reached, watch waits 1, 2, 4 … 30 seconds before it asks again.
        """
    )

    @OptionGroup var store: StoreOptions

    func run() throws {
        let context = try Context(store)
        let device = try PushDevice(store: try context.open())
        signal(SIGINT, SIG_DFL) // Ctrl-C ends the process, whatever libcurl is doing
        print("Watching for requests to \(TerminalText.quoted(device.registration.user)) at \(device.registration.server) (Ctrl-C to stop).")
        fflush(nil)
        var shown = Set<String>()
        var backoff: UInt32 = 1
        while true {
            let requests: [PendingPush]
            let asked = Set(shown)
            let started = time(nil)
            switch Result(catching: { () throws(AuthenticatorError) -> [PendingPush] in try device.pending(wait: PushDevice.longPollSeconds, known: shown.sorted()) }) {
            case .success(let list):
                requests = list
            case .failure(let error):
                guard error.code == .unavailable else { throw error }
                standardError("securotp-authenticator: \(error.message); trying again in \(backoff)s\n")
                sleep(backoff)
                backoff = min(backoff * 2, 30)
                continue
            }
            backoff = 1
            let now = Int64(time(nil))
            for request in requests where !shown.contains(request.id) {
                shown.insert(request.id)
                print(PendingPushText.line(request, now: now))
                print("  approve: securotp-authenticator approve \(TerminalText.escaped(request.id)) --number NUMBER")
            }
            // Ids only matter while the request is pending: forget the answered ones.
            for ended in shown.subtracting(requests.map(\.id)).sorted() {
                print("  \(TerminalText.escaped(ended)) is no longer pending (answered, cancelled or expired)")
            }
            shown.formIntersection(requests.map(\.id))
            fflush(nil)
            // The next wait holds while the shown requests stay pending (`known`), so an
            // answer, a cancel or an expiry shows at once, without a polling interval.
            // A validator older than `known` answers at once while one is pending: no tight loop then.
            if !asked.isEmpty, asked == shown, time(nil) - started < 1 { sleep(1) }
        }
    }
}

struct Unlock: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Unblock this device with an unlock code from your administrator and set a new PIN.",
        discussion: """
        The administrator makes the single-use code with: securotp device unlock-code USER DEVICE.

        Example:
          securotp-authenticator unlock ABCD-EFGH-JKMN-PQRS
        """
    )

    @OptionGroup var store: StoreOptions
    @Argument(help: "The unlock code.") var code: String
    @Option(name: .customLong("pin-file"), help: ArgumentHelp("Read the new device PIN from the first line of FILE.", valueName: "FILE")) var pinFile: String?

    func run() throws {
        let context = try Context(store)
        let device = try PushDevice(store: try context.open())
        try device.unlock(code: code) { policy in try PushPIN.new(file: pinFile, policy: policy) }
        print("Device \(device.registration.device) is unblocked" + (device.registration.pinPolicy.required ? " with its new PIN." : "."))
    }
}

struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Deregister this push device at the validator and forget its key.",
        discussion: "Your OTP tokens stay. To approve logins again, activate with a new code."
    )

    @OptionGroup var store: StoreOptions

    func run() throws {
        let context = try Context(store)
        let device = try PushDevice(store: try context.open())
        let known = try device.remove()
        print("Device \(device.registration.device) removed" + (known ? "." : " here (the validator no longer knew it)."))
    }
}
