#!/usr/bin/env python3
"""Writes offline.json: offline approval challenges and responses (docs/push.md, "Offline
approval") made by an independent implementation, Python's hashlib/hmac/struct only (OCRA
written here from RFC 6287, not SecurOTPCore's).

Run: python3 Tests/Vectors/offline_vectors.py > Tests/Vectors/offline.json (deterministic)."""
import base64, hashlib, hmac, json, struct

def b64url(b): return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
def field(x): u = x.encode("utf-8"); return struct.pack(">I", len(u)) + u

FIELDS = ["id", "user", "host", "service", "remote_address", "tty", "command", "nonce", "number", "expires"]
SUITE = "OCRA-1:HOTP-SHA256-8:QN08"

def challenge(ctx):
    data = b"securotp-offline-v1" + b"".join(field(ctx[k]) for k in FIELDS) + field("")
    return "%08d" % (struct.unpack(">Q", hashlib.sha256(data).digest()[:8])[0] % 10**8)

def ocra_response(key, question):
    # RFC 6287 §5: suite || 0x00 || Q; numeric Q as hex digits left-aligned in 128 bytes.
    hexq = "%X" % int(question)
    if len(hexq) % 2: hexq += "0"
    block = bytes.fromhex(hexq).ljust(128, b"\0")
    mac = hmac.new(key, SUITE.encode() + b"\0" + block, hashlib.sha256).digest()
    offset = mac[-1] & 0x0F
    return "%08d" % ((struct.unpack(">I", mac[offset:offset + 4])[0] & 0x7FFFFFFF) % 10**8)

base = {"id": "pr" + "0123456789abcdef" * 2, "user": "alice", "host": "web-1", "service": "sshd",
        "remote_address": "192.0.2.7", "tty": "", "command": "sudo ls /root — ünïcode",
        "nonce": b64url(bytes(range(32))), "number": "492817", "expires": "1790000000"}
variants = [("base", {}), ("another number", {"number": "492818"}), ("another nonce", {"nonce": b64url(bytes(range(1, 33)))}),
            ("another host", {"host": "web-2"}), ("another command", {"command": "sudo ls /root"}),
            ("another request id", {"id": "pr" + "f" * 32}), ("empty fields", {"service": "", "remote_address": "", "command": ""}),
            ("another expiry", {"expires": "1790000001"})]
secrets = [bytes(range(32)), hashlib.sha256(b"securotp offline vector").digest()]
cases = []
for name, change in variants:
    ctx = dict(base, **change)
    q = challenge(ctx)
    cases.append({"name": name, "context": ctx, "challenge": q,
                  "responses": [{"secret": b64url(k), "response": ocra_response(k, q)} for k in secrets]})
# Challenges with leading zeros and odd hex lengths exercise the OCRA encoding.
extra = [{"challenge": q, "secret": b64url(secrets[1]), "response": ocra_response(secrets[1], q)}
         for q in ["00000000", "00000001", "09999999", "12345678", "99999999"]]
print(json.dumps({"suite": SUITE, "cases": cases, "responses": extra}, indent=1, ensure_ascii=False))
