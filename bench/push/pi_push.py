"""privacyIDEA's push token in poll-only mode: approve -> login-accepted latency.

Runs with the privacyIDEA venv's python (it has `cryptography`) against a running
privacyIDEA (bench/push/run.sh starts gunicorn on a fresh SQLite instance):

    python pi_push.py --url URL --admin NAME --password PW --resolver R --realm REALM
                      --tokens K --logins N --warmup W --samples FILE [--seed S]

Setup, through privacyIDEA's REST API as an admin would do it:
  - an enrollment policy: push_firebase_configuration=poll only (no Firebase),
    push_registration_url=URL/ttype/push, push_ssl_verify=0;
  - K users in the internal resolver, each with a push token enrolled in two steps:
    /token/init type=push genkey=1 (step 1, the QR code's enrollment_credential), then the
    phone's POST /ttype/push with its RSA public key (step 2), as the privacyIDEA app does.

One login (sequential, one at a time, users in turn):
  PAM client  POST /validate/check user, pass=""       -> challenge, transaction_id
              then, as privacyidea-pam does with pollTime (src/pam_privacyidea.cpp): sleep
              500 ms, GET /validate/polltransaction?transaction_id=T, until it says true;
              then POST /validate/check user, pass="", transaction_id=T  -> ACCEPT.
              Every request on a new connection (privacyidea-pam makes a curl handle each).
  phone       told that a challenge exists (the push notification a poll-only phone does not
              get: the user opens the app), GET /ttype/push?serial&timestamp&signature,
              checks the server's signature on the challenge, waits a "human" delay drawn
              uniformly from [0.2, 1.2) s so the approval lands at a random point of the
              client's polling cycle, then POST /ttype/push serial, nonce,
              signature=B32(RSA-PKCS1v15-SHA256(phone key, "nonce|serial")).
  measured    from just before the phone's answer is sent to the moment the client's final
              /validate/check has answered ACCEPT (one clock, one process).

Prints one line of key=value results; FILE gets one line per measured login:
`approve_to_accept_ms total_ms polls`.
"""

import argparse
import base64
import datetime
import http.client
import json
import random
import statistics
import sys
import threading
import time
import urllib.parse

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

POLL_INTERVAL = 0.5  # privacyidea-pam: std::chrono::milliseconds duration(500)


class PI:
    """Plain HTTP to privacyIDEA, one connection per request."""

    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80
        self.base = url.rstrip("/")
        self.auth = None

    def request(self, method, path, params=None, auth=False):
        body, headers = None, {"User-Agent": "securotp-bench-push"}
        query = urllib.parse.urlencode(params or {})
        if method == "GET" and query:
            path += "?" + query
        elif params is not None:
            body = query
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if auth:
            headers["Authorization"] = self.auth
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        try:
            answer = json.loads(data)
        except ValueError:
            sys.exit(f"pi_push: {method} {path}: HTTP {resp.status}, not JSON: {data[:300]!r}")
        if resp.status != 200 or not answer.get("result", {}).get("status", False):
            sys.exit(f"pi_push: {method} {path}: HTTP {resp.status}: {json.dumps(answer)[:500]}")
        return answer


def b32(data):
    return base64.b32encode(data).decode()


class Phone:
    """The privacyIDEA app for one push token: its own RSA key, the server's public key."""

    def __init__(self, pi, serial, enrollment_credential):
        self.pi, self.serial = pi, serial
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=4096)
        spki = self.key.public_key().public_bytes(serialization.Encoding.DER,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo)
        answer = pi.request("POST", "/ttype/push", {
            "serial": serial, "enrollment_credential": enrollment_credential,
            "fbtoken": "poll-only", "pubkey": base64.urlsafe_b64encode(spki).decode()})
        server_pkcs1 = answer["detail"]["public_key"]
        pem = ("-----BEGIN RSA PUBLIC KEY-----\n" + server_pkcs1.replace("-", "+").replace("_", "/")
               + "\n-----END RSA PUBLIC KEY-----\n")
        self.server_key = serialization.load_pem_public_key(pem.encode())

    def sign(self, text):
        return b32(self.key.sign(text.encode(), padding.PKCS1v15(), hashes.SHA256()))

    def poll(self):
        """GET /ttype/push: the open challenges, each checked against the server's key."""
        timestamp = datetime.datetime.now(datetime.timezone.utc).isoformat()
        answer = self.pi.request("GET", "/ttype/push", {
            "serial": self.serial, "timestamp": timestamp,
            "signature": self.sign(f"{self.serial}|{timestamp}")})
        challenges = answer["result"]["value"]
        for c in challenges:
            signed = "{nonce}|{url}|{serial}|{question}|{title}|{sslverify}".format(**c)
            self.server_key.verify(base64.b32decode(c["signature"]), signed.encode(),
                                   padding.PKCS1v15(), hashes.SHA256())
        return challenges

    def answer(self, nonce):
        """POST /ttype/push: approve. Returns the monotonic time just before sending."""
        params = {"serial": self.serial, "nonce": nonce, "signature": self.sign(f"{nonce}|{self.serial}")}
        sent = time.monotonic()
        answer = self.pi.request("POST", "/ttype/push", params)
        if answer["result"]["value"] is not True:
            sys.exit(f"pi_push: the phone's answer for {self.serial} was not taken: {json.dumps(answer)[:300]}")
        return sent


def setup(pi, args):
    pi.auth = pi.request("POST", "/auth", {"username": args.admin, "password": args.password})["result"]["value"]["token"]
    pi.request("POST", "/policy/bench-push-enroll", {
        "scope": "enrollment", "active": "true",
        "action": f"push_firebase_configuration=poll only, push_registration_url={pi.base}/ttype/push, "
                  "push_ssl_verify=0"}, auth=True)
    phones = []
    for i in range(args.tokens):
        user = f"push{i:03d}"
        pi.request("POST", "/user/", {"user": user, "resolver": args.resolver, "givenname": user}, auth=True)
        init = pi.request("POST", "/token/init", {"type": "push", "genkey": "1", "user": user,
                                                 "realm": args.realm, "serial": f"PIPU{i:04d}"}, auth=True)
        detail = init["detail"]
        credential = detail.get("enrollment_credential")
        if not credential:  # older layouts: only inside the QR code's URL
            qs = urllib.parse.parse_qs(urllib.parse.urlsplit(detail["pushurl"]["value"]).query)
            credential = qs["enrollment_credential"][0]
        if "poll_only=True" not in detail["pushurl"]["value"]:
            sys.exit(f"pi_push: the enrollment URL is not poll-only: {detail['pushurl']['value']}")
        phones.append((user, Phone(pi, detail["serial"], credential)))
    return phones


def one_login(pi, user, phone, rng):
    """One login; returns (approve_to_accept, total, polls) in seconds / count."""
    challenge_seen = threading.Event()
    phone_result = {}

    def phone_side():
        challenge_seen.wait(30)
        challenges = phone.poll()
        if len(challenges) != 1:
            phone_result["error"] = f"phone {phone.serial} saw {len(challenges)} open challenges"
            return
        time.sleep(rng.uniform(0.2, 1.2))  # the user reads the request and taps approve
        phone_result["sent"] = phone.answer(challenges[0]["nonce"])

    started = time.monotonic()
    first = pi.request("POST", "/validate/check", {"user": user, "pass": ""})
    detail = first.get("detail", {})
    transaction = detail.get("transaction_id")
    if first["result"].get("authentication") != "CHALLENGE" or not transaction:
        sys.exit(f"pi_push: /validate/check for {user} did not trigger a push challenge: {json.dumps(first)[:400]}")
    modes = {c.get("client_mode") for c in detail.get("multi_challenge", [])}
    if modes != {"poll"}:
        sys.exit(f"pi_push: expected a poll-mode challenge for {user}, got client modes {modes}")
    phone_thread = threading.Thread(target=phone_side)
    phone_thread.start()
    challenge_seen.set()

    polls = 0
    while True:  # privacyidea-pam's loop: sleep 500 ms, then poll once
        time.sleep(POLL_INTERVAL)
        polls += 1
        if polls > 120:
            sys.exit(f"pi_push: no approval for {user} after {polls} polls ({phone_result.get('error', '')})")
        if pi.request("GET", "/validate/polltransaction", {"transaction_id": transaction})["result"]["value"] is True:
            break
    final = pi.request("POST", "/validate/check", {"user": user, "pass": "", "transaction_id": transaction})
    accepted = time.monotonic()
    phone_thread.join()
    if final["result"].get("authentication") != "ACCEPT":
        sys.exit(f"pi_push: the final /validate/check for {user} was not ACCEPT: {json.dumps(final)[:400]}")
    if "sent" not in phone_result:
        sys.exit(f"pi_push: accepted without the phone's answer? {phone_result}")
    return accepted - phone_result["sent"], accepted - started, polls


def percentile(sorted_values, p):
    """Nearest rank."""
    k = max(1, -(-len(sorted_values) * p // 100))
    return sorted_values[int(k) - 1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--admin", required=True)
    ap.add_argument("--password", required=True)
    ap.add_argument("--resolver", required=True)
    ap.add_argument("--realm", required=True)
    ap.add_argument("--tokens", type=int, default=4)
    ap.add_argument("--logins", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--samples", required=True)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    pi = PI(args.url)

    t = time.monotonic()
    phones = setup(pi, args)
    print(f"pi_push: {len(phones)} push tokens enrolled (poll only) in {time.monotonic() - t:.1f} s", file=sys.stderr)

    results = []
    for i in range(args.warmup + args.logins):
        user, phone = phones[i % len(phones)]
        r = one_login(pi, user, phone, rng)
        if i >= args.warmup:
            results.append(r)
        if (i + 1) % 20 == 0:
            print(f"pi_push: {i + 1}/{args.warmup + args.logins} logins", file=sys.stderr)
    with open(args.samples, "w") as f:
        for a, total, polls in results:
            f.write(f"{a * 1000:.3f} {total * 1000:.3f} {polls}\n")
    lat = sorted(a * 1000 for a, _, _ in results)
    print(f"peer=privacyidea logins={len(lat)} p50_ms={percentile(lat, 50):.1f} p99_ms={percentile(lat, 99):.1f} "
          f"mean_ms={statistics.fmean(lat):.1f} min_ms={lat[0]:.1f} max_ms={lat[-1]:.1f} "
          f"polls_mean={statistics.fmean(p for _, _, p in results):.2f}")


if __name__ == "__main__":
    main()
