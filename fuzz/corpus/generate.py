#!/usr/bin/env python3
"""Writes the seed corpus fuzz/corpus/<harness>/ from the test vectors (Tests/Vectors) and
hand-made edge cases. The output is committed; run this again after changing a harness's input
layout or the vectors: fuzz/corpus/generate.py

Extra PSKC files (AES key wrap, AES-256, PBKDF2 with HMAC-SHA256, TOTP with expiry and PIN policy)
are written with python-pskc (pip install python-pskc), the independent implementation the
import tests use; without it those few files are left as they are. Right answers for the
passcode harness come from the SecurID vectors, the OCRA vectors and RFC 4226 HMAC below.
"""
import base64
import datetime
import hashlib
import hmac
import json
import pathlib
import struct
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parents[2]
VECTORS = ROOT / "Tests" / "Vectors"
CORPUS = ROOT / "fuzz" / "corpus"


def load(name):
    return json.loads((VECTORS / name).read_text())


def write(harness, name, data):
    directory = CORPUS / harness
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_bytes(data if isinstance(data, bytes) else data.encode())


OTPAUTH = load("otpauth.json")["otpauth"]
SECURID = load("securid.json")
OCRA = load("ocra.json")["ocra"]
PSKC_DIR = VECTORS / "pskc"


# --- base32, hex, percent-coding, hash names -------------------------------------------------
def base32():
    cases = ["JBSWY3DPEHPK3PXP", "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", "jbsw y3dp-ehpk 3pxp", "MZXW6===",
             "MZXW6YQ=", "MZXW6YTB", "A", "AA======", "=", "", "0189", "JBSWY3DP=EHPK", "deadBEEF", "%41%zz%",
             "%E2%82%AC", "sha-256", "Sha512", "SHA1"]
    for uri in OTPAUTH["uris"]:
        cases.append(urllib.parse.parse_qs(urllib.parse.urlsplit(uri["uri"]).query)["secret"][0])
    for index, case in enumerate(cases):
        write("base32", f"case-{index:02}", case)


# --- otpauth URIs ----------------------------------------------------------------------------
def otpauth():
    for index, uri in enumerate(OTPAUTH["uris"]):
        write("otpauth", f"vector-{index}", uri["uri"])
    edge = [
        "otpauth://totp/ACME:alice@example.com?secret=JBSWY3DPEHPK3PXP&issuer=ACME&period=60",
        "OTPAUTH://TOTP/alice?secret=jbswy3dpehpk3pxp&algorithm=sha-256&digits=8",
        "otpauth://hotp/Example:bob?secret=JBSWY3DP&counter=18446744073709551615",
        "otpauth://totp/Am?secret=JBSWY3DP&issuer=Auth://C",          # issuer with ':' (renders back)
        "otpauth://totp/ACME:%CC%B9alice?secret=JBSWY3DP",             # ':' before a combining mark
        "otpauth://totp/%20%20bob?secret=JBSWY3DP",
        "otpauth://totp/A%3AB:c?secret=JBSWY3DP&issuer=",
        "otpauth://totp/a?secret=JBSWY3DP&image=https%3A%2F%2Fx&digits=7&period=300&secret=GEZDGNBV",
        "otpauth://totp/a?secret=JBSWY3D1",
        "otpauth://totp/a?secret&issuer",
    ]
    for index, uri in enumerate(edge):
        write("otpauth", f"edge-{index}", uri)


# --- Google Authenticator migration ----------------------------------------------------------
def varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number, value):
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def entry(secret=b"12345678901234567890", name=b"Issuer:alice", issuer=b"", algorithm=1, digits=1, kind=2, counter=None):
    out = field(1, secret) + field(2, name) + (field(3, issuer) if issuer else b"")
    out += field(4, algorithm) + field(5, digits) + field(6, kind)
    return out + (field(7, counter) if counter is not None else b"")


def migration():
    uri = OTPAUTH["migration"]["uri"]
    payload = base64.b64decode(urllib.parse.unquote(uri.split("data=")[1]))
    write("migration", "vector-uri", b"\x00" + uri.encode())
    write("migration", "vector-payload", b"\x01" + payload)
    payloads = [
        field(1, entry(name=b"ACME:  bob@example.org", algorithm=3, digits=2)) + field(2, 1),
        field(1, entry(name=b"carol", issuer=b"Corp", algorithm=2, kind=1, counter=42)),
        field(1, entry(name=b"  dave", kind=0, algorithm=0, digits=0)) + field(15, 300) + field(17, b"xyz"),
        field(1, entry(algorithm=4)),                                # MD5: refused
        field(1, entry(kind=1, counter=(1 << 64) - 1)),              # negative counter
        field(1, entry(secret=b"")),
    ]
    for index, payload in enumerate(payloads):
        write("migration", f"payload-{index}", b"\x01" + payload)
    write("migration", "uri-form-decoded", b"\x00otpauth-migration://offline?data="
          + base64.b64encode(payloads[1]).replace(b"+", b" "))


# --- PSKC ------------------------------------------------------------------------------------
def pskc_files():
    for path in sorted(PSKC_DIR.glob("*.pskcxml")):
        write("pskc", path.name, path.read_bytes())
    write("pskc", "edge-processing-instruction", '<KeyContainer Version="1.0"><?pi?></KeyContainer>')
    write("pskc", "edge-latin1", '<?xml version="1.0" encoding="ISO-8859-1"?><KeyContainer Version="1.0">'
          .encode() + b"<!-- \xe9 --></KeyContainer>")
    try:
        import pskc
    except ImportError:
        print("python-pskc not installed: extra PSKC seeds not written (pip install python-pskc)")
        return
    key = bytes.fromhex("12345678901234567890123456789012")
    variants = [
        ("kw-aes128", lambda p: p.encryption.setup_preshared_key(key=key, algorithm="kw-aes128")),
        ("aes256-cbc-short-key", lambda p: p.encryption.setup_preshared_key(key=key * 2, algorithm="aes256-cbc")),
        ("pbkdf2-sha256-aes256", lambda p: p.encryption.setup_pbkdf2("qwerty", algorithm="aes256-cbc", iterations=2000,
                                                                     prf="hmac-sha256", salt=b"01234567")),
    ]
    for name, setup in variants:
        document = pskc.PSKC()
        totp = document.add_key(secret=b"12345678901234567890123", algorithm="urn:ietf:params:xml:ns:keyprov:pskc:totp",
                                response_length=8, time_interval=60, serial="987654321",
                                expiry_date=datetime.datetime(2035, 12, 31, tzinfo=datetime.timezone.utc),
                                issuer="Example", key_userid="alice")
        totp.policy.pin_usage = "Prepend"
        document.add_key(secret=b"1234567890123456789012345678901234567890", response_length=6, counter=42,
                         algorithm="urn:ietf:params:xml:ns:keyprov:pskc:hotp", algorithm_suite="HMAC-SHA256")
        setup(document)
        target = CORPUS / "pskc" / f"{name}.pskcxml"
        document.write(str(target))


# --- SDTID -----------------------------------------------------------------------------------
def sdtid():
    for letter in "AB":
        write("sdtid", f"vector-{letter}.sdtid", SECURID["tokens"][letter]["sdtid_xml"])
    text = SECURID["tokens"]["B"]["sdtid_xml"]
    write("sdtid", "edge-entities-cdata", text.replace("<DefDigits>8</DefDigits>", "<DefDigits><![CDATA[0x8]]></DefDigits>")
          .replace("TestOrigin", "Test&amp;&#x4F;rigin&#79;"))
    write("sdtid", "edge-two-tokens", text.replace("</TKN>", "</TKN>\n  <TKN><SN>12</SN><Seed>=AAAAAAAAAAAAAAAAAAAAAA==</Seed>"
                                                            "<Death>1999/12/31</Death><TokenMAC>AAAAAAAAAAAAAAAAAAAAAA==</TokenMAC></TKN>", 1))


# --- CTF -------------------------------------------------------------------------------------
PASSWORDS = ["asdf1234", "Correct horse", "Tr0ub4dor&3"]
DEVICES = ["a01c4380-fc01-4df0-b113-7fb98ec74694", "1234-5678-9012-3456", "ABCD-1234-efgh-5678", "d82c-467c-56fb-2058-edf8-add6"]


def ctf():
    seen = set()
    for vector in SECURID["vectors"]:
        if vector["kind"] == "sdtid" or vector["token"] in seen:
            continue
        seen.add(vector["token"])
        password = PASSWORDS.index(vector["password"]) if vector["password"] else 3
        device = DEVICES.index(vector["devid"]) if vector["devid"] else 4
        write("ctf", f"vector-{len(seen):02}", bytes([0, password | device << 2]) + vector["token"].encode())
    # Built strings (modes 1 and 2): any bytes make one; a few fixed ones to start from.
    for index in range(4):
        write("ctf", f"numeric-{index}", bytes([1]) + hashlib.sha256(b"numeric%d" % index).digest() * 2)
        write("ctf", f"base64-{index}", bytes([2]) + hashlib.sha512(b"base64%d" % index).digest() * 4)


# --- TokenImporter.parse ---------------------------------------------------------------------
def import_files():
    for path in sorted((CORPUS / "pskc").glob("*.pskcxml")):
        write("import", path.name, path.read_bytes())
    for letter in "AB":
        write("import", f"vector-{letter}.sdtid", SECURID["tokens"][letter]["sdtid_xml"])
    lines = ["# otpauth URIs", ""] + [uri["uri"] for uri in OTPAUTH["uris"]]
    write("import", "otpauth-lines", "\n".join(lines) + "\n")
    write("import", "migration-line", OTPAUTH["migration"]["uri"] + "\r\n")
    write("import", "ctf-lines", SECURID["exports"]["A-v2-android-devid"]["string"] + "\n"
          + SECURID["exports"]["A-v2-blocks"]["string"] + "\n")
    write("import", "bom-otpauth", b"\xef\xbb\xbf" + OTPAUTH["uris"][0]["uri"].encode())
    write("import", "doctype", '<!DOCTYPE KeyContainer [<!ENTITY a "b">]><KeyContainer>&a;</KeyContainer>')


# --- importer fields -------------------------------------------------------------------------
def import_fields():
    cases = [(0, "2035-12-31T00:00:00Z"), (0, "2000-02-29T12:34:56.789+05:30"), (0, "9999-12-31T24:00:00-14:00"),
             (0, "1970-01-01"), (1, "0x1A"), (1, "-017"), (1, "2147483647"), (1, "-2147483648"), (1, "08"),
             (2, "2035/12/31"), (2, "2000/2/29"), (2, "1900/02/29"), (3, "AQIDBAUGBwg="), (3, "EBESExQVFhcYGRobHB0eHw=="),
             (3, "a-_b"), (3, "QQ\n==")]
    for index, (mode, text) in enumerate(cases):
        write("import-fields", f"case-{index:02}", bytes([mode]) + text.encode())


# --- configuration ---------------------------------------------------------------------------
def config():
    write("config", "sample.conf", (ROOT / "packaging" / "securotp.conf").read_bytes())
    lines = ["window = 3", "hotp_lookahead=100", "resync_window = 1000", "next_code_after = 2", "deny = 0",
             "unlock_time = 31536000", "nullok = yes", "groups = wheel, !guests, adm*", "try_first_pass = on",
             "use_first_pass = off", "forward_pass = 1", "debug = true", "max_tokens = 100",
             "prompt = Verification code:", "database = /var/lib/securotp/securotp.db", "key_file = /etc/securotp/k"]
    write("config", "every-key.conf", "\r\n".join(["# every key"] + lines) + "\n")
    edge = ["window = 11", "conf = /etc/x", "groups = ,", "prompt =", "nullok = maybe", "unknown = 1", "no equals sign",
            "nullok debug window=3 groups=wheel,!guests prompt=Code: conf=/etc/securotp/x.conf state_dir=relative",
            "use_first_pass forward_pass"]
    for index, line in enumerate(edge):
        write("config", f"edge-{index}", line + "\n")


# --- OCRA ------------------------------------------------------------------------------------
def ocra():
    seen = set()
    for vector in OCRA:
        if vector["suite"] in seen:
            continue
        seen.add(vector["suite"])
        write("ocra", f"vector-{len(seen)}", f"{vector['suite']}\n{vector['question']}")
    edge = ["OCRA-1:HOTP-SHA1-0:QH64-T48H\n" + "f" * 64, "OCRA-1:HOTP-SHA512-10:C-QA64-PSHA512-S999-T59S\nabc",
            "OCRA-1:HOTP-SHA256-4:QN04-P-S-T\n0000", "OCRA-1:HOTP-SHA1-6:QN08-C\n1", "OCRA-2:HOTP-SHA1-6:QN08\n"]
    for index, text in enumerate(edge):
        write("ocra", f"edge-{index}", text)


# --- passcodes -------------------------------------------------------------------------------
def hotp(key, counter, digits, digest):
    mac = hmac.new(key, struct.pack(">Q", counter), digest).digest()
    offset = mac[-1] & 0x0F
    value = struct.unpack(">I", mac[offset:offset + 4])[0] & 0x7FFFFFFF
    return str(value % 10 ** digits).zfill(digits)


def passcode():
    now = 1_700_000_000   # the harness's clock; SecurID vectors exist for it
    codes = {vector["id"]: vector["tokencode"] for vector in SECURID["vectors"]}
    ocra_answer = next(v["otp"] for v in OCRA if v["suite"] == "OCRA-1:HOTP-SHA1-6:QN08" and v["question"] == "00000000")
    answers = [
        (0, 0, hotp(b"12345678901234567890", now // 30, 6, hashlib.sha1)),                   # TOTP
        (0, 1, "password" + hotp(b"12345678901234567890", now // 30 + 1, 6, hashlib.sha1)),   # forward_pass
        (0, 0, hotp(b"12345678901234567890123456789012", 7, 8, hashlib.sha256)),             # HOTP look-ahead
        (0, 0, hotp(b"12345678901234567890", now // 30 + 9, 6, hashlib.sha1)),               # resync band
        (0, 0, "1234" + codes["B-raw-1700000000"]),                                          # fob PIN + tokencode
        (0, 0, codes["A-pin-1700000000"]),                                                   # PINPad, PIN 1234
        (0, 0, ocra_answer),                                                                 # OCRA, challenge 00000000
        (0, 2, ocra_answer),                                                                 # ... not shown
        (0, 0, "ABCD-efgh-jkmn"),                                                            # recovery code
        (1, 0 << 2, hotp(b"12345678901234567890", now // 30 + 1, 6, hashlib.sha1)),           # next codes
        (1, 2 << 2, "1234" + codes["B-next-1700000000"]),
        (1, 3 << 2, codes["A-pin-1700000015"]),
        (1, 4 << 2, ""),                                                                     # OCRA has none
        (2, 0b0100101, "\x02\x06123456\x00123456"),                                          # matcher: prefix, empty code
        (2, 0b0100010, "\x01\x06123456" + "1234123456"),
    ]
    for index, (path, flags, answer) in enumerate(answers):
        write("passcode", f"answer-{index:02}", bytes([path, flags]) + answer.encode())


# --- push: approval assertions, device certificates, strict base64 (Tests/Vectors/push.json) ----
PUSH = load("push.json")


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def push():
    vector_key = b64url(PUSH["cases"][0]["public_key"])
    for index, case in enumerate(PUSH["cases"]):
        fields = [b64url(case["authenticator_data"]), b64url(case["client_data_json"]), b64url(case["signature"])]
        key = b64url(case["public_key"])
        flags = (1 if case["require_uv"] in (True, "True") else 0) | (0 if key == vector_key else 2)
        if flags & 2:
            fields.append(key)
        write("push-assertion", f"case-{index:02}", bytes([flags]) + b"".join(struct.pack(">H", len(f)) + f for f in fields))
    certificates = PUSH["certificates"]
    write("push-certificate", "ca-pem", b"\x00" + certificates["ca_public_key_pem"].encode())
    write("push-certificate", "ca-der", b"\x00" + base64.b64decode("".join(certificates["ca_public_key_pem"].splitlines()[1:-1])))
    for index, case in enumerate(certificates["cases"]):
        write("push-certificate", f"cert-{index:02}", b"\x01" + case["certificate"].encode())
    texts = [(0, c["certificate"]) for c in certificates["cases"]] + [(1, c[k]) for c in PUSH["cases"] for k in ("authenticator_data", "signature")]
    texts += [(0, ""), (0, "QQ=="), (0, "QR=="), (0, "QUI="), (0, "QUJD"), (1, "QQ"), (1, "QR"), (1, "Q"), (1, "-_-_"), (0, "-_=="), (0, "Q===")]
    for index, (variant, text) in enumerate(texts):
        write("push-base64", f"text-{index:02}", bytes([variant]) + text.encode())


# --- pam_u2f mapping files -----------------------------------------------------------------------
def mapping_file():
    """pam_u2f 1.4.0's own fixtures (Tests/Vectors/pam-u2f) and the shapes real files have."""
    for path in sorted((VECTORS / "pam-u2f" / "credentials").glob("*.cred.in")):
        write("mapping-file", "pam-u2f-" + path.name.removesuffix(".cred.in"), path.read_bytes().replace(b"@USERNAME@", b"alice"))
    kh = base64.b64encode(bytes(range(32))).decode()
    pk = base64.b64encode(bytes(range(1, 65))).decode()
    field = f"{kh},{pk},es256,+presence"
    shapes = [f"root:{field}\r\nbob:{field}:{field}", f"alice:{kh},{pk},es256\n", f"alice:{field}+foo,extra::\n",
              f"alice:{kh},{pk},ES256,+pin\n", f" alice:{field}\n#bob:{field}\nalice\n", f"alice:{field}\x00:{field}\n",
              f"alice:*,{pk},es256,+presence+verification\n:::\n\n", f"alice:{kh.replace('+', '-')},04{bytes(range(64)).hex()}\n"]
    for index, text in enumerate(shapes):
        write("mapping-file", f"shape-{index}", text.encode())
    write("mapping-file", "latin1", b"# caf\xe9\nj\xf6rg:" + field.encode() + b"\nalice:" + field.encode() + b"\n")


for generate in (push,) if __import__("sys").argv[1:] == ["push"] else (base32, otpauth, migration, pskc_files, sdtid, ctf, import_files, import_fields,
                                                                          config, ocra, passcode, push, mapping_file):
    generate()
print("corpus written to", CORPUS)
