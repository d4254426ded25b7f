enum SecurOTPAuthPlaceholder {}
