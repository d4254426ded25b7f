import Hummingbird
import SecurOTPCore

extension APIPath {
    /// The path as the router is given it, relative to the group it is registered in (`/v1`
    /// for the API's groups, `` at the router's root), with `{name}` written `:name`.
    func route(in group: String = "/v1") -> RouterPath {
        precondition(template.hasPrefix(group + "/"), "\(template) is not under \(group)")
        let relative = template.dropFirst(group.count + 1).split(separator: "/").map { part in
            part.hasPrefix("{") && part.hasSuffix("}") ? ":" + part.dropFirst().dropLast() : String(part)
        }
        return RouterPath(relative.joined(separator: "/"))
    }
}
