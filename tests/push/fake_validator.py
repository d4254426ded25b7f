#!/usr/bin/python3
"""A stand-in validator for push approval tests, written from docs/push.md alone.

It serves the host side of the contract (preflight, verify, push, push/wait, push/result,
push/cancel) over plain HTTP on 127.0.0.1 and plays the user's device itself: it holds an
ES256 device key (and, for device_ca= tests, an admin CA key) made with the `cryptography`
package, and signs the statement docs/push.md defines — independently of the Swift code
under test. Tests drive the device through a control route, usually from a pam-check
"!command" response that reads the number from the prompt as a user would:

    fake_validator.py serve --port-file F --log F --ca-public F [--lifetime S] [--certificate valid|v1|expired|none|other-ca]
                            [--push yes|no] [--push-refusal CODE] [--code 123456] [--approval-state approved|consumed]
                            [--offline-secret HEX] [--methods push,otp]
    fake_validator.py device URL approve|deny|expire|none|wrong|fail [--wrong-number] [--replay] [--no-uv] [--delay S]
        (wrong: the validator counts a wrong number and keeps the request; fail: it fails the
        request with --fail-reason)
        (reads the number from $PAM_CHECK_PROMPT; prints an empty line: the user's Enter)
    fake_validator.py device URL respond --secret HEX
        (offline approval: reads the offline challenge from $PAM_CHECK_PROMPT, prints the response)

With --offline-secret HEX the user's device has offline mode (docs/push.md, "Offline approval"):
the push answer says `offline: true`, and /v1/verify with push_id takes the request's response
once (challenge and OCRA written here from the contract, with hashlib/hmac).

It can also misbehave the ways a compromised or buggy validator might: relay a signature over
another number (--wrong-number), hand an earlier login's approval to a new request
(--replay), or certify the device with another CA (--certificate other-ca).
"""
import argparse
import base64
import hashlib
import hmac
import http.server
import json
import os
import re
import secrets
import struct
import sys
import threading
import time
import urllib.request

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

HOST_NAME = "web-01"
DEVICE_ID = "dv" + "0123456789abcdef"
AAID = "FFFF#0001"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def field(value):
    data = value.encode("utf-8")
    return struct.pack(">I", len(data)) + data


def statement(request, number, device):
    values = [request["id"], request["user"], request["host"], request["service"], request["remote_address"],
              request["tty"], request["command"], request["nonce"], number, str(request["expires"]), device]
    return b"securotp-push-v1" + b"".join(field(v) for v in values)


OFFLINE_FIELDS = ["id", "user", "host", "service", "remote_address", "tty", "command", "nonce", "number", "expires"]
OFFLINE_SUITE = "OCRA-1:HOTP-SHA256-8:QN08"


def offline_challenge(request):
    data = b"securotp-offline-v1" + b"".join(field(str(request[k])) for k in OFFLINE_FIELDS) + field("")
    return "%08d" % (struct.unpack(">Q", hashlib.sha256(data).digest()[:8])[0] % 10**8)


def offline_response(secret, challenge):
    hexq = "%X" % int(challenge)
    if len(hexq) % 2:
        hexq += "0"
    mac = hmac.new(secret, OFFLINE_SUITE.encode() + b"\0" + bytes.fromhex(hexq).ljust(128, b"\0"), hashlib.sha256).digest()
    offset = mac[-1] & 0x0F
    return "%08d" % ((struct.unpack(">I", mac[offset:offset + 4])[0] & 0x7FFFFFFF) % 10**8)


def spki(key):
    return key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


class Validator:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Condition()
        self.requests = {}
        self.latest = None
        self.handed_out = []  # approvals already given to a host, for --replay
        self.counter = 0
        self.device_key = ec.generate_private_key(ec.SECP256R1())
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        other_ca = ec.generate_private_key(ec.SECP256R1())
        with open(args.ca_public, "wb") as out:
            out.write(self.ca_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        self.certifier = {"valid": self.ca_key, "v1": self.ca_key, "expired": self.ca_key, "other-ca": other_ca,
                          "none": None}[args.certificate]

    def certificate(self, user):
        """docs/push.md, "Device certificates": version 2 (v2:EXPIRES:SIGNATURE) valid for an
        hour, or already expired (--certificate expired); version 1 (no expiry) with --certificate v1."""
        if self.certifier is None:
            return None
        key = field(user) + field(DEVICE_ID) + field(base64.b64encode(spki(self.device_key)).decode())
        if self.args.certificate == "v1":
            return base64.b64encode(self.certifier.sign(b"securotp-device-cert-v1" + key, ec.ECDSA(hashes.SHA256()))).decode()
        expires = int(time.time()) + (-60 if self.args.certificate == "expired" else 3600)
        signature = self.certifier.sign(b"securotp-device-cert-v2" + key + field(str(expires)), ec.ECDSA(hashes.SHA256()))
        return "v2:%d:%s" % (expires, base64.b64encode(signature).decode())

    def approval(self, request, number, user_verified):
        challenge = hashlib.sha256(statement(request, number, DEVICE_ID)).digest()
        client_data = json.dumps({"type": "securotp.push.approve", "challenge": b64url(challenge), "origin": "securotp:push"},
                                 separators=(",", ":")).encode()
        self.counter += 1
        flags = 0x01 | (0x04 if user_verified else 0)
        authenticator_data = hashlib.sha256(b"securotp-push").digest() + bytes([flags]) + struct.pack(">I", self.counter)
        signature = self.device_key.sign(authenticator_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
        approval = {"device": DEVICE_ID, "aaid": AAID, "public_key": b64url(spki(self.device_key)),
                    "authenticator_data": b64url(authenticator_data), "client_data_json": b64url(client_data),
                    "signature": b64url(signature)}
        certificate = self.certificate(request["user"])
        if certificate is not None:
            approval["certificate"] = certificate
        return approval

    # Host routes -----------------------------------------------------------------------

    def preflight(self, body):
        answer = {"has_tokens": True, "code_digits": [6]}
        if self.args.push == "yes":
            answer["push"] = True
        if self.args.methods:
            answer["methods"] = self.args.methods.split(",")
        return 200, answer

    def verify(self, body):
        request = self.requests.get(body.get("push_id"))
        if request is not None and request["user"] == body.get("user"):
            with self.lock:
                if request["state"] == "pending" and request["expires"] > time.time() and self.args.offline_secret and \
                        hmac.compare_digest(body.get("passcode", ""), offline_response(bytes.fromhex(self.args.offline_secret),
                                                                                       offline_challenge(request))):
                    request["state"] = "consumed"
                    self.lock.notify_all()
                    return 200, {"result": "accept", "outcome": "push_offline", "serial": DEVICE_ID, "reason": "offline push approval"}
                if request["state"] == "pending":
                    request["state"] = "cancelled"
                self.lock.notify_all()
        if body.get("passcode") == self.args.code:
            return 200, {"result": "accept", "serial": "100001", "code_digits": 6}
        return 200, {"result": "reject", "reason": "wrong code", "failures": 1}

    def push(self, body):
        if self.args.push_refusal:
            return 409, {"error": {"code": self.args.push_refusal, "message": "scripted refusal: " + self.args.push_refusal}}
        for key in ("user", "nonce", "number", "service", "remote_address", "tty", "command"):
            if not isinstance(body.get(key), str):
                return 400, {"error": {"code": "invalid_input", "message": key + " missing"}}
        if not re.fullmatch(r"[0-9]{6}", body["number"]) or len(base64.urlsafe_b64decode(body["nonce"] + "=")) != 32:
            return 400, {"error": {"code": "invalid_input", "message": "bad number or nonce"}}
        with self.lock:
            # One open request per user and host: a newer one cancels the older.
            for other in self.requests.values():
                if other["user"] == body["user"] and other["state"] == "pending":
                    other["state"] = "cancelled"
            request = dict(body)
            request.update(id="pr" + secrets.token_hex(16), host=HOST_NAME, expires=int(time.time()) + self.args.lifetime,
                           state="pending", approval=None)
            self.requests[request["id"]] = request
            self.latest = request
            self.lock.notify_all()
        answer = {"id": request["id"], "expires": request["expires"], "host": HOST_NAME}
        if self.args.offline_secret:
            answer["offline"] = True
        return 201, answer

    def wait(self, body):
        request = self.requests.get(body.get("id"))
        wait = body.get("wait")
        if request is None or not isinstance(wait, int) or not 1 <= wait <= 30:
            return 400, {"error": {"code": "invalid_input", "message": "unknown id or bad wait"}}
        deadline = time.time() + wait
        # docs/push.md: a host that says how many wrong numbers it has told of is answered as
        # soon as the request's count differs.
        known = body.get("wrong_numbers")
        with self.lock:
            while request["state"] == "pending":
                if isinstance(known, int) and request.get("wrong_numbers", 0) != known:
                    break
                now = time.time()
                if now >= request["expires"]:
                    request["state"] = "expired"
                    break
                if now >= deadline:
                    break
                self.lock.wait(min(deadline, request["expires"]) - now)
            answer = {"id": request["id"], "state": request["state"], "expires": request["expires"]}
            if request["state"] == "pending" and request.get("wrong_numbers", 0):
                answer["wrong_numbers"] = request["wrong_numbers"]
            if request["state"] == "failed" and request.get("reason"):
                answer["reason"] = request["reason"]
            if request["state"] == "approved":
                # Handed out once: the request is consumed as it is returned.
                answer["approval"] = request["approval"]
                self.handed_out.append(request["approval"])
                request["state"] = "consumed"
                # docs/push.md allows either state on the answer that carries the approval.
                answer["state"] = self.args.approval_state
        return 200, answer

    def result(self, body):
        request = self.requests.get(body.get("id"))
        if request is None or not isinstance(body.get("accepted"), bool) or not isinstance(body.get("reason"), str):
            return 400, {"error": {"code": "invalid_input", "message": "bad result"}}
        request["result"] = {"accepted": body["accepted"], "reason": body["reason"]}
        return 200, {}

    def cancel(self, body):
        request = self.requests.get(body.get("id"))
        if request is None:
            return 400, {"error": {"code": "invalid_input", "message": "unknown id"}}
        with self.lock:
            if request["state"] == "pending":
                request["state"] = "cancelled"
            self.lock.notify_all()
        return 200, {}

    # The device ------------------------------------------------------------------------

    def device(self, body):
        with self.lock:
            request = self.latest
            if request is None or request["state"] != "pending":
                return 404, {"error": {"code": "not_found", "message": "no pending request"}}
        delay = body.get("delay", 0)
        if delay:
            threading.Timer(delay, self.decide, (request, body)).start()
        else:
            self.decide(request, body)
        return 200, {"id": request["id"]}

    def decide(self, request, body):
        decision = body["decision"]
        with self.lock:
            if request["state"] != "pending":
                return
            if decision == "approve":
                if body.get("replay"):
                    request["approval"] = self.handed_out[-1]
                else:
                    number = body["number"]
                    if body.get("wrong_number"):
                        number = "%06d" % ((int(number) + 1) % 1000000)
                    request["approval"] = self.approval(request, number, user_verified=body.get("uv", True))
                request["state"] = "approved"
            elif decision == "wrong":
                # The validator's own check found another number: counted, the request stays pending.
                request["wrong_numbers"] = request.get("wrong_numbers", 0) + 1
            elif decision == "fail":
                # The validator failed the request itself (its own check refused the answer).
                request["state"] = "failed"
                request["reason"] = self.args.fail_reason
            elif decision == "deny":
                request["state"] = "denied"
            elif decision == "expire":
                request["state"] = "expired"
            self.lock.notify_all()

    def state(self, body):
        return 200, {"requests": [{k: v for k, v in r.items() if k != "approval"} for r in self.requests.values()]}


ROUTES = {"/v1/preflight": "preflight", "/v1/verify": "verify", "/v1/push": "push", "/v1/push/wait": "wait",
          "/v1/push/result": "result", "/v1/push/cancel": "cancel", "/control/device": "device", "/control/state": "state"}


def serve(args):
    validator = Validator(args)
    log = open(args.log, "a")
    log_lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path.startswith("/v1/"):
                with log_lock:
                    log.write(json.dumps({"path": self.path, "authorization": self.headers.get("Authorization"),
                                          "body": raw.decode("utf-8", "surrogateescape")}) + "\n")
                    log.flush()
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = None
            name = ROUTES.get(self.path)
            if name is None or not isinstance(body, dict):
                status, answer = 404, {"error": {"code": "not_found", "message": "no such route"}}
            else:
                status, answer = getattr(validator, name)(body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(args.port_file + ".tmp", "w") as out:
        out.write(str(server.server_address[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


def device(args):
    """The user at the device: reads the number from the login's prompt, types it in."""
    prompt = os.environ.get("PAM_CHECK_PROMPT", "")
    if args.decision == "respond":
        found = re.search(r"offline challenge ([0-9]{4}) ([0-9]{4})\)", prompt)
        if not found:
            sys.exit("expected an offline challenge in the prompt: %r" % prompt)
        print(offline_response(bytes.fromhex(args.secret), found.group(1) + found.group(2)))
        return
    numbers = re.findall(r"(?<![0-9])[0-9]{6}(?![0-9])", prompt)
    body = {"decision": args.decision, "delay": args.delay, "uv": not args.no_uv, "replay": args.replay,
            "wrong_number": args.wrong_number}
    if args.decision == "approve" and not args.replay:
        if len(numbers) != 1:
            sys.exit("expected one group of six digits in the prompt: %r" % prompt)
        body["number"] = numbers[0]
    if args.decision != "none":
        request = urllib.request.Request(args.url + "/control/device", data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(request, timeout=10) as answer:
            answer.read()
    print(args.answer)


def main():
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser("serve")
    s.add_argument("--port-file", required=True)
    s.add_argument("--log", required=True)
    s.add_argument("--ca-public", required=True)
    s.add_argument("--lifetime", type=int, default=60)
    s.add_argument("--certificate", choices=["valid", "v1", "expired", "none", "other-ca"], default="valid")
    s.add_argument("--push", choices=["yes", "no"], default="yes")
    s.add_argument("--push-refusal", default="")
    s.add_argument("--code", default="123456")
    s.add_argument("--approval-state", choices=["approved", "consumed"], default="approved")
    s.add_argument("--offline-secret", default="")
    s.add_argument("--fail-reason", default="", help="the reason a request failed by the device decision fail gives (default: none)")
    s.add_argument("--methods", default="", help="preflight's methods, e.g. push (default: absent, the standard order)")
    d = commands.add_parser("device")
    d.add_argument("url")
    d.add_argument("decision", choices=["approve", "deny", "expire", "none", "respond", "wrong", "fail"])
    d.add_argument("--secret", default="")
    d.add_argument("--wrong-number", action="store_true")
    d.add_argument("--replay", action="store_true")
    d.add_argument("--no-uv", action="store_true")
    d.add_argument("--delay", type=float, default=0)
    d.add_argument("--answer", default="", help="what the user then types at the prompt (default: just Enter)")
    args = parser.parse_args()
    serve(args) if args.command == "serve" else device(args)


if __name__ == "__main__":
    main()
