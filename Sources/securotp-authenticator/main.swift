print("securotp-authenticator")
