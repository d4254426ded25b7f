print("securotp")
