/// The securotp release these libraries belong to. The one place the version is written:
/// every binary that reports a version (securotp --version, securotpd --version,
/// securotp-authenticator version, the API's /v1/health) prints this.
public enum SecurOTPVersion {
    public static let string = "0.4.0"
}
