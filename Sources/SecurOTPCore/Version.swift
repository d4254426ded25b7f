/// The securotp release these libraries belong to. The one place the version is written:
/// every binary that reports a version (securotp-authenticator version) prints this.
public enum SecurOTPVersion {
    public static let string = "0.3.0"
}
