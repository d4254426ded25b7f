# securotp — see README.md. `make demo` and `make test` install the Debian packages they need.
SWIFT ?= swift
PREFIX ?= /usr/local
PAM_DIR ?= $(shell dpkg-architecture -qDEB_HOST_MULTIARCH >/dev/null 2>&1 && echo /lib/$$(dpkg-architecture -qDEB_HOST_MULTIARCH)/security || echo /lib/security)
BIN = $(shell $(SWIFT) build -c release --show-bin-path)

.PHONY: all build deps demo test unit-test integration-test bench install uninstall clean

all: build

build:
	scripts/install-deps.sh build
	scripts/module-static-libs.sh
	$(SWIFT) build -c release

demo:
	scripts/install-deps.sh demo
	scripts/module-static-libs.sh
	$(SWIFT) build -c release
	scripts/demo.sh

# Integration tests drive the release artifacts (what gets installed), so build those first.
test:
	scripts/install-deps.sh test
	scripts/module-static-libs.sh
	$(SWIFT) build -c release
	SECUROTP_BIN_DIR="$(BIN)" $(SWIFT) test

bench:
	scripts/install-deps.sh bench
	scripts/module-static-libs.sh
	$(SWIFT) build -c release
	bench/pam/run.sh

install: build
	install -d $(DESTDIR)$(PAM_DIR) $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)/etc/securotp $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0644 -s $(BIN)/libpam_securotp.so $(DESTDIR)$(PAM_DIR)/pam_securotp.so
	install -m 0755 -s $(BIN)/securotp $(DESTDIR)$(PREFIX)/sbin/securotp
	install -m 0644 docs/man/pam_securotp.8 docs/man/securotp.8 $(DESTDIR)$(PREFIX)/share/man/man8/
	[ -e $(DESTDIR)/etc/securotp/securotp.conf ] || install -m 0644 packaging/securotp.conf $(DESTDIR)/etc/securotp/securotp.conf

uninstall:
	rm -f $(DESTDIR)$(PAM_DIR)/pam_securotp.so $(DESTDIR)$(PREFIX)/sbin/securotp \
	      $(DESTDIR)$(PREFIX)/share/man/man8/pam_securotp.8 $(DESTDIR)$(PREFIX)/share/man/man8/securotp.8

clean:
	rm -rf .build bench/pam/out
