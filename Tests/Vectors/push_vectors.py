#!/usr/bin/env python3
"""Writes push.json: push approvals (docs/push.md) made by an independent implementation,
PyPI `cryptography` (OpenSSL through its own bindings) plus Python's hashlib/json/base64.

Each case is signed over its own content with a real key, so only the check the case names
can refuse it. Run: python3 Tests/Vectors/push_vectors.py > Tests/Vectors/push.json
(new keys each run; the Swift tests read whatever the file holds)."""
import base64, hashlib, json, struct
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

def b64url(b): return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
def b64(b): return base64.b64encode(b).decode()
def field(x): u = x.encode("utf-8"); return struct.pack(">I", len(u)) + u
def sha256(b): return hashlib.sha256(b).digest()
def spki(key): return key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
def sign(key, message): return key.sign(message, ec.ECDSA(hashes.SHA256()))

FIELDS = ["id", "user", "host", "service", "remote_address", "tty", "command", "nonce", "number", "expires", "device"]
def statement(s): return b"securotp-push-v1" + b"".join(field(s[k]) for k in FIELDS)
def auth_data(rp_id, flags, counter): return sha256(rp_id.encode()) + bytes([flags]) + struct.pack(">I", counter)
def client_data(typ, challenge, origin):  # the authenticator's exact text (keys in contract order)
    return ('{"type":"%s","challenge":"%s","origin":"%s"}' % (typ, b64url(challenge), origin)).encode()

device_key = ec.generate_private_key(ec.SECP256R1())
other_key = ec.generate_private_key(ec.SECP256R1())
ca_key = ec.generate_private_key(ec.SECP256R1())
ctx = {"id": "pr" + "0123456789abcdef" * 2, "user": "alice", "host": "web-1", "service": "sshd",
       "remote_address": "192.0.2.7", "tty": "", "command": "sudo ls /root — ünïcode", "nonce": b64url(bytes(range(32))),
       "number": "492817", "expires": "1790000000", "device": "dv0123456789abcdef"}
good_statement = statement(ctx)
challenge = sha256(good_statement)
wrong_number = dict(ctx, number="492818")

def case(name, expect, *, key=device_key, rp_id="securotp-push", flags=0x05, counter=7, cdj=None,
         require_uv=True, public_key=None, signature=None, ad=None, uv=True):
    ad = ad if ad is not None else auth_data(rp_id, flags, counter)
    cdj = cdj if cdj is not None else client_data("securotp.push.approve", challenge, "securotp:push")
    sig = signature if signature is not None else sign(key, ad + sha256(cdj))
    return {"name": name, "expect": expect, "counter": counter, "user_verified": bool(flags & 4),
            "require_uv": require_uv, "authenticator_data": b64url(ad), "client_data_json": b64url(cdj),
            "signature": b64url(sig), "public_key": b64url(public_key if public_key is not None else spki(device_key))}

ok_ad = auth_data("securotp-push", 0x05, 7)
ok_cdj = client_data("securotp.push.approve", challenge, "securotp:push")
ok_sig = sign(device_key, ok_ad + sha256(ok_cdj))
r, s = decode_dss_signature(ok_sig)
def der_int(v, pad=0):
    b = v.to_bytes((v.bit_length() + 8) // 8, "big")
    b = b"\x00" * pad + b
    return b"\x02" + bytes([len(b)]) + b
def der_sig(r_, s_): body = der_int(r_, 1) + der_int(s_); return b"\x30" + bytes([len(body)]) + body
compressed = ec.EllipticCurvePublicKey.public_bytes  # noqa (documentation only)
compressed_spki = bytes.fromhex("3039301306072a8648ce3d020106082a8648ce3d030107032200") + \
    device_key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint)

cases = [
    case("accepted with UV", "accepted"),
    case("accepted without UV when not required", "accepted", flags=0x01, require_uv=False, counter=0),
    case("accepted: client data in another key order with extra members", "accepted", counter=4294967295,
         cdj=json.dumps({"origin": "securotp:push", "crossOrigin": False, "challenge": b64url(challenge),
                         "type": "securotp.push.approve", "other_keys_can_be_added_here": "x"}, indent=1).encode()),
    case("UV required but not set", "not_verified", flags=0x01),
    case("UP not set", "not_present", flags=0x04),
    case("RP id hash of another RP", "wrong_rp_id", rp_id="example.com"),
    case("type webauthn.get", "wrong_type", cdj=client_data("webauthn.get", challenge, "securotp:push")),
    case("another origin", "wrong_origin", cdj=client_data("securotp.push.approve", challenge, "https://evil.example")),
    case("challenge of a wrong number", "wrong_challenge",
         cdj=client_data("securotp.push.approve", sha256(statement(wrong_number)), "securotp:push")),
    case("challenge of another request", "wrong_challenge",
         cdj=client_data("securotp.push.approve", sha256(statement(dict(ctx, id="pr" + "f" * 32))), "securotp:push")),
    case("client data not JSON", "bad_client_data", cdj=b'{"type":"securotp.push.approve",'),
    case("client data challenge padded base64", "bad_client_data",
         cdj=('{"type":"securotp.push.approve","challenge":"%s=","origin":"securotp:push"}' % b64url(challenge)).encode()),
    case("client data says crossOrigin", "bad_client_data",
         cdj=json.dumps({"type": "securotp.push.approve", "challenge": b64url(challenge), "origin": "securotp:push",
                         "crossOrigin": True}).encode()),
    case("client data without origin", "bad_client_data",
         cdj=json.dumps({"type": "securotp.push.approve", "challenge": b64url(challenge)}).encode()),
    case("signed by another key", "bad_signature", key=other_key),
    case("signature over other authenticator data", "bad_signature", signature=sign(device_key, auth_data("securotp-push", 0x05, 8) + sha256(ok_cdj))),
    case("signature in non-canonical DER", "bad_signature", signature=der_sig(r, s)),
    case("authenticator data 36 bytes", "malformed", ad=ok_ad[:36]),
    case("authenticator data with an extension byte", "malformed", ad=ok_ad + b"\xa0"),
    case("empty signature", "malformed", signature=b""),
    case("public key with a compressed point", "bad_public_key", public_key=compressed_spki),
]

def certificate(user, device, key):
    message = b"securotp-device-cert-v1" + field(user) + field(device) + field(b64(spki(key)))
    return b64(sign(ca_key, message))

ca_pem = ca_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
print(json.dumps({
    "source": "Tests/Vectors/push_vectors.py: PyPI cryptography %s, hashlib, json, base64" % __import__("cryptography").__version__,
    "context": ctx,
    "statement_hex": good_statement.hex(),
    "challenge_hex": challenge.hex(),
    "authenticator_client_data_json": ok_cdj.decode(),
    "authenticator_data_hex": ok_ad.hex(),
    "cases": cases,
    "certificates": {
        "ca_public_key_pem": ca_pem,
        "public_key": b64url(spki(device_key)),
        "user": "alice", "device": "dv0123456789abcdef",
        "cases": [
            {"name": "certified", "certificate": certificate("alice", "dv0123456789abcdef", device_key), "valid": True},
            {"name": "certified for another user", "certificate": certificate("bob", "dv0123456789abcdef", device_key), "valid": False},
            {"name": "certified for another device", "certificate": certificate("alice", "dv0123456789abcdee", device_key), "valid": False},
            {"name": "another key certified", "certificate": certificate("alice", "dv0123456789abcdef", other_key), "valid": False},
            {"name": "signed by the device, not the CA", "certificate": b64(sign(device_key, b"securotp-device-cert-v1" + field("alice") + field("dv0123456789abcdef") + field(b64(spki(device_key))))), "valid": False},
            {"name": "not base64", "certificate": "not base64!", "valid": False},
        ],
    },
}, indent=1, ensure_ascii=False))
