# securotp — see README.md. `make demo` and `make test` install the Debian packages they need.
#
# The PAM module is built twice from the same sources: as Embedded Swift (pam/embedded/build.sh,
# .build/embedded/pam_securotp.so: no Swift runtime; this is the one installed, demoed and
# benchmarked) and by SwiftPM with the static Swift runtime (.build/release/libpam_securotp.so,
# for `swift build` users). The integration tests run against both.
SWIFT ?= swift
PREFIX ?= /usr/local
PAM_DIR ?= $(shell dpkg-architecture -qDEB_HOST_MULTIARCH >/dev/null 2>&1 && echo /lib/$$(dpkg-architecture -qDEB_HOST_MULTIARCH)/security || echo /lib/security)
BIN = $(shell $(SWIFT) build -c release --show-bin-path)
MODULE = $(CURDIR)/.build/embedded/pam_securotp.so

# Fuzzing: every parser's libFuzzer harness for FUZZ_SECONDS each (fuzz/README.md).
FUZZ_SECONDS ?= 20

.PHONY: all build demo test bench bench-timing bench-validator fuzz install uninstall clean

all: build

build:
	scripts/install-deps.sh build
	scripts/module-static-libs.sh
	$(SWIFT) build -c release
	pam/embedded/build.sh

demo:
	scripts/install-deps.sh demo
	$(MAKE) --no-print-directory build
	SECUROTP_MODULE="$(MODULE)" scripts/demo.sh

# Integration tests drive the release artifacts (what gets installed), so build those first;
# then the integration suite runs once more against the Embedded Swift module.
test:
	scripts/install-deps.sh test
	scripts/postgres-test.sh
	$(MAKE) --no-print-directory build
	SECUROTP_BIN_DIR="$(BIN)" $(SWIFT) test
	SECUROTP_BIN_DIR="$(BIN)" SECUROTP_MODULE="$(MODULE)" $(SWIFT) test --skip-build --filter IntegrationTests

# Built with swiftc, not SwiftPM (no fuzzer mode there); .build/fuzz/ holds binaries, corpora, crashes.
fuzz:
	scripts/install-deps.sh fuzz
	fuzz/build.sh
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh

bench:
	scripts/install-deps.sh bench
	$(MAKE) --no-print-directory build
	SECUROTP_MODULE="$(MODULE)" bench/pam/run.sh

# What a refused login costs per kind of user (token, none, unknown, locked, recovery-code guesses).
bench-timing:
	scripts/install-deps.sh build
	$(MAKE) --no-print-directory build
	SECUROTP_MODULE="$(MODULE)" SECUROTP_CLI="$(BIN)/securotp" bench/pam/user-timing.sh

# securotpd (SQLite and PostgreSQL) vs privacyIDEA over HTTP on loopback (bench/README.md).
# privacyIDEA comes from PyPI into a venv under bench/validator/out/.
bench-validator:
	scripts/install-deps.sh bench
	$(MAKE) --no-print-directory build
	SECUROTPD_BIN="$(BIN)/securotpd" SECUROTP_CLI="$(BIN)/securotp" bench/validator/run.sh

install: build
	install -d $(DESTDIR)$(PAM_DIR) $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin $(DESTDIR)/etc/securotp \
	           $(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 -s $(MODULE) $(DESTDIR)$(PAM_DIR)/pam_securotp.so
	install -m 0755 -s $(BIN)/securotp $(DESTDIR)$(PREFIX)/sbin/securotp
	install -m 0755 -s $(BIN)/securotp-authenticator $(DESTDIR)$(PREFIX)/bin/securotp-authenticator
	install -m 0755 -s $(BIN)/securotpd $(DESTDIR)$(PREFIX)/sbin/securotpd
	install -d $(DESTDIR)/etc/systemd/system
	install -m 0644 packaging/systemd/securotpd.service $(DESTDIR)/etc/systemd/system/securotpd.service
	install -m 0644 docs/man/pam_securotp.8 docs/man/securotp.8 docs/man/securotpd.8 $(DESTDIR)$(PREFIX)/share/man/man8/
	install -m 0644 docs/man/securotp-authenticator.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	[ -e $(DESTDIR)/etc/securotp/securotp.conf ] || install -m 0600 packaging/securotp.conf $(DESTDIR)/etc/securotp/securotp.conf
	[ -e $(DESTDIR)/etc/securotp/securotpd.conf ] || install -m 0600 packaging/securotpd.conf $(DESTDIR)/etc/securotp/securotpd.conf

uninstall:
	rm -f $(DESTDIR)$(PAM_DIR)/pam_securotp.so $(DESTDIR)$(PREFIX)/sbin/securotp $(DESTDIR)$(PREFIX)/bin/securotp-authenticator \
	      $(DESTDIR)$(PREFIX)/sbin/securotpd $(DESTDIR)/etc/systemd/system/securotpd.service $(DESTDIR)$(PREFIX)/share/man/man8/securotpd.8 \
	      $(DESTDIR)$(PREFIX)/share/man/man8/pam_securotp.8 $(DESTDIR)$(PREFIX)/share/man/man8/securotp.8 \
	      $(DESTDIR)$(PREFIX)/share/man/man1/securotp-authenticator.1

clean:
	rm -rf .build bench/pam/out bench/validator/out bench/validator/vbench
