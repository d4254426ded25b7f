#!/usr/bin/env bash
# Builds pam_securotp.so as Embedded Swift: the same sources as the SwiftPM `pam_securotp`
# product, but without the Swift runtime — no runtime start-up code (the static runtime reads
# /proc/self/maps and parses SWIFT_* environment variables when it is loaded), no libstdc++,
# a module of a few hundred KB that loads like a C module. bench/README.md has the numbers.
#
# Output: .build/embedded/pam_securotp.so (SECUROTP_EMBEDDED_OUT=DIR: DIR/pam_securotp.so).
# The objects are compiled once into .build/embedded-objects and reused while nothing they are
# made from changed (a hash of the compiler, this script, every source and header, and the
# installed versions of the Debian packages whose headers the C parts include): the Debian
# package links the same objects again, dynamically, and a second compile cost CI ~4 min.
# Usage: pam/embedded/build.sh
set -euo pipefail
script=$(realpath "$0")
cd "$(dirname "$script")/../.."
out=${SECUROTP_EMBEDDED_OUT:-.build/embedded}
objects=.build/embedded-objects
mkdir -p "$out" "$objects"
swiftc=$(command -v swiftc)
clang=$(dirname "$swiftc")/clang

c_targets=(CPAM COpenSSL CSQLite CHTTP CFido2)
swift_modules=(SecurOTPCore:Sources/SecurOTPCore SecurOTPSecurID:Sources/SecurOTPSecurID SecurOTPEngine:Sources/SecurOTPEngine
               SecurOTPStore:Sources/SecurOTPStore SecurOTPPAM:Sources/SecurOTPPAM PAMModule:pam/pam_securotp)
inputs_hash() {
  { "$swiftc" --version 2>&1; sha256sum "$script" "$swiftc" "$clang"
    dpkg-query -W libpam0g-dev libssl-dev libsqlite3-dev libcurl4-openssl-dev libfido2-dev 2>&1 || true
    find Sources/CPAM Sources/COpenSSL Sources/CSQLite Sources/CPosix Sources/CHTTP Sources/CFido2 \
         Sources/SecurOTPCore Sources/SecurOTPSecurID Sources/SecurOTPEngine Sources/SecurOTPStore Sources/SecurOTPPAM \
         pam/pam_securotp -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; } | sha256sum | cut -d' ' -f1
}
# One build at a time uses the objects (make build and the Debian package's stage may overlap).
exec 9>"$objects/.lock"
flock 9
hash=$(inputs_hash)
if [ "$(cat "$objects/inputs.sha256" 2>/dev/null)" != "$hash" ]; then
rm -f "$objects/inputs.sha256"

# C targets: their include/ directories hold the module maps Swift imports.
includes=()
for c in CPAM COpenSSL CSQLite CPosix CHTTP CFido2; do includes+=(-I "Sources/$c/include"); done
# CHTTP needs libcurl's headers only: libcurl itself is dlopen'd on first use (remote mode).
# CFido2 likewise needs libfido2's headers only (FIDO security keys, docs/fido.md).
for c in "${c_targets[@]}"; do
  "$clang" -c -O2 -fPIC -fvisibility=hidden -I "Sources/$c/include" Sources/$c/*.c -o "$objects/$c.o"
done

swift_flags=(
  -enable-experimental-feature Embedded -wmo -Osize -parse-as-library
  -Xfrontend -disable-implicit-concurrency-module-import
  -Xfrontend -disable-implicit-string-processing-module-import
  -Xcc -fPIC -I "$objects" "${includes[@]}"
)
# One module per target, in dependency order, as SwiftPM would.
# Sources may sit in sub-folders (SecurOTPEngine/Verification), which SwiftPM includes too.
build_module() {
  local name=$1 dir=$2 sources
  mapfile -t sources < <(find "$dir" -name '*.swift' | sort)
  "$swiftc" "${swift_flags[@]}" -module-name "$name" -emit-module -emit-module-path "$objects/$name.swiftmodule" \
    -emit-object -o "$objects/$name.o" "${sources[@]}"
}
for module in "${swift_modules[@]}"; do build_module "${module%%:*}" "${module#*:}"; done
echo "$hash" > "$objects/inputs.sha256"
fi

# Static libcrypto/libsqlite3 when available (scripts/module-static-libs.sh), else shared;
# SECUROTP_MODULE_LINK=dynamic always links the shared ones (the Debian package does).
libs=(-lcrypto -lsqlite3)
[ -d .build/module-static-libs ] && [ "${SECUROTP_MODULE_LINK:-static}" != dynamic ] && libs=(-L.build/module-static-libs -l:libcrypto.a -l:libsqlite3.a)
# String comparison and hashing need the Unicode tables the full runtime would carry.
unicode=$(dirname "$swiftc")/../lib/swift/embedded/x86_64-unknown-linux-gnu/libswiftUnicodeDataTables.a
"$clang" -shared -fuse-ld=lld -o "$out/pam_securotp.so" \
  "$objects"/PAMModule.o "$objects"/SecurOTPPAM.o "$objects"/SecurOTPStore.o "$objects"/SecurOTPEngine.o "$objects"/SecurOTPSecurID.o "$objects"/SecurOTPCore.o \
  "$objects"/CPAM.o "$objects"/COpenSSL.o "$objects"/CSQLite.o "$objects"/CHTTP.o "$objects"/CFido2.o \
  "$unicode" "${libs[@]}" -lpam -lm \
  -Wl,--version-script=pam/pam_securotp/exports.map -Wl,-z,nodelete -Wl,-z,now -Wl,-z,relro \
  -Wl,-z,defs -Wl,--gc-sections -Wl,--as-needed
echo "$out/pam_securotp.so"
