// Everything that opens the store decides with the engine: importing SecurOTPStore brings it.
@_exported import SecurOTPEngine
