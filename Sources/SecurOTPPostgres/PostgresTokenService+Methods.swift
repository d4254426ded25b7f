import PostgresNIO
import SecurOTPCore
import SecurOTPService
import SecurOTPStore

/// Login methods per user and per group (`securotp policy`, docs/configuration.md "Login
/// methods"), kept in `method_policies` as in the SQLite store.
extension PostgresTokenService {
    public func loginMethods(user: String, caller: Caller) async throws(ServiceError) -> LoginMethods? {
        let user = try RequestRules.user(user)
        let global = settings.methods
        let own: LoginMethods? = try await run("reading the login methods of \(user)") { connection in
            for try await (text) in try await connection.query("SELECT methods FROM method_policies WHERE subject = \(user)",
                                                              logger: self.logger).decode(String.self) {
                // A row that no longer parses (a newer securotp's) fails closed.
                guard let methods = LoginMethods(parsing: text) else {
                    throw ServiceError(.database, "method policy of \(TerminalText.quoted(user)) is unreadable (\(TerminalText.quoted(text))); set it again with securotp policy")
                }
                return methods
            }
            return nil
        }
        // The user's own policy, else `methods=`, else the standard order (group policies are
        // the host's: group names are its NSS').
        return LoginMethods.resolve(user: own, groups: [], global: global)
    }
}
