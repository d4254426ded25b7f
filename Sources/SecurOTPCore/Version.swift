/// The securotp release these libraries belong to (CLI, daemon, authenticator and the API's
/// health answer report it).
public enum SecurOTPVersion {
    public static let string = "0.4.0"
}
