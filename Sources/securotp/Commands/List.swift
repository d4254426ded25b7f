import ArgumentParser
import SecurOTPStore

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show tokens of one user, or of all users.",
        discussion: "Example: securotp list alice --format json"
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "Only this user's tokens.")
    var user: String?

    @Option(help: "text or json.")
    var format: OutputFormat = .text

    func run() throws {
        let store = try CommandContext(global).openStore()
        let now = CommandContext.now()
        let tokens = try store.tokens(user: user)
        let locked = Set(try store.lockedUsers(now: now))
        switch format {
        case .json:
            print(JSONValue.array(tokens.map { record in
                var object = Formatting.json(record)
                if case .object(var members) = object {
                    members.append(("user_locked", .bool(locked.contains(record.user))))
                    object = .object(members)
                }
                return object
            }).rendered)
        case .text:
            if tokens.isEmpty {
                print(user.map { "\($0) has no tokens. Enroll one with: securotp enroll \($0)" } ?? "No tokens enrolled. Enroll one with: securotp enroll USER")
                return
            }
            var header = ["SERIAL", "NICKNAME", "KIND", "ALGORITHM", "DIGITS", "PERIOD", "PIN", "STATE", "EXPIRES", "CREATED", "LAST USED"]
            if user == nil { header.insert("USER", at: 0) }
            let rows = tokens.map { record -> [String] in
                let p = record.parameters
                var row = [record.serial, record.nickname.isEmpty ? "-" : record.nickname, record.kind.rawValue,
                           record.kind == .securid ? "AES-128" : p.algorithm.name,
                           String(p.digits), record.kind == .hotp ? "-" : record.kind == .ocra ? record.suite : "\(p.period)s", Formatting.pin(record),
                           locked.contains(record.user) ? "locked" : (record.isExpired(at: now) ? "expired" : record.state),
                           record.expires > 0 ? Formatting.time(record.expires) : "never",
                           Formatting.time(record.created), Formatting.time(record.lastUsed)]
                if user == nil { row.insert(record.user, at: 0) }
                return row
            }
            print(Formatting.table(header, rows))
        }
    }
}
