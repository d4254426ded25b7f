"""A stand-in for securotpd's push routes (docs/push.md), in memory, for dry runs of the harness.

    python3 standin.py --port PORT --host-name NAME --ready-file FILE

Not securotpd: no store, no durability, no limits, any bearer accepted. It exists so that
bench/push/securotp_push.py can be exercised (PUSH_SECUROTPD=standin) before securotpd serves
/v1/push, and shows what the harness itself costs. Its rows are labelled stand-in.
It checks each device answer's signature and number like the validator would.
"""

import argparse
import asyncio
import hashlib
import json
import secrets
import sys
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from securotp_push import RP_ID, b64u, statement, unb64u  # noqa: E402


class State:
    def __init__(self, host_name):
        self.host_name = host_name
        self.codes = {}      # activation code -> (user, device)
        self.devices = {}    # credential -> (user, device, spki)
        self.keys = {}       # device -> (user, spki)
        self.requests = {}   # id -> dict
        self.open_by_user = {}
        self.user_events = {}

    def user_event(self, user):
        return self.user_events.setdefault(user, asyncio.Event())


async def route(st, method, path, bearer, body):
    if path == "/v1/health":
        return 200, {"status": "ok"}
    if method != "POST":
        return 404, {"error": {"code": "not_found", "message": path}}
    if path.startswith("/v1/users/") and path.endswith("/devices"):
        user = path[len("/v1/users/"):-len("/devices")]
        device = "dv" + secrets.token_hex(8)
        code = secrets.token_hex(8)
        st.codes[code] = (user, device)
        return 201, {"device": device, "activation_code": code, "expires": int(time.time()) + 600}
    if path == "/v1/devices/activate":
        user, device = st.codes.pop(body["activation_code"])
        credential = "sotp_d_" + secrets.token_hex(16)
        spki = unb64u(body["public_key"])
        st.devices[credential] = (user, device, spki)
        st.keys[device] = (user, spki)
        return 200, {"device": device, "user": user, "credential": credential,
                     "pin_policy": {"required": False, "min_length": 4, "max_length": 8}}
    if path == "/v1/push":
        user = body["user"]
        old = st.open_by_user.get(user)
        if old and old["state"] == "pending":
            old["state"] = "cancelled"
            old["event"].set()
        r = {"id": "pr" + secrets.token_hex(16), "user": user, "host": st.host_name, "state": "pending",
             "expires": int(time.time()) + 60, "event": asyncio.Event(), **{k: body.get(k, "") for k in (
                 "nonce", "number", "service", "remote_address", "tty", "command")}}
        st.requests[r["id"]] = st.open_by_user[user] = r
        asyncio.get_running_loop().call_later(60, lambda: r["state"] == "pending" and (
            r.__setitem__("state", "expired"), r["event"].set()))
        st.user_event(user).set()
        return 201, {"id": r["id"], "expires": r["expires"]}
    if path == "/v1/push/wait":
        r = st.requests[body["id"]]
        if r["state"] == "pending":
            try:
                await asyncio.wait_for(r["event"].wait(), body.get("wait", 25))
            except asyncio.TimeoutError:
                pass
        answer = {"id": r["id"], "state": r["state"], "expires": r["expires"]}
        if r["state"] == "approved":
            answer["approval"] = r["approval"]
            r["state"] = "consumed"
        return 200, answer
    if path in ("/v1/push/result", "/v1/push/cancel"):
        return 200, {}
    if path == "/v1/device/requests":
        user, device, _ = st.devices[bearer]
        ev = st.user_event(user)
        pending = lambda: [r for r in st.requests.values() if r["user"] == user and r["state"] == "pending"]  # noqa: E731
        if not pending():
            ev.clear()
            try:
                await asyncio.wait_for(ev.wait(), body.get("wait", 25))
            except asyncio.TimeoutError:
                pass
        return 200, {"requests": [{k: r[k] for k in ("id", "user", "host", "service", "remote_address", "tty",
                                                      "command", "nonce", "expires")} for r in pending()]}
    if path == "/v1/device/answer":
        user, device, spki = st.devices[bearer]
        r = st.requests[body["id"]]
        if r["user"] != user or r["state"] != "pending":
            return 409, {"error": {"code": "conflict", "message": r["state"]}}
        own = hashlib.sha256(statement(r["id"], user, r["host"], r["service"], r["remote_address"], r["tty"],
                                       r["command"], r["nonce"], r["number"], r["expires"], device)).digest()
        cd_raw = unb64u(body["client_data_json"])
        ad = unb64u(body["authenticator_data"])
        ok = (json.loads(cd_raw)["challenge"] == b64u(own) and ad[:32] == hashlib.sha256(RP_ID.encode()).digest()
              and body["number"] == r["number"])
        if ok:
            try:
                serialization.load_der_public_key(spki).verify(
                    unb64u(body["signature"]), ad + hashlib.sha256(cd_raw).digest(), ec.ECDSA(hashes.SHA256()))
            except Exception:
                ok = False
        if not ok:
            r["state"] = "failed"
            r["event"].set()
            return 200, {"state": "failed", "reason": "signature or number"}
        r["state"] = "approved"
        r["approval"] = {"device": device, "aaid": "FFFF#0001", "public_key": b64u(spki),
                         "authenticator_data": body["authenticator_data"],
                         "client_data_json": body["client_data_json"], "signature": body["signature"]}
        r["event"].set()
        return 200, {"state": "approved"}
    return 404, {"error": {"code": "not_found", "message": path}}


async def serve_connection(st, reader, writer):
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            method, path, _ = line.decode().split(" ", 2)
            length, bearer = 0, ""
            while True:
                h = await reader.readline()
                if h in (b"\r\n", b""):
                    break
                name, _, value = h.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
                elif name.lower() == "authorization":
                    bearer = value.strip().removeprefix("Bearer ")
            body = json.loads(await reader.readexactly(length)) if length else {}
            try:
                status, answer = await route(st, method, path, bearer, body)
            except (KeyError, ValueError) as e:
                status, answer = 400, {"error": {"code": "bad_request", "message": str(e)}}
            data = json.dumps(answer).encode()
            writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
                         .encode() + data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def main_async(args):
    st = State(args.host_name)
    server = await asyncio.start_server(lambda r, w: serve_connection(st, r, w), "127.0.0.1", args.port,
                                        backlog=4096)
    open(args.ready_file, "w").close()
    async with server:
        await server.serve_forever()


def main():
    import resource
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host-name", required=True)
    ap.add_argument("--ready-file", required=True)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
