#!/usr/bin/env bash
# FIDO benchmark: in-process cost of one login with a security key, pam_securotp against
# Debian's pam_u2f, both with the same software key (tests/softfido) in the same run.
#
# One pamu2fcfg credential is written to a mapping file for pam_u2f and imported into a
# private securotp store; each module's service asks for it. pam_securotp's figure includes
# the signature counter's conditional write to the store (pam_u2f keeps no counter). Rounds
# alternate the modules so background load hits both alike. Results: bench/fido/README.md.
#
# The key speaks CTAP 2.1 unless FIDO_BENCH_CTAP=2.0: pam_securotp skips the silent probe for
# a lone 2.1 key (docs/fido.md, "Finding the key"), pam_u2f probes either.
#
# Environment: FIDO_BENCH_ITERATIONS [300] per module and round, FIDO_BENCH_ROUNDS [4], FIDO_BENCH_CTAP [2.1],
#   SECUROTP_MODULE [.build/release/libpam_securotp.so], SECUROTP_CLI [.build/release/securotp]
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ITERATIONS=${FIDO_BENCH_ITERATIONS:-300}
ROUNDS=${FIDO_BENCH_ROUNDS:-4}
CTAP=${FIDO_BENCH_CTAP:-2.1}
case "$CTAP" in 2.0) CTAP= ;; 2.1) ;; *) echo "run.sh: error: FIDO_BENCH_CTAP is 2.0 or 2.1, not '$CTAP'" >&2; exit 2 ;; esac
MODULE=${SECUROTP_MODULE:-$ROOT/.build/release/libpam_securotp.so}
CLI=${SECUROTP_CLI:-$ROOT/.build/release/securotp}
PAM_U2F=/lib/x86_64-linux-gnu/security/pam_u2f.so
SOFTFIDO=$ROOT/.build/softfido/libsoftfido.so
die() { echo "run.sh: error: $*" >&2; exit 1; }
[ -f "$MODULE" ] || die "$MODULE missing: make build (or SECUROTP_MODULE=.build/embedded/pam_securotp.so)"
[ -x "$CLI" ] || die "$CLI missing: make build"
[ -f "$PAM_U2F" ] && command -v pamu2fcfg >/dev/null || die "install libpam-u2f and pamu2fcfg (scripts/install-deps.sh test)"
[ -f "$SOFTFIDO" ] || make -C "$ROOT" softfido >/dev/null

WORK=$(mktemp -d /tmp/fido-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cc -O2 -Wall -Wextra -o "$WORK/fido-bench" "$HERE/fido-bench.c" -lpam -lm
mkdir -p "$WORK/pam.d" && install -d -m 700 "$WORK/state"
export LD_PRELOAD=$SOFTFIDO SOFTFIDO_STATE=$WORK/key.state SOFTFIDO_TOUCH=allow SOFTFIDO_PIN= SOFTFIDO_UV= SOFTFIDO_ATTESTATION= SOFTFIDO_DEBUG= SOFTFIDO_CTAP=$CTAP
USER_NAME=$(id -un)
pamu2fcfg -u "$USER_NAME" </dev/null >"$WORK/u2f_mappings" && echo >>"$WORK/u2f_mappings"
chmod 644 "$WORK/u2f_mappings"
"$CLI" --state-dir "$WORK/state" import "$USER_NAME" "$WORK/u2f_mappings" >/dev/null
echo "auth required $PAM_U2F authfile=$WORK/u2f_mappings cue" >"$WORK/pam.d/u2f"
echo "auth required $MODULE state_dir=$WORK/state" >"$WORK/pam.d/securotp"

bench() { "$WORK/fido-bench" --confdir "$WORK/pam.d" --service "$1" --user "$USER_NAME" --iterations "$ITERATIONS" --warmup 10 --label "$1"; }
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then bench u2f; bench securotp; else bench securotp; bench u2f; fi
done | tee "$WORK/results"
median() { grep "label=$1 " "$WORK/results" | sed 's/.*auth_median_us=\([0-9]*\).*/\1/' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
u2f=$(median u2f); securotp=$(median securotp)
echo "median of round medians (pam_authenticate, key CTAP ${CTAP:-2.0}): pam_u2f ${u2f} us, pam_securotp ${securotp} us, ratio $(awk -v a="$securotp" -v b="$u2f" 'BEGIN {printf "%.2f", a/b}')x"
