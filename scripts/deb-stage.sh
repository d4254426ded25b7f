#!/usr/bin/env bash
# Builds what the Debian packages hold and stages it under DESTDIR at the installed paths
# (debian/rules runs it with debian/tmp; debian/*.install pick the files up).
# - securotp, securotpd, securotp-authenticator: release builds with the Swift runtime and
#   Foundation linked statically (--static-swift-stdlib): the packages need no Swift runtime,
#   only Debian libraries (libc6, libstdc++6, libssl3, libsqlite3-0, libxml2, ...).
# - pam_securotp.so: the Embedded Swift module (no Swift runtime at all), linked against the
#   shared libcrypto and libsqlite3 (SECUROTP_MODULE_LINK=dynamic): a Debian security update
#   of OpenSSL or SQLite then reaches the module without a rebuild, at ~2 ms per login
#   (bench/README.md). `make install` keeps linking them statically.
# - shell completions for bash, zsh and fish, generated from the command trees.
# Usage: scripts/deb-stage.sh build            (debian/rules, dh_auto_build)
#        scripts/deb-stage.sh install DESTDIR  (dh_auto_install; dh_prep empties debian/tmp between)
# SWIFT=/path/to/swift; DEB_HOST_MULTIARCH.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: $0 build | install DESTDIR}
swift=${SWIFT:-swift}
multiarch=${DEB_HOST_MULTIARCH:-$(dpkg-architecture -qDEB_HOST_MULTIARCH)}
export PATH="$(dirname "$(command -v "$swift")"):$PATH"

bin=$("$swift" build -c release --static-swift-stdlib --show-bin-path)
if [ "$mode" = build ]; then
  scripts/module-static-libs.sh
  "$swift" build -c release --static-swift-stdlib
  SECUROTP_MODULE_LINK=dynamic SECUROTP_EMBEDDED_OUT=.build/embedded-deb pam/embedded/build.sh >/dev/null
  exit 0
fi
[ "$mode" = install ] || { echo "usage: $0 build | install DESTDIR" >&2; exit 64; }
dest=${2:?usage: $0 install DESTDIR}
case "$dest" in /*) ;; *) dest=$PWD/$dest ;; esac

for program in securotp securotpd securotp-authenticator; do
  # A Swift runtime library needed at run time would be missing on the target: refuse it.
  if objdump -p "$bin/$program" | awk '$1 == "NEEDED"' | grep -E 'libswift|libFoundation|libdispatch|libBlocksRuntime|lib_Foundation'; then
    echo "deb-stage: $program needs a Swift runtime library (above); build with --static-swift-stdlib" >&2
    exit 1
  fi
done
if objdump -p .build/embedded-deb/pam_securotp.so | awk '$1 == "NEEDED"' | grep -E 'libswift'; then
  echo "deb-stage: pam_securotp.so needs the Swift runtime" >&2; exit 1
fi

rm -rf "$dest"
install -d "$dest/lib/$multiarch/security" "$dest/usr/sbin" "$dest/usr/bin" "$dest/etc/securotp" \
  "$dest/usr/share/pam-configs" "$dest/lib/systemd/system" \
  "$dest/usr/share/bash-completion/completions" "$dest/usr/share/zsh/vendor-completions" \
  "$dest/usr/share/fish/vendor_completions.d"
install -m 0644 .build/embedded-deb/pam_securotp.so "$dest/lib/$multiarch/security/pam_securotp.so"
install -m 0755 "$bin/securotp" "$bin/securotpd" "$dest/usr/sbin/"
install -m 0755 "$bin/securotp-authenticator" "$dest/usr/bin/"
install -m 0644 packaging/pam-configs/securotp "$dest/usr/share/pam-configs/securotp"
install -m 0600 packaging/securotp.conf packaging/securotpd.conf "$dest/etc/securotp/"
# The unit as packaged: programs in /usr/sbin, the guide where securotpd's package puts it.
sed -e 's|/usr/local/sbin/|/usr/sbin/|g' \
    -e 's|file:///usr/local/share/doc/securotp/validator.md|file:///usr/share/doc/securotpd/validator.md|' \
    -e 's|^# securotpd — the securotp validator.*|# securotpd — the securotp validator (Debian package securotpd).|' \
    -e 's|^# then: systemctl enable --now securotpd.|# Not enabled on install: configure, then systemctl enable --now securotpd.|' \
    packaging/systemd/securotpd.service > "$dest/lib/systemd/system/securotpd.service"
for program in securotp securotp-authenticator; do
  # Sourced by bash-completion, not run: no #! line.
  "$bin/$program" --generate-completion-script bash | sed '1{/^#!/d}' > "$dest/usr/share/bash-completion/completions/$program"
  "$bin/$program" --generate-completion-script zsh > "$dest/usr/share/zsh/vendor-completions/_$program"
  "$bin/$program" --generate-completion-script fish > "$dest/usr/share/fish/vendor_completions.d/$program.fish"
done
