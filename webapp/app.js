// securotp's phone page (docs/push.md, "Phones without an app"): enrolls a passkey from an
// activation link, opens a session with it, waits for login requests (long-poll) and approves
// one with an assertion over the push statement, or denies it. No framework, no secret kept:
// the session token lives in memory only; the credential id (not a secret) in localStorage.
"use strict";

// ---- encoding -----------------------------------------------------------------------------

function base64url(bytes) {
  const view = bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let binary = "";
  for (const byte of view) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text) {
  if (typeof text !== "string" || !/^[A-Za-z0-9_-]*$/.test(text)) throw new Error("the validator sent a malformed value");
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
  const binary = atob(padded);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

// ---- the signed statement (docs/push.md, "The signed statement") --------------------------

const utf8 = new TextEncoder();

// "securotp-push-v1" || field(id) || ... || field(device); field(x) = uint32_be(len) || utf8(x).
function pushStatement(request, number, device) {
  const values = [request.id, request.user, request.host, request.service, request.remote_address, request.tty,
    request.command, request.nonce, number, String(request.expires), device];
  const parts = [utf8.encode("securotp-push-v1")];
  for (const value of values) {
    const bytes = utf8.encode(value == null ? "" : String(value));
    const length = new Uint8Array(4);
    new DataView(length.buffer).setUint32(0, bytes.length, false);
    parts.push(length, bytes);
  }
  const statement = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    statement.set(part, offset);
    offset += part.length;
  }
  return statement;
}

async function pushChallenge(request, number, device) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", pushStatement(request, number, device)));
}

// For tests: the statement and challenge against Tests/Vectors/push.json.
globalThis.securotpPush = Object.freeze({ pushStatement, pushChallenge });

// The validator's time in milliseconds, as far as its Date headers tell.
const clock = { skew: 0 };
function now() { return Date.now() + clock.skew; }

// ---- the validator's API --------------------------------------------------------------------

class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// Same-origin JSON POST; no cookie is ever sent or set (CSRF: the API reads only the bearer).
async function api(path, body, { token = null, signal = undefined } = {}) {
  const headers = { "Content-Type": "application/json" };
  if (token) headers.Authorization = "Bearer " + token;
  let response;
  try {
    response = await fetch(path, {
      method: "POST", headers, body: JSON.stringify(body), credentials: "omit", cache: "no-store",
      referrerPolicy: "no-referrer", mode: "same-origin", signal,
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new APIError(0, "unreachable", "The validator cannot be reached. Check the connection.");
  }
  // Expiries are the validator's clock: measure how far the phone's is off (1 s resolution).
  const serverDate = Date.parse(response.headers.get("Date") || "");
  if (!Number.isNaN(serverDate)) clock.skew = serverDate - Date.now();
  let answer = null;
  try { answer = await response.json(); } catch (_) { answer = null; }
  if (!response.ok) {
    const envelope = answer && answer.error;
    throw new APIError(response.status, envelope && envelope.code || "error",
      envelope && typeof envelope.message === "string" ? envelope.message : "The validator answered " + response.status + ".");
  }
  return answer || {};
}

// ---- page state -----------------------------------------------------------------------------

const stored = {
  get credential() { return localStorage.getItem("securotp.credential"); },
  set credential(value) { value ? localStorage.setItem("securotp.credential", value) : localStorage.removeItem("securotp.credential"); },
};

const state = {
  session: null,      // {token, device, user, expires, rpId}: memory only
  requests: new Map(), // id -> request as the validator listed it
  listed: [],          // the ids of the validator's last list, sent back as `known`
  selected: null,     // the request id the answer controls act on
  loop: 0,            // the current long-poll loop's generation
  wake: null,         // ends the loop's wait at once (after an answer)
  busy: false,
  loopFailed: false,  // the error shown is the loop's own (cleared once it gets through)
};

const $ = (id) => document.getElementById(id);

function show(id, visible) { $(id).hidden = !visible; }

// data-busy on <body> while a passkey or an answer is under way (tests wait for it to clear).
function setBusy(busy) {
  state.busy = busy;
  document.body.toggleAttribute("data-busy", busy);
}

function setStatus(text) { $("status").textContent = text; }

function setError(text) {
  $("error").textContent = text || "";
  show("error", Boolean(text));
}

function describe(error) {
  if (error instanceof APIError) return error.message;
  if (error && error.name === "NotAllowedError") return "The passkey was not used (cancelled, timed out or not verified). Try again.";
  if (error && error.name === "InvalidStateError") return "This phone already has a passkey for this user.";
  if (error && error.name === "SecurityError") return "This address cannot use passkeys (it must be the validator's HTTPS address).";
  return (error && error.message) || String(error);
}

// ---- enrollment -----------------------------------------------------------------------------

async function startEnrollment(code) {
  show("enroll", true);
  setStatus("Checking the activation link…");
  let options;
  try {
    options = await api("/v1/web/enroll/options", { activation_code: code });
  } catch (error) {
    show("enroll", false);
    setStatus("This activation link cannot be used.");
    setError(describe(error) + " Ask your admin for a new link (securotp device add USER --web).");
    return;
  }
  $("enroll-user").textContent = options.user;
  $("enroll-validator").textContent = options.validator;
  $("enroll-origin").textContent = location.origin;
  setStatus("Enrolling " + options.user + " at " + options.validator + ".");
  $("register").disabled = false;
  $("register").onclick = () => register(code, options);
}

async function register(code, options) {
  if (state.busy) return;
  setBusy(true);
  $("register").disabled = true;
  setError("");
  try {
    setStatus("Creating the passkey…");
    const credential = await navigator.credentials.create({
      publicKey: {
        rp: { id: options.rp_id, name: "securotp " + options.validator },
        user: { id: fromBase64url(options.user_id), name: options.user, displayName: options.user },
        challenge: fromBase64url(options.challenge),
        pubKeyCredParams: [{ type: "public-key", alg: -7 }],
        authenticatorSelection: { userVerification: "required", residentKey: "preferred" },
        attestation: "none",
        timeout: 120000,
      },
    });
    setStatus("Activating this phone…");
    const enrolled = await api("/v1/web/enroll", {
      activation_code: code,
      credential_id: base64url(credential.rawId),
      client_data_json: base64url(credential.response.clientDataJSON),
      attestation_object: base64url(credential.response.attestationObject),
    });
    stored.credential = base64url(credential.rawId);
    show("enroll", false);
    setStatus("This phone now approves the logins of " + enrolled.user + ".");
    setBusy(false);
    await signIn();
  } catch (error) {
    setBusy(false);
    $("register").disabled = false;
    setStatus("The passkey was not created.");
    setError(describe(error));
  }
}

// ---- session --------------------------------------------------------------------------------

function allowCredentials() {
  const id = stored.credential;
  return id ? [{ type: "public-key", id: fromBase64url(id) }] : [];
}

async function signIn() {
  if (state.busy) return;
  setBusy(true);
  show("signin-section", false);
  setError("");
  try {
    setStatus("Unlocking with the passkey…");
    const options = await api("/v1/web/session/options", {});
    const assertion = await navigator.credentials.get({
      publicKey: {
        challenge: fromBase64url(options.challenge), rpId: options.rp_id, userVerification: "required",
        allowCredentials: allowCredentials(), timeout: 120000,
      },
    });
    const session = await api("/v1/web/session", {
      credential_id: base64url(assertion.rawId),
      authenticator_data: base64url(assertion.response.authenticatorData),
      client_data_json: base64url(assertion.response.clientDataJSON),
      signature: base64url(assertion.response.signature),
    });
    stored.credential = base64url(assertion.rawId);
    state.session = { token: session.session, device: session.device, user: session.user, expires: session.expires, rpId: options.rp_id };
    $("who").textContent = session.user;
    show("forget", true);
    show("requests-section", true);
    setStatus("Waiting for login requests for " + session.user + ".");
    setBusy(false);
    runLoop();
  } catch (error) {
    setBusy(false);
    state.session = null;
    show("signin-section", true);
    setStatus("Not unlocked.");
    setError(describe(error));
  }
}

function endSession(reason) {
  state.session = null;
  state.loop += 1;
  state.requests.clear();
  state.listed = [];
  render();
  show("requests-section", false);
  show("signin-section", true);
  setStatus(reason);
}

// ---- waiting for requests (long-poll: re-issued at once, backoff only on errors) -------------

function sleep(milliseconds) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, milliseconds);
    state.wake = () => { clearTimeout(timer); resolve(); };
  });
}

function wakeLoop() {
  const wake = state.wake;
  state.wake = null;
  if (wake) wake();
}

async function runLoop() {
  const generation = ++state.loop;
  let backoff = 1000;
  while (generation === state.loop && state.session) {
    if (now() / 1000 >= state.session.expires - 5) {
      endSession("The session ended. Unlock again to see login requests.");
      return;
    }
    try {
      // `known`: the ids the validator listed last time; it holds the wait while they are
      // exactly what is pending and answers as soon as one arrives, is answered, cancelled or
      // expires (docs/push.md), so a request cancelled at the login leaves the page at once.
      const known = state.listed.slice(0, 64);
      const list = await api("/v1/device/requests", { wait: 25, known }, { token: state.session.token });
      if (generation !== state.loop) return;
      backoff = 1000;
      if (state.loopFailed) {
        state.loopFailed = false;
        setError("");
      }
      const listed = Array.isArray(list.requests) ? list.requests : [];
      state.listed = listed.map((request) => String(request.id));
      update(listed);
    } catch (error) {
      if (generation !== state.loop) return;
      if (error instanceof APIError && error.status === 401) {
        endSession("The session ended. Unlock again to see login requests.");
        return;
      }
      state.loopFailed = true;
      setError(describe(error));
      await sleep(backoff);
      backoff = Math.min(backoff * 2, 30000);
    }
  }
}

function update(requests) {
  const seen = new Set();
  for (const request of requests) {
    if (!request || typeof request.id !== "string" || request.expires * 1000 <= now()) continue;
    seen.add(request.id);
    state.requests.set(request.id, request);
  }
  for (const [id, request] of [...state.requests]) {
    if (seen.has(id)) continue;
    state.requests.delete(id);
    // The validator ends the wait as a request reaches its expiry, which may be a moment
    // before this clock (corrected by the Date header to the second) gets there.
    if (request.expires * 1000 <= now() + 2000) announceExpiry(request);
  }
  if (!state.requests.has(state.selected)) state.selected = state.requests.size ? state.requests.keys().next().value : null;
  render();
}

function secondsLeft(request) { return Math.max(0, Math.round(request.expires - now() / 1000)); }

function row(list, label, value) {
  if (!value) return;
  const term = document.createElement("dt");
  term.textContent = label;
  const detail = document.createElement("dd");
  detail.textContent = value;
  list.append(term, detail);
}

function render() {
  const list = $("requests");
  list.replaceChildren();
  for (const request of state.requests.values()) {
    const item = document.createElement("li");
    item.className = "request" + (request.id === state.selected ? " selected" : "");
    item.dataset.id = request.id;
    item.tabIndex = 0;
    item.setAttribute("role", "button");
    item.setAttribute("aria-pressed", String(request.id === state.selected));
    const title = document.createElement("p");
    title.className = "title";
    title.textContent = request.user + " logging in to " + request.host;
    const details = document.createElement("dl");
    details.className = "context";
    row(details, "User", request.user);
    row(details, "Host", request.host);
    row(details, "Service", request.service);
    row(details, "From", request.remote_address);
    row(details, "Terminal", request.tty);
    row(details, "Command", request.command);
    const left = document.createElement("p");
    left.className = "expires";
    left.dataset.expires = String(request.expires);
    left.textContent = "Expires in " + secondsLeft(request) + " s";
    item.append(title, details, left);
    item.addEventListener("click", () => select(request.id));
    item.addEventListener("keydown", (event) => { if (event.key === "Enter" || event.key === " ") select(request.id); });
    list.append(item);
  }
  show("empty", state.requests.size === 0);
  show("answer", state.selected !== null);
}

function select(id) {
  state.selected = id;
  render();
  $("number").focus();
}

function announceExpiry(request) {
  setError("");
  setStatus("The request from " + request.host + " expired. Log in again to get a new one.");
}

// Once a second: countdowns, and an expired request leaves the list (the validator refuses it).
function tick() {
  for (const element of document.querySelectorAll(".request .expires")) {
    element.textContent = "Expires in " + Math.max(0, Math.round(Number(element.dataset.expires) - now() / 1000)) + " s";
  }
  let changed = false;
  for (const [id, request] of state.requests) {
    if (request.expires * 1000 <= now()) {
      state.requests.delete(id);
      changed = true;
      announceExpiry(request);
    }
  }
  if (changed) {
    if (!state.requests.has(state.selected)) state.selected = state.requests.size ? state.requests.keys().next().value : null;
    render();
  }
}

// ---- answering ------------------------------------------------------------------------------

const answerTexts = {
  approved: "Approved. Press Enter at the login if you have not yet.",
  denied: "Denied. The login asks for a code instead.",
  expired: "That request expired. Log in again to get a new one.",
  cancelled: "That login was cancelled (a code was typed, or a newer login replaced it).",
  failed: "Not approved: the request failed.",
};

function finished(id, answer) {
  const reason = answer.reason ? " (" + answer.reason + ")" : "";
  if (answer.state === "pending" && answer.reason === "wrong number") {
    setError("Wrong number. Type the 6 digits the login shows now.");
    setStatus("Not approved yet: the number did not match.");
    $("number").value = "";
    return;
  }
  state.requests.delete(id);
  if (state.selected === id) state.selected = state.requests.size ? state.requests.keys().next().value : null;
  $("number").value = "";
  render();
  if (answer.state === "approved") setError("");
  else setError(answer.state === "failed" ? "Not approved" + reason + "." : "");
  setStatus((answerTexts[answer.state] || "The request is " + answer.state + ".") + (answer.state === "failed" ? "" : reason));
}

async function approve() {
  const request = state.requests.get(state.selected);
  if (!request || !state.session || state.busy) return;
  const number = $("number").value.trim();
  if (!/^[0-9]{6}$/.test(number)) {
    setError("Type the 6 digits the login shows.");
    return;
  }
  setBusy(true);
  setError("");
  try {
    setStatus("Confirm with your passkey…");
    const challenge = await pushChallenge(request, number, state.session.device);
    const assertion = await navigator.credentials.get({
      publicKey: { challenge, rpId: state.session.rpId, userVerification: "required", allowCredentials: allowCredentials(), timeout: 60000 },
    });
    const answer = await api("/v1/device/answer", {
      id: request.id, decision: "approve", number,
      authenticator_data: base64url(assertion.response.authenticatorData),
      client_data_json: base64url(assertion.response.clientDataJSON),
      signature: base64url(assertion.response.signature),
    }, { token: state.session.token });
    finished(request.id, answer);
  } catch (error) {
    setStatus("Not approved.");
    setError(describe(error));
  } finally {
    setBusy(false);
    wakeLoop();
  }
}

async function refuse(decision) {
  const request = state.requests.get(state.selected);
  if (!request || !state.session || state.busy) return;
  setBusy(true);
  setError("");
  try {
    const answer = await api("/v1/device/answer", { id: request.id, decision }, { token: state.session.token });
    finished(request.id, answer);
    if (decision === "fraud" && answer.state === "denied") {
      setStatus("Denied and reported. Further requests are blocked until your admin clears them.");
    }
  } catch (error) {
    setError(describe(error));
  } finally {
    setBusy(false);
    wakeLoop();
  }
}

async function forget() {
  if (!state.session || state.busy) return;
  try {
    await api("/v1/device/remove", {}, { token: state.session.token });
  } catch (error) {
    setError(describe(error));
    return;
  }
  stored.credential = null;
  endSession("This phone no longer approves logins. Delete its passkey in the phone's settings.");
  show("signin-section", false);
  show("forget", false);
  $("who").textContent = "";
}

// ---- start ----------------------------------------------------------------------------------

function start() {
  $("approve").addEventListener("click", approve);
  $("deny").addEventListener("click", () => refuse("deny"));
  $("fraud").addEventListener("click", () => refuse("fraud"));
  $("signin").addEventListener("click", signIn);
  $("forget").addEventListener("click", forget);
  $("number").addEventListener("keydown", (event) => { if (event.key === "Enter") approve(); });
  setInterval(tick, 1000);
  // Back on screen (the phone slept, a backoff is running): ask the validator at once.
  document.addEventListener("visibilitychange", () => { if (!document.hidden) wakeLoop(); });
  if ("serviceWorker" in navigator) navigator.serviceWorker.register("/app/sw.js", { scope: "/app/" }).catch(() => {});
  if (!window.PublicKeyCredential) {
    setStatus("This browser has no passkeys (WebAuthn). Use a current browser on the phone.");
    return;
  }
  const match = /^#enroll=([0-9A-Za-z-]{1,64})$/.exec(location.hash);
  if (match) {
    // The code leaves the address bar and the history at once: it is single-use anyway.
    history.replaceState(null, "", location.pathname);
    startEnrollment(match[1]);
  } else if (stored.credential) {
    signIn();
  } else {
    show("signin-section", true);
    setStatus("Open the activation link your admin gave you, or unlock with this phone's passkey.");
  }
}

document.addEventListener("DOMContentLoaded", start);
