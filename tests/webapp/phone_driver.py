#!/usr/bin/env python3
"""Plays one or more phones on securotp's phone page (docs/push.md, "Phones without an app").

Debian's chromium, headless, driven by Playwright (PyPI, in .build/venv: scripts/install-deps.sh
test), each phone a browser context at 390x844 with its own DevTools virtual authenticator
(ctap2, internal transport, resident keys, user verification). The Swift integration tests
(Tests/IntegrationTests/PhonePageTests.swift) start it and send one JSON command per line on
stdin; it answers one JSON object per line on stdout: {"ok": true, ...} or {"ok": false,
"error": "..."}. Every wait is bounded (Playwright's timeouts, and an alarm for the whole run),
so a hung page fails the test instead of hanging it.
"""
import json
import signal
import sys

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
TIMEOUT_MS = 20000


class Phone:
    def __init__(self, browser):
        self.context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True)
        self.context.set_default_timeout(TIMEOUT_MS)
        self.page = self.context.new_page()
        self.cdp = self.context.new_cdp_session(self.page)
        self.cdp.send("WebAuthn.enable")
        self.authenticator = self.cdp.send("WebAuthn.addVirtualAuthenticator", {"options": {
            "protocol": "ctap2", "transport": "internal", "hasResidentKey": True, "hasUserVerification": True,
            "isUserVerified": True, "automaticPresenceSimulation": True}})["authenticatorId"]
        self.console = []
        self.answers = []  # every POST /v1/device/answer the page sent: body, Authorization
        self.authorization = ""  # the last Authorization the page sent (its session)
        self.page.on("console", lambda message: self.console.append(f"{message.type}: {message.text}"))
        self.page.on("pageerror", lambda error: self.console.append(f"pageerror: {error}"))
        self.page.on("request", self._request)

    def _request(self, request):
        if "/v1/" in request.url and request.headers.get("authorization"):
            self.authorization = request.headers["authorization"]
        if request.method == "POST" and request.url.endswith("/v1/device/answer"):
            self.answers.append({"body": request.post_data, "authorization": request.headers.get("authorization", "")})

    def text(self, selector):
        element = self.page.query_selector(selector)
        return element.inner_text() if element and element.is_visible() else ""

    def state(self):
        requests = []
        for element in self.page.query_selector_all(".request"):
            requests.append({"id": element.get_attribute("data-id"), "text": element.inner_text()})
        return {"status": self.text("#status"), "error": self.text("#error"), "who": self.text("#who"), "requests": requests,
                "console": self.console, "authorization": self.authorization}


def handle(browser, phones, command):
    op = command["op"]
    if op == "phone":
        phones[command["phone"]] = Phone(browser)
        return {}
    phone = phones[command["phone"]]
    page = phone.page
    if op == "goto":
        page.goto(command["url"])
        # Selectors, not wait_for_function: the page's CSP forbids the eval that would need.
        page.wait_for_selector("#register:not([disabled]), #error:not([hidden]), #signin-section:not([hidden]), "
                               "#requests-section:not([hidden])")
        return {**phone.state(), "enroll": phone.text("#enroll"), "url": page.url}
    if op == "register":
        page.click("#register")
        page.wait_for_selector("body:not([data-busy]) #requests-section:not([hidden]), body:not([data-busy]) #error:not([hidden])")
        return phone.state()
    if op == "wait_request":
        page.wait_for_selector(".request", timeout=command.get("timeout", TIMEOUT_MS))
        return phone.state()
    if op == "wait_no_request":
        page.wait_for_selector(".request", state="detached", timeout=command.get("timeout", TIMEOUT_MS))
        return phone.state()
    if op == "state":
        return phone.state()
    if op == "answer":
        # Select the request, type the number, press the button; the validator's answer and
        # what the page then shows.
        if command.get("id"):
            page.click(f'.request[data-id="{command["id"]}"]')
        if "number" in command:
            page.fill("#number", command["number"])
        if command.get("screenshot"):
            page.screenshot(path=command["screenshot"])
        with page.expect_response(lambda response: response.url.endswith("/v1/device/answer")) as answered:
            page.click("#" + command["button"])
        response = answered.value
        answer = response.json()
        page.wait_for_selector("body:not([data-busy])", state="attached")
        sent = phone.answers[-1] if phone.answers else {}
        return {**phone.state(), "http_status": response.status, "answer": answer, "sent": sent}
    if op == "fetch":
        # A request the page's origin sends with the given body and Authorization (a replay).
        result = page.evaluate("""async ([path, body, authorization]) => {
            const response = await fetch(path, {method: "POST", headers: {"Content-Type": "application/json", Authorization: authorization},
                                                body, credentials: "omit"});
            return {status: response.status, text: await response.text()};
        }""", [command["path"], command["body"], command["authorization"]])
        return result
    if op == "screenshot":
        page.screenshot(path=command["path"])
        return {"path": command["path"]}
    if op == "challenge":
        # The page's own statement and challenge (app.js) for a request, number and device.
        value = page.evaluate("""async ([request, number, device]) => {
            const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
            return {statement: hex(securotpPush.pushStatement(request, number, device)),
                    challenge: hex(await securotpPush.pushChallenge(request, number, device))};
        }""", [command["request"], command["number"], command["device"]])
        return value
    if op == "credentials":
        return {"credentials": phone.cdp.send("WebAuthn.getCredentials", {"authenticatorId": phone.authenticator})["credentials"]}
    if op == "add_credential":
        phone.cdp.send("WebAuthn.addCredential", {"authenticatorId": phone.authenticator, "credential": command["credential"]})
        return {}
    if op == "use_credential":
        # What the page keeps in localStorage: the credential id its assertions name.
        page.evaluate("(id) => localStorage.setItem('securotp.credential', id)", command["id"])
        return {}
    raise ValueError(f"unknown op {op!r}")


def main():
    # The whole run is bounded: a driver the test forgot, or a hung browser, ends itself.
    signal.alarm(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
        phones = {}
        print(json.dumps({"ok": True, "ready": True}), flush=True)
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                command = json.loads(line)
                answer = {"ok": True, **handle(browser, phones, command)}
            except Exception as error:  # reported to the test, which fails with it
                answer = {"ok": False, "error": f"{type(error).__name__}: {error}"}
            print(json.dumps(answer), flush=True)
        browser.close()


if __name__ == "__main__":
    main()
