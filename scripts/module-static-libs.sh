#!/usr/bin/env bash
# Makes .build/module-static-libs/ with links to the static libcrypto, libsqlite3 and
# libstdc++ archives. Package.swift puts this directory first on the module's library search
# path, so pam_securotp.so carries the few objects it uses instead of loading the shared
# libraries into every sshd/sudo process (measured: ~2.2 ms per process; bench/README.md).
# Trade-off: after an OpenSSL or SQLite security update, rebuild and reinstall the module.
# Set SECUROTP_MODULE_LINK=dynamic to skip this and link the shared libraries.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.build/module-static-libs
rm -rf "$dir"
[ "${SECUROTP_MODULE_LINK:-static}" = dynamic ] && exit 0
mkdir -p "$dir"
for archive in libcrypto.a libsqlite3.a libstdc++.a; do
  path=$(gcc -print-file-name="$archive")
  if [ "$path" = "$archive" ] || [ ! -f "$path" ]; then
    echo "module-static-libs: $archive not found (install libssl-dev, libsqlite3-dev, libstdc++-12-dev); linking the module dynamically" >&2
    rm -rf "$dir"
    exit 0
  fi
  ln -s "$path" "$dir/$archive"
done
