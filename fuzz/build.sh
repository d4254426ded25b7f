#!/usr/bin/env bash
# Builds the libFuzzer harnesses in fuzz/harnesses/ into .build/fuzz/bin/. SwiftPM has no fuzzer
# mode, so this compiles the targets' sources with swiftc (the C shims with clang) the way
# pam/embedded/build.sh does, with libFuzzer's coverage instrumentation and AddressSanitizer
# (FUZZ_SANITIZERS, default "fuzzer,address") and -enable-testing, so harnesses can reach the
# parsers' internal pieces through @testable import.
#
# Usage: fuzz/build.sh [HARNESS...]   (default: every harness)
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/fuzz
obj=$out/obj
mkdir -p "$obj" "$out/bin"
swiftc=$(command -v swiftc)
clang=$(dirname "$swiftc")/clang
sanitizers=${FUZZ_SANITIZERS:-fuzzer,address}
c_sanitizers=${sanitizers//fuzzer/fuzzer-no-link}

# Which library modules a harness needs, lowest layer first (Package.swift's target graph).
core=(SecurOTPCore)
engine=(SecurOTPCore SecurOTPSecurID SecurOTPEngine)
store=(SecurOTPCore SecurOTPSecurID SecurOTPEngine SecurOTPStore)
import=(SecurOTPCore SecurOTPSecurID SecurOTPImport)
modules_for() {
  case $1 in
    base32|otpauth|ocra|push-assertion|push-base64|push-certificate) echo "${core[@]}" ;;
    config|passcode|json) echo "${store[@]}" ;;
    mapping-file) echo "${engine[@]}" ;;
    migration|pskc|sdtid|ctf|import|import-fields) echo "${import[@]}" ;;
    webauthn) echo SecurOTPCore WebAuthnParsing ;;
    *) echo "fuzz/build.sh: no module list for harness $1; add it to modules_for" >&2; return 1 ;;
  esac
}
c_objects_for() {
  case $1 in
    SecurOTPCore|SecurOTPSecurID|SecurOTPEngine) echo COpenSSL ;;
    SecurOTPStore) echo COpenSSL CSQLite ;;
    SecurOTPImport) echo COpenSSL COpenSSLImport ;;
  esac
}

if [ $# -gt 0 ]; then harnesses=("$@"); else
  harnesses=()
  for file in fuzz/harnesses/*.swift; do harnesses+=("$(basename "$file" .swift)"); done
fi

includes=()
for c in CPAM COpenSSL COpenSSLImport CSQLite CPosix; do includes+=(-I "Sources/$c/include"); done
for c in COpenSSL COpenSSLImport CSQLite; do
  "$clang" -c -g -O1 -fsanitize="$c_sanitizers" -I "Sources/$c/include" Sources/$c/*.c -o "$obj/$c.o"
done

swift_flags=(-parse-as-library -wmo -O -g -enable-testing -sanitize="$sanitizers" -I "$obj" "${includes[@]}")
# The module-linked targets keep their SwiftPM flags (Package.swift's pamSafe).
pam_safe=(-Xfrontend -disable-implicit-concurrency-module-import -Xfrontend -disable-implicit-string-processing-module-import)
# Sources may sit in sub-folders (SecurOTPEngine/Verification), which SwiftPM includes too.
build_module() {
  local name=$1 dir=$2 sources; shift 2
  mapfile -t sources < <(find "$dir" -name '*.swift' | sort)
  "$swiftc" "${swift_flags[@]}" "$@" -module-name "$name" -emit-module -emit-module-path "$obj/$name.swiftmodule" \
    -emit-object -o "$obj/$name.o" "${sources[@]}"
}

# Each module once, in dependency order, and only those some requested harness needs.
needed=" "
for harness in "${harnesses[@]}"; do needed+="$(modules_for "$harness") "; done
for module in SecurOTPCore SecurOTPSecurID SecurOTPEngine SecurOTPStore; do
  [[ $needed == *" $module "* ]] && build_module "$module" "Sources/$module" "${pam_safe[@]}"
done
[[ $needed == *" SecurOTPImport "* ]] && build_module SecurOTPImport Sources/SecurOTPImport
# The validator's passkey parsers alone (SecurOTPService's whole graph would pull Foundation in).
if [[ $needed == *" WebAuthnParsing "* ]]; then
  "$swiftc" "${swift_flags[@]}" -module-name WebAuthnParsing -emit-module -emit-module-path "$obj/WebAuthnParsing.swiftmodule" \
    -emit-object -o "$obj/WebAuthnParsing.o" Sources/SecurOTPService/Push/CBOR.swift Sources/SecurOTPService/Push/WebAuthnRegistration.swift
fi
build_module FuzzSupport fuzz/Support

for harness in "${harnesses[@]}"; do
  read -r -a modules <<<"$(modules_for "$harness")"
  objects=("$obj/FuzzSupport.o")
  c_objects=" "
  for module in "${modules[@]}"; do
    objects+=("$obj/$module.o")
    for c in $(c_objects_for "$module"); do [[ $c_objects == *" $c "* ]] || c_objects+="$c "; done
  done
  for c in $c_objects; do objects+=("$obj/$c.o"); done
  "$swiftc" "${swift_flags[@]}" -module-name "Harness_${harness//-/_}" -emit-object -o "$obj/harness-$harness.o" \
    "fuzz/harnesses/$harness.swift"
  "$swiftc" -sanitize="$sanitizers" -use-ld=lld -o "$out/bin/$harness" "$obj/harness-$harness.o" "${objects[@]}" \
    -lcrypto -lsqlite3
  echo "$out/bin/$harness"
done
