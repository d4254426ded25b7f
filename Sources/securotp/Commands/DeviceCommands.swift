import ArgumentParser
import Foundation
import SecurOTPCommandLine
import SecurOTPCore
import SecurOTPQR
import SecurOTPService
import SecurOTPStore

/// `securotp device …`: push-approval devices (docs/push.md). An admin adds a pending device
/// and hands its single-use activation code to the user, whose securotp-authenticator
/// registers its key with it.
struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "Manage the devices users approve logins on (push approval).",
        discussion: """
        Examples:
          securotp device add alice --name laptop --validator https://otp.example.com:8443
          securotp-authenticator activate ABCD-EFGH-JKMN-PQRS --server https://otp.example.com:8443   # on alice's device
          securotp device list alice
          securotp device unlock-code alice dv0123456789abcdef   # after three wrong device PINs
          securotp device certify alice dv0123456789abcdef --ca-key /root/device-ca.pem
          securotp device unblock-push alice                     # after alice reported a push as fraud
          securotp device remove alice dv0123456789abcdef
        """,
        subcommands: [Add.self, ListDevices.self, Remove.self, UnlockCode.self, Certify.self, UnblockPush.self]
    )

    /// The service as a DeviceService: the SQLite store, PostgreSQL (--database) and a remote
    /// validator (--server) all serve devices; the cast fails only for a backend without push.
    static func withDevices<R>(_ context: CommandContext, create: Bool = false, _ body: (any DeviceService) async throws -> R) async throws -> R {
        try await context.withService(create: create) { service in
            guard let devices = service as? any DeviceService else {
                throw ServiceError(.notSupported, "this store does not keep push devices; use the SQLite store (--state-dir), PostgreSQL (--database) or a validator (--server)")
            }
            return try await body(devices)
        }
    }

    struct Add: ContextCommand {
        static let configuration = CommandConfiguration(abstract: "Add a pending device and print its single-use activation code (and a QR code of it).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The user who will approve logins on the device.") var user: String
        @Option(help: "A name for the device (shown in lists).") var name: String?
        @Option(help: ArgumentHelp("The validator's URL for the device, put in the QR code (default: --server).", valueName: "URL"))
        var validator: String?
        @Flag(help: "A passkey in the phone's browser, no app: print the validator's enrollment link (its public_url).") var web = false
        @Flag(name: .customLong("no-qr"), help: "Do not print the QR code.") var noQR = false
        @Option(help: "text or json.") var format: OutputFormat = .text

        func run(in context: CommandContext) async throws {
            let user = CommandContext.canonical(self.user)
            let added = try await DeviceCommand.withDevices(context, create: true) { devices in
                try await devices.addDevice(user: user, DeviceAddRequest(name: name, web: web ? true : nil), caller: context.caller)
            }
            if web { return try printWeb(added, context) }
            var server = validator
            if server == nil, case .remote(let url, _, _, _, _) = context.target { server = url }
            let link = server.map { "securotp-activate:\($0)?code=\(added.activationCode)" }
            switch format {
            case .json:
                context.print(JSONOutput.object([("device", .string(added.device)), ("user", .string(added.user)),
                                                ("activation_code", .string(added.activationCode)), ("expires", Formatting.isoTime(added.expires)),
                                                ("expires_unix", .number(added.expires)), ("activation_link", link.map { .string($0) } ?? .null)]).rendered)
            case .text:
                context.print("Added device \(added.device) for \(added.user) (pending until activated).\n")
                context.print("Activation code: \(added.activationCode)   (single use, until \(Formatting.time(added.expires)))")
                if let link {
                    if !noQR, let qr = try? QRCode.encode(Array(link.utf8), errorCorrection: .medium) {
                        context.print("\nScan it on the device, or type the code:\n")
                        context.print(qr.terminalString(quietZone: 2, invert: true))
                    }
                    context.print("Link: \(link)")
                    context.print("\nOn the device: securotp-authenticator activate \(added.activationCode) --server \(server ?? "")")
                } else {
                    context.print("\nOn the device: securotp-authenticator activate \(added.activationCode) --server https://VALIDATOR:8443")
                    context.print("(Give --validator URL to print a QR code with the validator's address.)")
                }
            }
        }

        /// `--web`: the link the phone opens (docs/push.md "Phones without an app"); the code rides
        /// in its fragment.
        private func printWeb(_ added: DeviceAdded, _ context: CommandContext) throws {
            guard let url = added.activationUrl else { throw PublicURL.unset }
            switch format {
            case .json:
                context.print(JSONOutput.object([("device", .string(added.device)), ("user", .string(added.user)), ("url", .string(url)),
                                                ("expires", Formatting.isoTime(added.expires)), ("expires_unix", .number(added.expires)),
                                                ("activation_code", .string(added.activationCode))]).rendered)
            case .text:
                context.print("Added device \(added.device) for \(added.user) (pending until the phone registers its passkey).\n")
                if !noQR, let qr = try? QRCode.encode(Array(url.utf8), errorCorrection: .medium) {
                    context.print("Open this on the phone (scan it), single use, until \(Formatting.time(added.expires)):\n")
                    context.print(qr.terminalString(quietZone: 2, invert: true))
                }
                context.print("Link: \(url)")
            }
        }
    }

    struct ListDevices: ContextCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "Show the devices of one user, or of all users.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Only this user's devices.") var user: String?
        @Option(help: "text or json.") var format: OutputFormat = .text

        func run(in context: CommandContext) async throws {
            let list = try await DeviceCommand.withDevices(context) { devices in
                try await devices.devices(user: user.map(CommandContext.canonical), caller: context.caller)
            }.devices
            switch format {
            case .json:
                context.print(JSONOutput.array(list.map { device in
                    .object([("device", .string(device.device)), ("user", .string(device.user)), ("name", .string(device.name)),
                             ("aaid", .string(device.aaid)), ("state", .string(device.state)), ("certified", .bool(device.certified)),
                             ("user_verification", .bool(device.userVerification)), ("public_key", device.publicKey.map { .string($0) } ?? .null),
                             ("created", Formatting.isoTime(device.created)), ("last_used", Formatting.isoTime(device.lastUsed))])
                }).rendered)
            case .text:
                if list.isEmpty {
                    context.print(user.map { "\($0) has no devices. Add one with: securotp device add \($0)" } ?? "No devices. Add one with: securotp device add USER")
                    return
                }
                let rows = list.map { device in
                    [device.user, device.device, TerminalText.escaped(device.name.isEmpty ? "-" : device.name), device.aaid.isEmpty ? "-" : device.aaid,
                     device.state, device.certified ? "yes" : "no", Formatting.time(device.created), Formatting.time(device.lastUsed)]
                }
                context.print(Formatting.table(["USER", "DEVICE", "NAME", "KIND", "STATE", "CERTIFIED", "CREATED", "LAST USED"], rows))
            }
        }
    }

    struct Remove: ContextCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a device; it can no longer approve logins.")
        @OptionGroup var global: GlobalOptions
        @Argument var user: String
        @Argument(help: "The device id (dv…), from securotp device list.") var device: String

        func run(in context: CommandContext) async throws {
            try await DeviceCommand.withDevices(context) { devices in
                try await devices.removeDevice(user: CommandContext.canonical(user), device: device, caller: context.caller)
            }
            context.print("Removed device \(device) of \(user).")
        }
    }

    struct UnlockCode: ContextCommand {
        static let configuration = CommandConfiguration(commandName: "unlock-code",
                                                        abstract: "Issue a single-use code that unblocks a device blocked after wrong PINs.")
        @OptionGroup var global: GlobalOptions
        @Argument var user: String
        @Argument var device: String
        @Option(help: "text or json.") var format: OutputFormat = .text

        func run(in context: CommandContext) async throws {
            let code = try await DeviceCommand.withDevices(context) { devices in
                try await devices.unlockCode(user: CommandContext.canonical(user), device: device, caller: context.caller)
            }
            switch format {
            case .json:
                context.print(JSONOutput.object([("device", .string(device)), ("unlock_code", .string(code.unlockCode)),
                                                ("expires", Formatting.isoTime(code.expires))]).rendered)
            case .text:
                context.print("Unlock code for \(device): \(code.unlockCode)   (single use, until \(Formatting.time(code.expires)))")
                context.print("On the device: securotp-authenticator unlock \(code.unlockCode)")
            }
        }
    }

    struct Certify: ContextCommand {
        static let configuration = CommandConfiguration(
            abstract: "Certify a device's key with the admin's CA key, for hosts with device_ca= (docs/push.md).",
            discussion: """
            The CA key is a PEM P-256 private key on the admin's machine; it never goes to the validator. Make one with: \
            openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out device-ca.pem

            The certificate expires after --days (default 365): hosts refuse it from then on; certify the device again before. \
            To refuse a device's certificate sooner (a device removed, lost or stolen), list its id in the device_revoked= file \
            of every host with device_ca= (docs/push.md, "Device certificates").
            """)
        @OptionGroup var global: GlobalOptions
        @Argument var user: String
        @Argument var device: String
        @Option(name: .customLong("ca-key"), help: ArgumentHelp("PEM P-256 private key (owner-only file).", valueName: "FILE")) var caKey: String
        @Option(help: ArgumentHelp("Days until the certificate expires (1–3650).", valueName: "DAYS")) var days = 365

        static let daysRange = 1...3650

        func validate() throws {
            guard Self.daysRange.contains(days) else { throw ValidationError("--days must be \(Self.daysRange.lowerBound)–\(Self.daysRange.upperBound)") }
        }

        func run(in context: CommandContext) async throws {
            let user = CommandContext.canonical(user)
            let expires = context.clock() + Int64(days) * 86_400
            let pem: [UInt8]
            do throws(StoreError) { pem = try FileSecurity.contents(of: caKey, .secret, maxSize: 64 * 1024) } catch { throw ServiceError(error) }
            try await DeviceCommand.withDevices(context) { devices in
                let listed = try await devices.devices(user: user, caller: context.caller).devices
                guard let row = listed.first(where: { $0.device == device }) else {
                    throw ServiceError(.notFound, "\(user) has no device \(device); see: securotp device list \(user)")
                }
                guard let keyText = row.publicKey, let key = PushRules.base64URLDecode(keyText) else {
                    throw ServiceError(.invalidInput, "device \(device) is not activated yet: certify it after securotp-authenticator activate")
                }
                let message = PushRules.certificateMessage(user: user, device: device, publicKey: key, expires: expires)
                guard let signature = PushRules.sign(message, privateKeyPEM: String(decoding: pem, as: UTF8.self)) else {
                    throw ServiceError(.invalidInput, "\(caKey) is not a PEM P-256 private key")
                }
                try await devices.setCertificate(user: user, device: device,
                                                 DeviceCertificateRequest(certificate: DeviceCertificate.text(signature: signature, expires: expires)),
                                                 caller: context.caller)
            }
            context.print("Certified device \(device) of \(user) until \(Formatting.time(expires)). Hosts with device_ca= accept its approvals until then.")
        }
    }

    struct UnblockPush: ContextCommand {
        static let configuration = CommandConfiguration(commandName: "unblock-push",
                                                        abstract: "Allow push approval again for a user who reported a push as fraud (deny --fraud).")
        @OptionGroup var global: GlobalOptions
        @Argument var user: String

        func run(in context: CommandContext) async throws {
            let user = CommandContext.canonical(user)
            let result = try await DeviceCommand.withDevices(context) { devices in try await devices.unblockPush(user: user, caller: context.caller) }
            context.print(result.wasBlocked ? "Push approval is allowed again for \(user)." : "Push approval was not blocked for \(user); the requests counted against push_limit are cleared.")
        }
    }
}
