#!/usr/bin/env bash
# Builds pam_securotp.so as Embedded Swift: the same sources as the SwiftPM `pam_securotp`
# product, but without the Swift runtime — no runtime start-up code (the static runtime reads
# /proc/self/maps and parses SWIFT_* environment variables when it is loaded), no libstdc++,
# a module of a few hundred KB that loads like a C module. bench/README.md has the numbers.
#
# Output: .build/embedded/pam_securotp.so (SECUROTP_EMBEDDED_OUT=DIR: DIR/pam_securotp.so).
# Usage: pam/embedded/build.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${SECUROTP_EMBEDDED_OUT:-.build/embedded}
mkdir -p "$out"
swiftc=$(command -v swiftc)
clang=$(dirname "$swiftc")/clang

# C targets: their include/ directories hold the module maps Swift imports.
includes=()
for c in CPAM COpenSSL CSQLite CPosix CHTTP CFido2; do includes+=(-I "Sources/$c/include"); done
# CHTTP needs libcurl's headers only: libcurl itself is dlopen'd on first use (remote mode).
# CFido2 likewise needs libfido2's headers only (FIDO security keys, docs/fido.md).
for c in CPAM COpenSSL CSQLite CHTTP CFido2; do
  "$clang" -c -O2 -fPIC -fvisibility=hidden -I "Sources/$c/include" Sources/$c/*.c -o "$out/$c.o"
done

swift_flags=(
  -enable-experimental-feature Embedded -wmo -Osize -parse-as-library
  -Xfrontend -disable-implicit-concurrency-module-import
  -Xfrontend -disable-implicit-string-processing-module-import
  -Xcc -fPIC -I "$out" "${includes[@]}"
)
# One module per target, in dependency order, as SwiftPM would.
# Sources may sit in sub-folders (SecurOTPEngine/Verification), which SwiftPM includes too.
build_module() {
  local name=$1 dir=$2 sources
  mapfile -t sources < <(find "$dir" -name '*.swift' | sort)
  "$swiftc" "${swift_flags[@]}" -module-name "$name" -emit-module -emit-module-path "$out/$name.swiftmodule" \
    -emit-object -o "$out/$name.o" "${sources[@]}"
}
build_module SecurOTPCore Sources/SecurOTPCore
build_module SecurOTPSecurID Sources/SecurOTPSecurID
build_module SecurOTPEngine Sources/SecurOTPEngine
build_module SecurOTPStore Sources/SecurOTPStore
build_module SecurOTPPAM Sources/SecurOTPPAM
build_module PAMModule pam/pam_securotp

# Static libcrypto/libsqlite3 when available (scripts/module-static-libs.sh), else shared;
# SECUROTP_MODULE_LINK=dynamic always links the shared ones (the Debian package does).
libs=(-lcrypto -lsqlite3)
[ -d .build/module-static-libs ] && [ "${SECUROTP_MODULE_LINK:-static}" != dynamic ] && libs=(-L.build/module-static-libs -l:libcrypto.a -l:libsqlite3.a)
# String comparison and hashing need the Unicode tables the full runtime would carry.
unicode=$(dirname "$swiftc")/../lib/swift/embedded/x86_64-unknown-linux-gnu/libswiftUnicodeDataTables.a
"$clang" -shared -fuse-ld=lld -o "$out/pam_securotp.so" \
  "$out"/PAMModule.o "$out"/SecurOTPPAM.o "$out"/SecurOTPStore.o "$out"/SecurOTPEngine.o "$out"/SecurOTPSecurID.o "$out"/SecurOTPCore.o \
  "$out"/CPAM.o "$out"/COpenSSL.o "$out"/CSQLite.o "$out"/CHTTP.o "$out"/CFido2.o \
  "$unicode" "${libs[@]}" -lpam -lm \
  -Wl,--version-script=pam/pam_securotp/exports.map -Wl,-z,nodelete -Wl,-z,now -Wl,-z,relro \
  -Wl,-z,defs -Wl,--gc-sections -Wl,--as-needed
echo "$out/pam_securotp.so"
