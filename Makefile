# securotp — see README.md. `make demo` and `make test` install the Debian packages they need.
#
# The PAM module is built twice from the same sources: as Embedded Swift (pam/embedded/build.sh,
# .build/embedded/pam_securotp.so: no Swift runtime; this is the one installed, demoed and
# benchmarked) and by SwiftPM with the static Swift runtime (.build/release/libpam_securotp.so,
# for `swift build` users). The integration tests run against both (make test: the whole suite
# against the Embedded module, a login per mode against the SwiftPM one).
# swift from PATH, else the toolchain's usual place (`sudo make …` runs with sudo's secure_path,
# which does not name it).
SWIFT ?= $(or $(shell command -v swift 2>/dev/null),$(wildcard /opt/swift/usr/bin/swift),swift)
PREFIX ?= /usr/local
PAM_DIR ?= $(shell dpkg-architecture -qDEB_HOST_MULTIARCH >/dev/null 2>&1 && echo /lib/$$(dpkg-architecture -qDEB_HOST_MULTIARCH)/security || echo /lib/security)
# SwiftPM's link to the release products (x86_64-unknown-linux-gnu/release on this machine).
BIN = $(CURDIR)/.build/release
MODULE = $(CURDIR)/.build/embedded/pam_securotp.so

# Fuzzing: every parser's libFuzzer harness for FUZZ_SECONDS each (fuzz/README.md).
FUZZ_SECONDS ?= 20

.PHONY: all build softfido demo test test-fast test-deb deb bench bench-timing bench-validator bench-push fuzz install uninstall clean

all: build

# The programs link the Swift runtime and Foundation statically: what `make install` copies runs
# on a machine without Swift.
build:
	scripts/install-deps.sh build
	scripts/module-static-libs.sh
	$(SWIFT) build -c release --static-swift-stdlib
	PATH="$(dir $(SWIFT)):$$PATH" pam/embedded/build.sh

# Debian packages (debian/, debhelper) in dist/: libpam-securotp, securotp, securotpd,
# securotp-authenticator. The version comes from the tree (scripts/deb-changelog.sh).
deb:
	scripts/install-deps.sh deb
	scripts/deb-build.sh

# The packages on a clean Debian 12 root: apt install, pam-auth-update, sudo, su, login, sshd,
# upgrade, remove, purge (tests/packaging/README.md).
test-deb: deb
	scripts/install-deps.sh test-deb
	tests/packaging/clean-root-test.sh

# The test-only software FIDO2 key (tests/softfido/softfido.c, docs/fido.md): LD_PRELOAD it with
# SOFTFIDO_STATE=FILE and libfido2 programs see a key "softfido:0". No product links it.
SOFTFIDO = $(CURDIR)/.build/softfido/libsoftfido.so

softfido: $(SOFTFIDO)

$(SOFTFIDO): tests/softfido/softfido.c tests/softfido/softfido.h
	scripts/install-deps.sh softfido
	mkdir -p $(dir $@)
	$(CC) -shared -fPIC -O2 -Wall -Wextra -Wno-deprecated-declarations -o $@ tests/softfido/softfido.c -lfido2 -lcrypto -ldl

demo:
	scripts/install-deps.sh demo
	$(MAKE) --no-print-directory build
	SECUROTP_MODULE="$(MODULE)" scripts/demo.sh

# Integration tests drive the release artifacts (what gets installed), so build those first.
# The whole integration suite runs against the Embedded Swift module (the one installed, demoed
# and benchmarked); the SwiftPM module, the same sources built the other way, gets its build
# contract, one login per mode, failing closed and the hostile validator's bounds
# (SWIFTPM_MODULE_SUITES): the whole suite twice cost CI 8 min.
# Three test processes, not one: integration tests wait on child processes on the test's own
# thread, and in one process with the in-process tests they held Swift's cooperative pool (one
# thread per core) for minutes, starving the validator tests' timing.
SWIFTPM_MODULE_SUITES = IntegrationTests\.(BuildContractTests|LoginTests|StackTests|FailClosedTests|RemoteLoginTests|HostMethodBoundTests|PushLoginTests|FidoLoginTests)/
test:
	scripts/install-deps.sh test
	scripts/postgres-test.sh
	$(MAKE) --no-print-directory build softfido
	$(SWIFT) build --build-tests
	SECUROTP_BIN_DIR="$(BIN)" $(SWIFT) test --skip-build --skip IntegrationTests
	SECUROTP_BIN_DIR="$(BIN)" SECUROTP_MODULE="$(MODULE)" $(SWIFT) test --skip-build --filter IntegrationTests
	SECUROTP_BIN_DIR="$(BIN)" $(SWIFT) test --skip-build --filter '$(SWIFTPM_MODULE_SUITES)'

# The inner loop: unit and in-process tests on SQLite alone — no release build, no PostgreSQL,
# no browser, no integration suite (README: how long it takes).
test-fast:
	scripts/install-deps.sh test-fast
	$(SWIFT) build --build-tests
	SECUROTP_TEST_POSTGRES=off $(SWIFT) test --skip-build --skip IntegrationTests

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

# Push approval: device approves -> login returns, securotp vs privacyIDEA's push token in
# poll-only mode, and one securotpd holding 10,000 waiting logins (bench/README.md).
# privacyIDEA comes from PyPI into the venv bench-validator uses.
bench-push:
	scripts/install-deps.sh bench
	$(MAKE) --no-print-directory build
	SECUROTPD_BIN="$(BIN)/securotpd" SECUROTP_CLI="$(BIN)/securotp" PAM_CHECK="$(BIN)/pam-check" \
		SECUROTP_MODULE="$(MODULE)" bench/push/run.sh

# `make build` first as yourself; `sudo make install` then builds nothing when it is up to date
# and finds swift even where sudo's secure_path hides it.
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
	install -d $(DESTDIR)$(PREFIX)/share/doc/securotp
	install -m 0644 docs/validator.md docs/configuration.md docs/rollout.md $(DESTDIR)$(PREFIX)/share/doc/securotp/
	[ -e $(DESTDIR)/etc/securotp/securotp.conf ] || install -m 0600 packaging/securotp.conf $(DESTDIR)/etc/securotp/securotp.conf
	[ -e $(DESTDIR)/etc/securotp/securotpd.conf ] || install -m 0600 packaging/securotpd.conf $(DESTDIR)/etc/securotp/securotpd.conf

# Refuses while a PAM stack still names the module (it would refuse every login once the file is
# gone); FORCE=yes removes anyway. Lists what stays: the key, the database, the configuration.
uninstall:
	PAM_DIR_ETC=$(DESTDIR)/etc/pam.d scripts/pam-stacks-check.sh uninstall $(if $(filter yes,$(FORCE)),--force)
	rm -f $(DESTDIR)$(PAM_DIR)/pam_securotp.so $(DESTDIR)$(PREFIX)/sbin/securotp $(DESTDIR)$(PREFIX)/bin/securotp-authenticator \
	      $(DESTDIR)$(PREFIX)/sbin/securotpd $(DESTDIR)/etc/systemd/system/securotpd.service $(DESTDIR)$(PREFIX)/share/man/man8/securotpd.8 \
	      $(DESTDIR)$(PREFIX)/share/man/man8/pam_securotp.8 $(DESTDIR)$(PREFIX)/share/man/man8/securotp.8 \
	      $(DESTDIR)$(PREFIX)/share/man/man1/securotp-authenticator.1
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/securotp
	@echo "Kept (remove by hand if you mean it): /etc/securotp/securotp.key (without it no seed opens),"
	@echo "  /var/lib/securotp/ (token database, offline codes), /etc/securotp/securotp.conf, securotpd.conf, host credentials"

clean:
	rm -rf .build dist bench/pam/out bench/validator/out bench/validator/vbench
