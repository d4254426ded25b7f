enum SecurOTPStorePlaceholder {}
