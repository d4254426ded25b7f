"""securotpd's push approval (docs/push.md): approve -> login-returns latency, and many waiting logins.

    python3 securotp_push.py --url URL --admin-cred FILE --host-cred FILE --host-name NAME
        --pid PID --out DIR [--logins N] [--warmup W] [--waiting M] [--load-logins L]
        [--pam-check PATH --pam-confdir DIR --pam-service S --pam-user U --pam-logins P]

Plays the three parties of docs/push.md over plain HTTP/1.1 with keep-alive (asyncio, no
third-party HTTP library; `cryptography` for ES256):

  admin   POST /v1/users/{user}/devices (admin credential) -> activation code, for every user
  device  POST /v1/devices/activate with a fresh P-256 key; then, as securotp-authenticator
          `watch` does, a long-poll POST /v1/device/requests {wait} that is always outstanding;
          when a request arrives and the user has typed the number (the harness hands the
          host's number over in-process), it signs the statement of docs/push.md (WebAuthn-
          shaped: authenticatorData || SHA-256(clientDataJSON), ECDSA P-256 SHA-256, DER) and
          POST /v1/device/answer {decision: "approve", ...}.
  host    POST /v1/push {user, nonce, number, service, remote_address, tty, command}, then
          POST /v1/push/wait {id, wait: 25} until the request leaves `pending` (what the module
          does after the empty answer), verifies the approval against its own statement as
          docs/push.md says a host must, and reports POST /v1/push/result {accepted: true}.

Measured per login: t0 = just before the device's answer is sent; t_wait = the host's wait
returned the approval; t_done = the host verified it and the result report was answered
(the module returns PAM_SUCCESS after that). Phases (each a key=value line on stdout):

  idle   N logins one at a time, nothing else open.
  load   M logins held waiting (each: POST /v1/push, then /v1/push/wait re-issued every 25 s,
         one connection each; an expired request is opened again, as the next login would);
         securotpd's RSS (/proc/PID/status) before and with them (once it holds still, and
         again after the CPU window; --pid must be the daemon itself, the row names it), its CPU
         over 10 s while they wait (/proc/PID/stat), then L measured logins one at a time while
         they keep waiting.
  --device web: the devices are phones' passkeys instead of securotp-authenticator (enrolled
  from `device add` with web: true, signed in by an assertion, approving with a webauthn.get
  assertion at --origin, securotpd's public_url), as webapp/app.js does in the browser.

  pam    P logins through the real libpam and pam_securotp (pam-check): the prompt carries the
         number, pam-check answers it with an empty line (the module then waits for the
         approval), the harness types the number into the device, which approves; t_done = the
         moment pam-check prints its result (pam_authenticate returned; stdout line-buffered).
"""

import argparse
import asyncio
import base64
import hashlib
import json
import multiprocessing
import os
import random
import resource
import secrets
import statistics
import struct
import sys
import time
import urllib.parse

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

RP_ID = "securotp-push"
AAID = "FFFF#0001"
PASSKEY_AAID = "FFFF#0002"
WAIT_SECONDS = 25  # the module: "each call at most 25 s"
CONTEXT = {"service": "sshd", "remote_address": "192.0.2.10", "tty": "ssh", "command": ""}


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64u(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def field(value):
    data = (value or "").encode()
    return struct.pack(">I", len(data)) + data


def statement(request_id, user, host, service, remote_address, tty, command, nonce, number, expires, device):
    """docs/push.md, "The signed statement"."""
    return (b"securotp-push-v1" + field(request_id) + field(user) + field(host) + field(service)
            + field(remote_address) + field(tty) + field(command) + field(nonce) + field(number)
            + field(str(expires)) + field(device))


def fail(message):
    print(f"securotp_push: {message}", file=sys.stderr)
    sys.exit(1)


# ------------------------------------------------------------------ HTTP/1.1 client


class HTTPError(Exception):
    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body[:300]!r}")
        self.status, self.body = status, body


class Connection:
    """One keep-alive connection; one request at a time (no pipelining)."""

    def __init__(self, host, port, bearer=None):
        self.host, self.port, self.bearer = host, port, bearer
        self.reader = self.writer = None

    async def close(self):
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None

    async def request(self, method, path, body=None, timeout=60):
        for attempt in (0, 1):  # once more on a fresh connection if the server closed an idle one
            reused = self.writer is not None
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            try:
                return await asyncio.wait_for(self._exchange(method, path, body), timeout)
            except (ConnectionError, asyncio.IncompleteReadError):
                await self.close()
                if attempt or not reused:
                    raise

    async def _exchange(self, method, path, body):
        data = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", f"Content-Length: {len(data)}"]
        if body is not None:
            head.append("Content-Type: application/json")
        if self.bearer:
            head.append(f"Authorization: Bearer {self.bearer}")
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionResetError("closed")
        status = int(status_line.split()[1])
        length, chunked, close = None, False, False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
            elif name == "connection" and value.lower() == "close":
                close = True
        if status in (204, 304):
            payload = b""
        elif chunked:
            payload = b""
            while True:
                size = int((await self.reader.readline()).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()
                    break
                payload += await self.reader.readexactly(size)
                await self.reader.readline()
        elif length is not None:
            payload = await self.reader.readexactly(length)
        else:
            payload = await self.reader.read()
            close = True
        if close:
            await self.close()
        if status >= 300:
            raise HTTPError(status, payload)
        return json.loads(payload) if payload else {}


# ------------------------------------------------------------------ parties


class Device:
    """One activated device (securotp-authenticator's part)."""

    def __init__(self, user):
        self.user = user
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.spki = self.key.public_key().public_bytes(serialization.Encoding.DER,
                                                       serialization.PublicFormat.SubjectPublicKeyInfo)
        self.id = self.credential = None
        self.counter = 0
        self.numbers = {}  # request id -> number the user typed (future)
        self.conn = None
        self.watching = None

    async def enroll(self, admin, activator):
        added = await admin.request("POST", f"/v1/users/{urllib.parse.quote(self.user, safe='')}/devices",
                                    {"name": "bench"})
        answer = await activator.request("POST", "/v1/devices/activate", {
            "activation_code": added["activation_code"], "public_key": b64u(self.spki),
            "name": "bench", "aaid": AAID, "user_verification": True})
        self.id, self.credential = answer["device"], answer["credential"]
        if answer.get("user") != self.user:
            fail(f"activation for {self.user} answered user {answer.get('user')!r}")

    def typed(self, request_id):
        """The number the user types for this request, once the login shows it."""
        return self.numbers.setdefault(request_id, asyncio.get_running_loop().create_future())

    async def watch(self, url_host, url_port, answered):
        """Long-poll for requests forever; approve each one once its number is typed."""
        self.conn = Connection(url_host, url_port, self.credential)
        answer_conn = Connection(url_host, url_port, self.credential)
        seen = set()
        while True:
            got = await self.conn.request("POST", "/v1/device/requests", {"wait": WAIT_SECONDS},
                                          timeout=WAIT_SECONDS + 30)
            for r in got.get("requests", []):
                if r["id"] in seen:
                    continue
                seen.add(r["id"])
                asyncio.get_running_loop().create_task(self.approve(r, answer_conn, answered))

    def signed_answer(self, r, number):
        challenge = hashlib.sha256(statement(r["id"], r.get("user"), r.get("host"), r.get("service"),
                                             r.get("remote_address"), r.get("tty"), r.get("command"),
                                             r["nonce"], number, r["expires"], self.id)).digest()
        client_data = json.dumps({"type": "securotp.push.approve", "challenge": b64u(challenge),
                                  "origin": "securotp:push"}, separators=(",", ":")).encode()
        self.counter += 1
        # Flags UP | UV: the device checked its PIN (securotpd's default device_pin = yes).
        auth_data = hashlib.sha256(RP_ID.encode()).digest() + bytes([0x05]) + struct.pack(">I", self.counter)
        signature = self.key.sign(auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
        return {"authenticator_data": b64u(auth_data), "client_data_json": b64u(client_data), "signature": b64u(signature)}

    async def approve(self, r, conn, answered):
        number = await self.typed(r["id"])
        body = {"id": r["id"], "decision": "approve", "number": number, **self.signed_answer(r, number)}
        sent = time.monotonic()
        try:
            result = await conn.request("POST", "/v1/device/answer", body)
        except HTTPError as e:
            answered.set_exception(RuntimeError(f"device answer refused: {e}"))
            return
        if result.get("state") != "approved":
            answered.set_exception(RuntimeError(f"device answer not taken: {json.dumps(result)[:300]}"))
        elif not answered.done():
            answered.set_result((sent, result.get("state")))


class PasskeyDevice(Device):
    """A phone's passkey as the page uses it (docs/push.md "Phones without an app"): enrolled
    with a registration (attestation "none") from `device add` with `web: true`, signed in with
    an assertion (the sotp_w_ session is its bearer), approving with a webauthn.get assertion
    at public_url's origin whose challenge is the statement's hash, as webapp/app.js does."""

    origin = None  # public_url's origin (--origin)

    async def enroll(self, admin, activator):
        added = await admin.request("POST", f"/v1/users/{urllib.parse.quote(self.user, safe='')}/devices",
                                    {"name": "bench", "web": True})
        code = added["activation_code"]
        options = await activator.request("POST", "/v1/web/enroll/options", {"activation_code": code})
        self.rp_id = options["rp_id"]
        numbers = self.key.public_key().public_numbers()
        cose = (bytes([0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]) + numbers.x.to_bytes(32, "big")
                + bytes([0x22, 0x58, 0x20]) + numbers.y.to_bytes(32, "big"))
        self.credential_id = secrets.token_bytes(32)
        auth_data = (hashlib.sha256(self.rp_id.encode()).digest() + bytes([0x45, 0, 0, 0, 0]) + bytes(16)
                     + struct.pack(">H", len(self.credential_id)) + self.credential_id + cose)
        # CBOR {"fmt": "none", "attStmt": {}, "authData": bytes} (definite lengths, shortest heads).
        length = bytes([0x58, len(auth_data)]) if len(auth_data) < 256 else b"\x59" + struct.pack(">H", len(auth_data))
        attestation = b"\xa3\x63fmt\x64none\x67attStmt\xa0\x68authData" + length + auth_data
        client_data = json.dumps({"type": "webauthn.create", "challenge": options["challenge"], "origin": self.origin,
                                  "crossOrigin": False}).encode()
        enrolled = await activator.request("POST", "/v1/web/enroll", {
            "activation_code": code, "credential_id": b64u(self.credential_id),
            "client_data_json": b64u(client_data), "attestation_object": b64u(attestation)})
        self.id = enrolled["device"]
        session_options = await activator.request("POST", "/v1/web/session/options", {})
        body = self.assertion(unb64u(session_options["challenge"]))
        body["credential_id"] = b64u(self.credential_id)
        session = await activator.request("POST", "/v1/web/session", body)
        self.credential = session["session"]  # the bearer of the device routes, 10 minutes
        if session.get("user") != self.user:
            fail(f"web enrollment for {self.user} answered user {session.get('user')!r}")

    def assertion(self, challenge):
        self.counter += 1
        auth_data = hashlib.sha256(self.rp_id.encode()).digest() + bytes([0x05]) + struct.pack(">I", self.counter)
        client_data = json.dumps({"type": "webauthn.get", "challenge": b64u(challenge), "origin": self.origin,
                                  "crossOrigin": False}, separators=(",", ":")).encode()
        signature = self.key.sign(auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
        return {"authenticator_data": b64u(auth_data), "client_data_json": b64u(client_data), "signature": b64u(signature)}

    def signed_answer(self, r, number):
        return self.assertion(hashlib.sha256(statement(r["id"], r.get("user"), r.get("host"), r.get("service"),
                                                       r.get("remote_address"), r.get("tty"), r.get("command"),
                                                       r["nonce"], number, r["expires"], self.id)).digest())


def verify_approval(approval, request_id, user, host, nonce, number, expires, device_keys):
    """What a host checks before it accepts (docs/push.md); raises on any mismatch."""
    public_key_der = unb64u(approval["public_key"])
    if device_keys.get(approval["device"]) != public_key_der:
        raise ValueError("approval from a key that is not the user's device key")
    key = serialization.load_der_public_key(public_key_der)
    own = hashlib.sha256(statement(request_id, user, host, CONTEXT["service"], CONTEXT["remote_address"],
                                   CONTEXT["tty"], CONTEXT["command"], nonce, number, expires,
                                   approval["device"])).digest()
    if approval.get("aaid") == PASSKEY_AAID:  # a phone's passkey: at the page's origin, its host the RP id
        want_type, want_origin = "webauthn.get", approval.get("origin") or ""
        rp_id = urllib.parse.urlsplit(want_origin).hostname or ""
    else:
        want_type, want_origin, rp_id = "securotp.push.approve", "securotp:push", RP_ID
    client_data_raw = unb64u(approval["client_data_json"])
    client_data = json.loads(client_data_raw)
    if (client_data.get("type") != want_type or client_data.get("origin") != want_origin
            or unb64u(client_data.get("challenge", "")) != own):
        raise ValueError("clientDataJSON does not match the host's statement")
    auth_data = unb64u(approval["authenticator_data"])
    if len(auth_data) != 37 or auth_data[:32] != hashlib.sha256(rp_id.encode()).digest() or auth_data[32] & 0x05 != 0x05:
        raise ValueError("bad authenticatorData")
    key.verify(unb64u(approval["signature"]), auth_data + hashlib.sha256(client_data_raw).digest(),
               ec.ECDSA(hashes.SHA256()))


class Bench:
    def __init__(self, args):
        u = urllib.parse.urlsplit(args.url)
        self.host, self.port = u.hostname, u.port or 80
        self.args = args
        self.admin_bearer = open(args.admin_cred).read().strip()
        self.host_bearer = open(args.host_cred).read().strip()
        self.device_keys = {}  # device id -> SPKI DER (what the validator lists for the user)
        # --device web: every device is a phone's passkey (docs/push.md "Phones without an app").
        self.device_class = PasskeyDevice if args.device == "web" else Device
        PasskeyDevice.origin = args.origin

    def conn(self, bearer=None):
        return Connection(self.host, self.port, bearer)

    async def enroll(self, users, parallel=32):
        devices = [self.device_class(u) for u in users]
        queue = list(devices)

        async def worker():
            admin, activator = self.conn(self.admin_bearer), self.conn()
            while queue:
                d = queue.pop()
                await d.enroll(admin, activator)
                self.device_keys[d.id] = d.spki
            await admin.close()
            await activator.close()

        await asyncio.gather(*(worker() for _ in range(parallel)))
        return devices

    async def open_push(self, conn, user):
        nonce = b64u(secrets.token_bytes(32))
        number = f"{secrets.randbelow(1000000):06d}"
        opened = await conn.request("POST", "/v1/push", {"user": user, "nonce": nonce, "number": number, **CONTEXT})
        return opened["id"], opened["expires"], nonce, number

    async def one_login(self, host_conn, device):
        """One measured login; returns (t_wait - t0, t_done - t0) in seconds."""
        loop = asyncio.get_running_loop()
        answered = loop.create_future()
        device.answered = answered
        request_id, expires, nonce, number = await self.open_push(host_conn, device.user)
        # The user reads the number off the prompt and types it: a short, random delay.
        loop.call_later(random.uniform(0.0, 0.05), lambda: device.typed(request_id).done()
                        or device.typed(request_id).set_result(number))
        while True:
            waiting = loop.create_task(host_conn.request("POST", "/v1/push/wait", {"id": request_id, "wait": WAIT_SECONDS},
                                                         timeout=WAIT_SECONDS + 30))
            await asyncio.wait({waiting, answered}, return_when=asyncio.FIRST_COMPLETED)
            if answered.done() and answered.exception() is not None:
                fail(f"login of {device.user}: {answered.exception()}")
            waited = await waiting
            if waited.get("state") != "pending":
                break
        t_wait = time.monotonic()
        # The one answer that hands the approval out (securotpd marks the request consumed as it does).
        if waited.get("state") not in ("approved", "consumed") or "approval" not in waited:
            fail(f"login of {device.user}: wait answered {json.dumps(waited)[:300]}")
        verify_approval(waited["approval"], request_id, device.user, self.args.host_name, nonce, number,
                        expires, self.device_keys)
        await host_conn.request("POST", "/v1/push/result", {"id": request_id, "accepted": True, "reason": ""})
        t_done = time.monotonic()
        sent, _state = await answered
        return t_wait - sent, t_done - sent

    async def measured_logins(self, devices, count, warmup, label):
        host_conn = self.conn(self.host_bearer)
        results = []
        for i in range(warmup + count):
            r = await self.one_login(host_conn, devices[i % len(devices)])
            if i >= warmup:
                results.append(r)
        await host_conn.close()
        write_samples(os.path.join(self.args.out, f"{self.args.peer}-{label}.samples"), results)
        return results

    async def start_watchers(self, devices):
        for d in devices:
            d.answered = None
            d.watching = asyncio.get_running_loop().create_task(self._watch(d))

    async def _watch(self, d):
        class Relay:  # routes the device's answer to whichever login is being measured
            def done(_self):
                return d.answered is None or d.answered.done()

            def set_result(_self, v):
                if d.answered is not None and not d.answered.done():
                    d.answered.set_result(v)

            def set_exception(_self, e):
                if d.answered is not None and not d.answered.done():
                    d.answered.set_exception(e)

        await d.watch(self.host, self.port, Relay())

    # -------------------------------------------------------------- waiting logins

    async def hold(self, user, opened, stop, counters):
        """One waiting login: open, then wait, wait, wait...; reopen on expiry."""
        conn = self.conn(self.host_bearer)
        try:
            async with self.connect_slots:
                request_id, *_ = await self.open_push(conn, user)
            counters["open"] += 1
            opened()
            while not stop.is_set():
                waited = await conn.request("POST", "/v1/push/wait", {"id": request_id, "wait": WAIT_SECONDS},
                                            timeout=WAIT_SECONDS + 30)
                state = waited.get("state")
                if state == "pending":
                    continue
                counters[state] = counters.get(state, 0) + 1
                if stop.is_set():
                    break
                request_id, *_ = await self.open_push(conn, user)  # the next login of this user
                counters["reopened"] += 1
        except Exception as e:  # counted and reported, never silent
            counters["errors"] += 1
            counters.setdefault("first_error", f"{type(e).__name__}: {e}"[:200])
            opened()
        finally:
            await conn.close()



def holder_main(url, host_bearer, users, pipe):
    """The waiting logins' process: open all, report, hold until told to stop, report again."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    asyncio.run(holder_async(url, host_bearer, users, pipe))


async def holder_async(url, host_bearer, users, pipe):
    u = urllib.parse.urlsplit(url)
    bench = Bench.__new__(Bench)
    bench.host, bench.port, bench.host_bearer = u.hostname, u.port or 80, host_bearer
    bench.connect_slots = asyncio.Semaphore(256)
    stop = asyncio.Event()
    counters = {"open": 0, "reopened": 0, "errors": 0}
    all_open = asyncio.Event()
    started = [0]

    def opened():
        started[0] += 1
        if started[0] == len(users):
            all_open.set()

    t = time.monotonic()
    holders = [asyncio.get_running_loop().create_task(bench.hold(user, opened, stop, counters)) for user in users]
    await all_open.wait()
    pipe.send(("open", dict(counters), time.monotonic() - t))
    await asyncio.get_running_loop().run_in_executor(None, pipe.recv)
    stop.set()
    final = dict(counters)
    for h in holders:
        h.cancel()
    await asyncio.gather(*holders, return_exceptions=True)
    pipe.send(("stopped", final, 0))

def write_samples(path, results):
    with open(path, "w") as f:
        for w, d in results:
            f.write(f"{w * 1000:.3f} {d * 1000:.3f}\n")


def percentile(sorted_values, p):
    k = max(1, -(-len(sorted_values) * p // 100))
    return sorted_values[int(k) - 1]


def summary(results):
    wait = sorted(w * 1000 for w, _ in results)
    done = sorted(d * 1000 for _, d in results)
    return (f"logins={len(done)} p50_ms={percentile(done, 50):.2f} p99_ms={percentile(done, 99):.2f} "
            f"mean_ms={statistics.fmean(done):.2f} max_ms={done[-1]:.2f} "
            f"wait_p50_ms={percentile(wait, 50):.2f} wait_p99_ms={percentile(wait, 99):.2f}")


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def rss_mb(pid):
    return int(proc_status(pid)["VmRSS"].split()[0]) / 1024


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def pam_logins(bench, device, args):
    """Logins through libpam: pam-check answers the push prompt with an empty line (approve on
    the device, then just Enter) and prints the prompt, from which the user (this harness) reads
    the number to type into the device. Returns None, after printing a result line saying why,
    when the module does not offer push."""
    results = []
    loop = asyncio.get_running_loop()
    for i in range(WARMUP_PAM + args.pam_logins):
        answered = loop.create_future()
        device.answered = answered
        proc = await asyncio.create_subprocess_exec(
            "stdbuf", "-oL", args.pam_check, "--confdir", args.pam_confdir, args.pam_service, args.pam_user, "",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        lines = []
        line = await proc.stdout.readline()
        while line and not line.startswith(b"prompt"):
            lines.append(line.decode(errors="replace").rstrip())
            line = await proc.stdout.readline()
        lines.append(line.decode(errors="replace").rstrip())
        words = [w.strip(",:.") for w in line.decode(errors="replace").split()]
        digits = [w for w in words if w.isdigit() and len(w) == 6]
        if len(digits) != 1:
            rest = (await proc.stdout.read()).decode(errors="replace")
            await proc.wait()
            print(f"securotp_push: the module offered no push prompt with a number; pam-check said: "
                  f"{(' | '.join(lines) + rest).strip()[:400]!r}", file=sys.stderr)
            print(f"peer={args.peer} phase=pam missing=no-push-prompt", flush=True)
            return None
        number = digits[0]
        # The device has (or will get) the request from its long-poll; the user types the number.
        pending = [rid for rid, fut in device.numbers.items() if not fut.done()]
        for _ in range(2000):
            if pending:
                break
            await asyncio.sleep(0.001)
            pending = [rid for rid, fut in device.numbers.items() if not fut.done()]
        if len(pending) != 1:
            proc.kill()
            fail(f"expected one request on the device for the PAM login, have {len(pending)}")
        device.numbers[pending[0]].set_result(number)
        t_done = None
        line = await proc.stdout.readline()
        while line:
            lines.append(line.decode(errors="replace").rstrip())
            if line.startswith(b"result:"):
                t_done = time.monotonic()
            line = await proc.stdout.readline()
        await proc.wait()
        if proc.returncode != 0 or t_done is None:
            fail(f"pam-check failed (exit {proc.returncode}): {' | '.join(lines)[:500]}")
        sent, _ = await answered
        if i >= WARMUP_PAM:
            results.append((t_done - sent, t_done - sent))
    write_samples(os.path.join(args.out, f"{args.peer}-pam.samples"), results)
    return results


WARMUP_PAM = 2


async def main_async(args):
    bench = Bench(args)
    pid = args.pid
    sample_users = [f"pushbench{i:02d}" for i in range(args.sample_users)]
    t = time.monotonic()
    samples = await bench.enroll(sample_users)
    await bench.start_watchers(samples)
    await asyncio.sleep(0.5)
    print(f"securotp_push: {len(samples)} devices activated and watching ({time.monotonic() - t:.1f} s)",
          file=sys.stderr)

    results = await bench.measured_logins(samples, args.logins, args.warmup, "idle")
    print(f"peer={args.peer} phase=idle {summary(results)}", flush=True)

    if args.pam_check:
        pam_device = (await bench.enroll([args.pam_user], parallel=1))[0]
        await bench.start_watchers([pam_device])
        await asyncio.sleep(0.5)
        results = await pam_logins(bench, pam_device, args)
        if results:
            print(f"peer={args.peer} phase=pam {summary(results)}", flush=True)

    if args.waiting:
        t = time.monotonic()
        wait_users = [f"pushwait{i:05d}" for i in range(args.waiting)]
        await bench.enroll(wait_users)
        print(f"securotp_push: {args.waiting} more devices activated ({time.monotonic() - t:.1f} s)", file=sys.stderr)
        await asyncio.sleep(2)
        rss_before, threads_before = rss_mb(pid), int(proc_status(pid)["Threads"])
        # The figure is the daemon's own RSS: --pid must be the daemon, not a wrapper around it.
        name = proc_status(pid)["Name"]
        if args.peer.startswith("securotpd") and name != "securotpd":
            print(f"securotp_push: warning: --pid {pid} is {name!r}, not securotpd: its RSS is not the daemon's",
                  file=sys.stderr)
        # The waiting logins live in a process of their own, so that their traffic (every wait
        # re-issued each 25 s) does not delay the measured logins in this process's event loop.
        ctx = multiprocessing.get_context("spawn")
        parent_end, child_end = ctx.Pipe()
        holder = ctx.Process(target=holder_main, args=(args.url, bench.host_bearer, wait_users, child_end))
        holder.start()
        loop = asyncio.get_running_loop()
        message, counters, open_seconds = await loop.run_in_executor(None, parent_end.recv)
        if counters["errors"]:
            print(f"securotp_push: {counters['errors']} waiting logins failed: {counters.get('first_error')}",
                  file=sys.stderr)
        # Every wait is outstanding and the opening burst is over: at least 3 s, then until the
        # daemon's RSS holds still (two samples 1 s apart within 0.5 MB; at most 30 s more).
        await asyncio.sleep(3)
        settled, previous = rss_mb(pid), 0.0
        for _ in range(30):
            if abs(settled - previous) < 0.5:
                break
            previous = settled
            await asyncio.sleep(1)
            settled = rss_mb(pid)
        c0, w0 = cpu_seconds(pid), time.monotonic()
        await asyncio.sleep(10)
        idle_cpu_pct = 100 * (cpu_seconds(pid) - c0) / (time.monotonic() - w0)
        # Read at the end of the 10 s: rss_settled_mb (at its start) shows it held still.
        rss_waiting, status, fds_waiting = rss_mb(pid), proc_status(pid), len(os.listdir(f"/proc/{pid}/fd"))
        results = await bench.measured_logins(samples, args.load_logins, args.warmup, "load")
        rss_after = rss_mb(pid)
        parent_end.send("stop")
        message, counters, _ = await loop.run_in_executor(None, parent_end.recv)
        holder.join(10)
        print(f"peer={args.peer} phase=load waiting={counters['open']} {summary(results)} "
              f"process={status['Name']} rss_before_mb={rss_before:.1f} rss_settled_mb={settled:.1f} "
              f"rss_waiting_mb={rss_waiting:.1f} rss_after_mb={rss_after:.1f} fds_waiting={fds_waiting} "
              f"rss_hwm_mb={int(status['VmHWM'].split()[0]) / 1024:.1f} threads_before={threads_before} "
              f"threads_waiting={status['Threads']} idle_cpu_pct={idle_cpu_pct:.2f} open_s={open_seconds:.1f} "
              f"reopened={counters['reopened']} expired={counters.get('expired', 0)} "
              f"cancelled={counters.get('cancelled', 0)} errors={counters['errors']}",
              flush=True)
    os._exit(0)  # the device watchers' long-polls need no goodbye


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--admin-cred", required=True)
    ap.add_argument("--host-cred", required=True)
    ap.add_argument("--host-name", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--logins", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--sample-users", type=int, default=8)
    ap.add_argument("--waiting", type=int, default=10000)
    ap.add_argument("--load-logins", type=int, default=200)
    ap.add_argument("--peer", default="securotpd")
    ap.add_argument("--pam-check")
    ap.add_argument("--pam-confdir")
    ap.add_argument("--pam-service")
    ap.add_argument("--pam-user")
    ap.add_argument("--pam-logins", type=int, default=50)
    ap.add_argument("--device", choices=["authenticator", "web"], default="authenticator")
    ap.add_argument("--origin", help="public_url's origin, for --device web (http://localhost:PORT)")
    args = ap.parse_args()
    if args.device == "web" and not args.origin:
        ap.error("--device web needs --origin (securotpd's public_url)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = args.waiting + 1024
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            fail(f"{args.waiting} waiting logins need {need} open files, the hard limit is {hard} (ulimit -Hn)")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
