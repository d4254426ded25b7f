#!/usr/bin/env python3
"""A phone's passkey as the page uses it (docs/push.md "Phones without an app"), written apart
from the validator's Swift code as an independent client: Python's `cryptography` holds the
P-256 key; this file builds the attestation object (fmt none), the client data and the
assertions, and computes the push statement itself.

  web_passkey.py enroll SERVER CODE STATE           registers a new passkey, writes STATE
  web_passkey.py approve SERVER STATE NUMBER [--origin O] [--foreign-key]
                                                    signs in, approves the first pending request
"""
import base64, hashlib, json, os, struct, sys, urllib.error, urllib.request
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

ORIGIN = "http://localhost:8080"
RP_ID = "localhost"


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def call(server, path, body, bearer=None):
    headers = {"Content-Type": "application/json", "Origin": ORIGIN}
    if bearer:
        headers["Authorization"] = "Bearer " + bearer
    request = urllib.request.Request(server + path, data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def cbor_head(major, length):
    if length < 24:
        return bytes([major << 5 | length])
    if length < 256:
        return bytes([major << 5 | 24, length])
    return bytes([major << 5 | 25]) + struct.pack(">H", length)


def cbor_text(text):
    return cbor_head(3, len(text.encode())) + text.encode()


def enroll(server, code, state):
    key = ec.generate_private_key(ec.SECP256R1())
    status, options = call(server, "/v1/web/enroll/options", {"activation_code": code})
    assert status == 200, (status, options)
    numbers = key.public_key().public_numbers()
    cose = (bytes([0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]) + numbers.x.to_bytes(32, "big")
            + bytes([0x22, 0x58, 0x20]) + numbers.y.to_bytes(32, "big"))
    credential_id = os.urandom(32)
    auth_data = (hashlib.sha256(RP_ID.encode()).digest() + bytes([0x45, 0, 0, 0, 0]) + bytes(16)
                 + struct.pack(">H", len(credential_id)) + credential_id + cose)
    attestation = (cbor_head(5, 3) + cbor_text("fmt") + cbor_text("none") + cbor_text("attStmt") + cbor_head(5, 0)
                   + cbor_text("authData") + cbor_head(2, len(auth_data)) + auth_data)
    client_data = json.dumps({"type": "webauthn.create", "challenge": options["challenge"], "origin": ORIGIN,
                              "crossOrigin": False}).encode()
    status, enrolled = call(server, "/v1/web/enroll", {"activation_code": code, "credential_id": b64(credential_id),
                                                      "client_data_json": b64(client_data), "attestation_object": b64(attestation)})
    assert status == 200 and enrolled["state"] == "active", (status, enrolled)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    with open(state, "w") as out:
        json.dump({"device": enrolled["device"], "credential_id": b64(credential_id), "key": pem.decode()}, out)
    print("enrolled", enrolled["device"])


def assertion(key, challenge, origin, counter):
    auth_data = hashlib.sha256(RP_ID.encode()).digest() + bytes([0x05]) + struct.pack(">I", counter)
    client_data = json.dumps({"type": "webauthn.get", "challenge": b64(challenge), "origin": origin}).encode()
    signature = key.sign(auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
    return {"authenticator_data": b64(auth_data), "client_data_json": b64(client_data), "signature": b64(signature)}


def statement(request, number, device):
    fields = [request["id"], request["user"], request["host"], request.get("service", ""), request.get("remote_address", ""),
              request.get("tty", ""), request.get("command", ""), request["nonce"], number, str(request["expires"]), device]
    out = b"securotp-push-v1"
    for field in fields:
        data = field.encode()
        out += struct.pack(">I", len(data)) + data
    return out


def approve(server, state, number, origin=ORIGIN, foreign=False):
    with open(state) as saved:
        device = json.load(saved)
    key = serialization.load_pem_private_key(device["key"].encode(), None)
    status, options = call(server, "/v1/web/session/options", {})
    assert status == 200, (status, options)
    body = assertion(key, unb64(options["challenge"]), ORIGIN, 0)  # phones keep no counter
    body["credential_id"] = device["credential_id"]
    status, session = call(server, "/v1/web/session", body)
    assert status == 200, (status, session)
    status, listed = call(server, "/v1/device/requests", {"wait": 10}, session["session"])
    assert status == 200 and listed["requests"], (status, listed)
    request = listed["requests"][0]
    signer = ec.generate_private_key(ec.SECP256R1()) if foreign else key
    answer = assertion(signer, hashlib.sha256(statement(request, number, device["device"])).digest(), origin, 0)
    answer.update({"id": request["id"], "decision": "approve", "number": number})
    status, result = call(server, "/v1/device/answer", answer, session["session"])
    print("answer", status, json.dumps(result))


if __name__ == "__main__":
    if sys.argv[1] == "enroll":
        enroll(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        arguments = sys.argv[5:]
        origin = arguments[arguments.index("--origin") + 1] if "--origin" in arguments else ORIGIN
        approve(sys.argv[2], sys.argv[3], sys.argv[4], origin, "--foreign-key" in arguments)
