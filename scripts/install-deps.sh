#!/usr/bin/env bash
# Installs the Debian packages securotp needs to build, test, demo or benchmark — only the
# missing ones, so a second run does nothing. Usage: scripts/install-deps.sh build|test|softfido|demo|bench|fuzz|deb|test-deb
set -euo pipefail

# libcurl4-openssl-dev: headers only; libcurl4: the library the module and CLI dlopen
# (libcurl.so.4) when they ask a validator. libfido2-dev: headers only as well (libfido2.so.1
# is dlopen'd when a user with a FIDO security key logs in, docs/fido.md).
build=(libpam0g-dev libssl-dev libsqlite3-dev libcurl4-openssl-dev libcurl4 libfido2-dev)
# postgresql: the validator's PostgreSQL tests (scripts/postgres-test.sh starts it); openssl:
# test certificates; curl: racing requests at validator nodes; strace: the fsyncs of a login;
# sqlite3: stores made older or damaged on purpose; libnss-wrapper: a validator name with an
# IPv6 and an IPv4 address, without touching /etc/hosts (NSS_WRAPPER_HOSTS).
# softfido: the test-only software FIDO2 key (make softfido) builds against libfido2's headers.
softfido=(libfido2-dev libssl-dev)
# fido2-tools, pamu2fcfg, libpam-u2f: Debian's FIDO tools and pam_u2f.so as independent parties
# against the soft key and the module (docs/fido.md).
# chromium, python3-venv: the phone page's tests drive Debian's chromium with Playwright from
# PyPI, in its own venv (.build/venv, made below; it downloads no browser).
test=("${build[@]}" "${softfido[@]}" fido2-tools pamu2fcfg libpam-u2f oathtool zbar-tools openssh-server sshpass stoken python3-pip python3-yaml python3-cryptography postgresql postgresql-client openssl curl strace sqlite3 libnss-wrapper chromium python3-venv libfaketime)
# test-fast: what the unit and in-process tests use (make test-fast): no PostgreSQL, browser,
# sshd or FIDO tools.
test_fast=("${build[@]}" oathtool zbar-tools stoken python3-pip python3-yaml python3-cryptography openssl curl sqlite3)
demo=("${build[@]}" oathtool)
# bench: bench/pam (pamtester, hyperfine, the peer modules) and bench/validator (curl, openssl,
# strace for the fsync count; python3-venv for privacyIDEA, which bench/validator/run.sh installs
# from PyPI, pinned, into its own venv under bench/validator/out/ rather than the system python:
# it pins its own dependency versions; postgresql for securotpd's PostgreSQL backend);
# python3-cryptography: bench/push plays the device (P-256 signatures) with the system python.
bench=("${build[@]}" oathtool pamtester hyperfine libpam-google-authenticator libpam-oath curl openssl strace python3-venv postgresql python3-cryptography)
# libFuzzer, AddressSanitizer and lld come with the Swift toolchain; the PSKC harnesses load
# FoundationXML, which needs libxml2. (fuzz/corpus/generate.py, not run by CI, uses PyPI python-pskc.)
fuzz=("${build[@]}" libxml2)
# deb: make deb (debhelper builds, lintian checks; libxml2-dev: the static Foundation's XML
# part links libxml2). test-deb: the clean-root test (mmdebstrap builds a Debian 12 root from
# the archive; systemd-analyze checks the unit offline).
deb=("${build[@]}" libxml2-dev debhelper dpkg-dev fakeroot lintian)
test_deb=(mmdebstrap systemd tmux)

case "${1:-build}" in
  build) wanted=("${build[@]}") ;;
  test) wanted=("${test[@]}") ;;
  test-fast) wanted=("${test_fast[@]}") ;;
  softfido) wanted=("${softfido[@]}") ;;
  demo) wanted=("${demo[@]}") ;;
  bench) wanted=("${bench[@]}") ;;
  fuzz) wanted=("${fuzz[@]}") ;;
  deb) wanted=("${deb[@]}") ;;
  test-deb) wanted=("${deb[@]}" "${test_deb[@]}") ;;
  *) echo "usage: $0 build|test|test-fast|softfido|demo|bench|fuzz|deb|test-deb" >&2; exit 64 ;;
esac

# PyPI tools the tests use as independent oracles (no Debian packages exist for them).
pypi_test=(oath python-pskc cryptography)
playwright_version=1.65.0
if [ "${1:-build}" = test ] || [ "${1:-build}" = test-fast ]; then
  for module in "${pypi_test[@]}"; do
    import=${module//-/_}; [ "$module" = python-pskc ] && import=pskc
    python3 -c "import $import" 2>/dev/null && continue
    echo "Installing PyPI package: $module"
    python3 -m pip install -q "$module" 2>/dev/null || python3 -m pip install -q --break-system-packages "$module"
  done
fi

missing=()
for package in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing Debian packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Playwright for the phone page's browser tests (Tests/IntegrationTests/PhonePageTests.swift):
# a venv under .build, pinned, never the system python; it drives /usr/bin/chromium.
if [ "${1:-build}" = test ]; then
  venv="$(cd "$(dirname "$0")/.." && pwd)/.build/venv"
  [ -x "$venv/bin/python3" ] || python3 -m venv "$venv"
  if ! "$venv/bin/python3" -c "import playwright" 2>/dev/null; then
    echo "Installing PyPI package into $venv: playwright"
    "$venv/bin/python3" -m pip install -q "playwright==$playwright_version"
  fi
fi
