#!/usr/bin/env bash
# PAM benchmark: pam_securotp vs pam_google_authenticator vs pam_oath (pam_permit = floor).
#
#   (a) in-process: bench/pam/pam-bench loops pam_start/pam_authenticate/pam_end against a
#       private service directory and times pam_authenticate alone and the whole cycle;
#   (b) whole-process: hyperfine times `pamtester SERVICE securotp-bench authenticate`,
#       with services installed temporarily as /etc/pam.d/securotp-bench-*.
#
# All OTP modules run in HOTP mode, so every authentication needs a fresh code and writes
# the new counter durably. Results: bench/pam/out/results.md (also printed).
# See bench/README.md for what is measured and why. Must run as root.
#
# Environment knobs (defaults in brackets):
#   PAM_BENCH_ITERATIONS [2000]  in-process authentications per module, all rounds together
#   PAM_BENCH_WARMUP     [50]    in-process warm-up authentications per module and round
#   PAM_BENCH_RUNS       [200]   pamtester runs per module, all rounds together
#   PAM_BENCH_HF_WARMUP  [10]    pamtester warm-up runs per module and round
#   PAM_BENCH_ROUNDS     [4]     the measurements are split into rounds that visit the modules
#                                in rotating order, so background load hits all of them alike
#   PAM_BENCH_CONSOLE    [auto]  auto|null|keep: what to do about syslog's /dev/console
#                                fallback when /dev/log is missing (see bench/README.md)
#   PAM_BENCH_SECUROTP   [auto]  auto: include securotp if it is built; require: fail if it is
#                                not; skip: leave it out
#   SECUROTP_MODULE      [.build/release/libpam_securotp.so]
#   SECUROTP_CLI         [.build/release/securotp]
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=$HERE/out
RUN=$OUT/run
SELF=$HERE/run.sh

ITERATIONS=${PAM_BENCH_ITERATIONS:-2000}
WARMUP=${PAM_BENCH_WARMUP:-50}
RUNS=${PAM_BENCH_RUNS:-200}
HF_WARMUP=${PAM_BENCH_HF_WARMUP:-10}
ROUNDS=${PAM_BENCH_ROUNDS:-4}
CONSOLE_MODE=${PAM_BENCH_CONSOLE:-auto}
SECUROTP_MODE=${PAM_BENCH_SECUROTP:-auto}
SECUROTP_MODULE=${SECUROTP_MODULE:-$ROOT/.build/release/libpam_securotp.so}
SECUROTP_CLI=${SECUROTP_CLI:-$ROOT/.build/release/securotp}

BENCH_USER=securotp-bench
SERVICE_PREFIX=securotp-bench
# Shared 20-byte key for pam_google_authenticator and pam_oath (RFC 4226 test key,
# ASCII "12345678901234567890"). pam_securotp generates its own secret at enrollment.
SHARED_KEY_B32=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ

die() { echo "run.sh: error: $*" >&2; exit 1; }
note() { echo "==> $*" >&2; }

# ---------------------------------------------------------------- preconditions

[ "$(id -u)" -eq 0 ] || die "must run as root (installs /etc/pam.d/$SERVICE_PREFIX-* services, may create user $BENCH_USER, and the modules need root-owned secret files)"

for n in ITERATIONS WARMUP RUNS HF_WARMUP ROUNDS; do
    [[ ${!n} =~ ^[0-9]+$ ]] || die "PAM_BENCH_$n must be a non-negative integer, got '${!n}'"
done
[ "$ROUNDS" -gt 0 ] || die "PAM_BENCH_ROUNDS must be > 0"
ITER_PER_ROUND=$(( (ITERATIONS + ROUNDS - 1) / ROUNDS ))
RUNS_PER_ROUND=$(( (RUNS + ROUNDS - 1) / ROUNDS ))
[ "$ITER_PER_ROUND" -gt 0 ] || die "PAM_BENCH_ITERATIONS must be > 0"
[ "$RUNS_PER_ROUND" -gt 1 ] || die "PAM_BENCH_RUNS must be at least 2 × PAM_BENCH_ROUNDS"
case $CONSOLE_MODE in auto|null|keep) ;; *) die "PAM_BENCH_CONSOLE must be auto, null or keep" ;; esac
case $SECUROTP_MODE in auto|require|skip) ;; *) die "PAM_BENCH_SECUROTP must be auto, require or skip" ;; esac
# hyperfine -N splits commands on whitespace and the pam.d lines cannot quote paths.
[[ $HERE =~ ^[A-Za-z0-9_./+-]+$ ]] || die "the checkout path '$HERE' contains characters (spaces, quotes...) this script cannot pass through hyperfine/pam.d; move the checkout"

# Syslog fallback. pam_google_authenticator logs every success with openlog(LOG_CONS); when
# /dev/log does not exist (containers, minimal VMs) glibc then writes the message to
# /dev/console, which costs milliseconds and has nothing to do with the module. In that case
# re-run ourselves in a private mount namespace where /dev/console is /dev/null.
if [ -z "${PAM_BENCH_IN_NAMESPACE:-}" ]; then
    want_null=no
    case $CONSOLE_MODE in
        null) want_null=yes ;;
        auto) [ -S /dev/log ] || want_null=yes ;;
    esac
    if [ "$want_null" = yes ] && [ -e /dev/console ]; then
        command -v unshare >/dev/null || die "unshare(1) not found; install util-linux or set PAM_BENCH_CONSOLE=keep"
        unshare --mount --propagation private true 2>/dev/null ||
            die "cannot create a mount namespace (unshare --mount failed); set PAM_BENCH_CONSOLE=keep to benchmark with syslog's console fallback as is"
        export PAM_BENCH_IN_NAMESPACE=1
        exec unshare --mount --propagation private -- "$BASH" "$SELF" "$@"
    fi
fi
if [ -n "${PAM_BENCH_IN_NAMESPACE:-}" ]; then
    mount --bind /dev/null /dev/console || die "cannot bind /dev/null over /dev/console"
    LOGGING="no /dev/log; syslog's /dev/console fallback redirected to /dev/null (private mount namespace)"
elif [ -S /dev/log ]; then
    LOGGING="/dev/log present: modules log to the running syslog daemon"
elif [ -e /dev/console ]; then
    LOGGING="no /dev/log; syslog's /dev/console fallback left as is (PAM_BENCH_CONSOLE=keep): GA pays for a console write per success"
else
    LOGGING="no /dev/log and no /dev/console: syslog messages are dropped"
fi

for tool in cc pamtester hyperfine dash base32 od awk useradd; do
    command -v "$tool" >/dev/null || die "required tool '$tool' not found (see bench/README.md)"
done

find_module() {
    local name=$1 dir
    for dir in /lib/x86_64-linux-gnu/security /usr/lib/x86_64-linux-gnu/security \
        /lib/"$(uname -m)"-linux-gnu/security /usr/lib/"$(uname -m)"-linux-gnu/security \
        /lib/security /usr/lib/security /lib64/security /usr/lib64/security; do
        [ -f "$dir/$name" ] && { echo "$dir/$name"; return 0; }
    done
    return 1
}
GA_SO=$(find_module pam_google_authenticator.so) || die "pam_google_authenticator.so not found (apt-get install libpam-google-authenticator)"
OATH_SO=$(find_module pam_oath.so) || die "pam_oath.so not found (apt-get install libpam-oath)"
PERMIT_SO=$(find_module pam_permit.so) || die "pam_permit.so not found (libpam-modules)"

MODULES=(permit ga oath)
SECUROTP_NOTE=""
case $SECUROTP_MODE in
    skip) SECUROTP_NOTE="PAM_BENCH_SECUROTP=skip" ;;
    *)
        if [ -f "$SECUROTP_MODULE" ] && [ -x "$SECUROTP_CLI" ]; then
            MODULES+=(securotp)
        else
            SECUROTP_NOTE="not built: $SECUROTP_MODULE and/or $SECUROTP_CLI missing (run 'swift build -c release')"
            if [ "$SECUROTP_MODE" = require ]; then
                die "PAM_BENCH_SECUROTP=require but pam_securotp is $SECUROTP_NOTE"
            fi
        fi
        ;;
esac

# ---------------------------------------------------------------- setup

CREATED_PAMD=()
cleanup() {
    local f
    for f in "${CREATED_PAMD[@]}"; do rm -f -- "$f"; done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

note "building the in-process harness"
cc -O2 -Wall -Wextra -o "$HERE/pam-bench" "$HERE/pam-bench.c" -lpam -lcrypto -lm ||
    die "cannot build bench/pam/pam-bench.c (needs libpam0g-dev and libssl-dev)"
BENCH=$HERE/pam-bench

if ! id "$BENCH_USER" >/dev/null 2>&1; then
    note "creating system user $BENCH_USER"
    useradd -r -M -s /usr/sbin/nologin "$BENCH_USER" || die "cannot create user $BENCH_USER"
fi

# base32 (any case, with or without padding) -> lowercase hex
b32_to_hex() {
    local s=${1^^}
    s=${s//=/}
    s=${s// /}
    while (( ${#s} % 8 )); do s+='='; done
    printf '%s' "$s" | base32 -d | od -An -tx1 -v | tr -d ' \n'
}

rm -rf -- "$RUN"
mkdir -p "$OUT" "$RUN/pam.d"
chmod 0700 "$RUN"
SHARED_KEY_HEX=$(b32_to_hex "$SHARED_KEY_B32")
[ ${#SHARED_KEY_HEX} -eq 40 ] || die "internal: shared key does not decode to 20 bytes"

# new_module_dir NAME KEY_HEX DIGITS FIRST_COUNTER -> path of a fresh per-module directory
# holding key.hex, digits, counter (the next HOTP counter to answer) and the module's state.
new_module_dir() {
    local d=$RUN/$1
    mkdir -p "$d"
    chmod 0700 "$d"
    printf '%s\n' "$2" >"$d/key.hex"
    printf '%s\n' "$3" >"$d/digits"
    printf '%s\n' "$4" >"$d/counter"
    echo "$d"
}

declare -A PAM_LINE

D=$(new_module_dir permit "$SHARED_KEY_HEX" 6 0)
PAM_LINE[permit]="auth required $PERMIT_SO"

# Google Authenticator: HOTP_COUNTER is the next counter it accepts (it starts at 1);
# WINDOW_SIZE 3 accepts that counter and the two after it. user=root: the file is root's.
D=$(new_module_dir ga "$SHARED_KEY_HEX" 6 1)
printf '%s\n" HOTP_COUNTER 1\n" WINDOW_SIZE 3\n' "$SHARED_KEY_B32" >"$D/.google_authenticator"
chmod 0600 "$D/.google_authenticator"
PAM_LINE[ga]="auth required $GA_SO secret=$D/.google_authenticator user=root"

# pam_oath: a fresh usersfile line has counter 0; after a success the line stores the counter
# just used and the next search window is [stored, stored + window] (the stored counter itself
# is refused as a replay of the last OTP).
D=$(new_module_dir oath "$SHARED_KEY_HEX" 6 0)
printf 'HOTP %s - %s\n' "$BENCH_USER" "$SHARED_KEY_HEX" >"$D/users.oath"
chmod 0600 "$D/users.oath"
PAM_LINE[oath]="auth required $OATH_SO usersfile=$D/users.oath window=10 digits=6"

if [[ " ${MODULES[*]} " == *" securotp "* ]]; then
    command -v python3 >/dev/null || die "python3 is needed to read securotp's enrollment JSON"
    D=$RUN/securotp
    mkdir -p "$D/state"
    chmod 0700 "$D" "$D/state"
    note "enrolling $BENCH_USER with securotp (HOTP)"
    "$SECUROTP_CLI" --state-dir "$D/state" enroll "$BENCH_USER" --hotp --format json \
        >"$D/enroll.json" 2>"$D/enroll.err" ||
        die "securotp enroll failed (exit $?): $(cat "$D/enroll.err")"
    read -r SECUROTP_B32 SECUROTP_COUNTER SECUROTP_DIGITS < <(python3 - "$D/enroll.json" <<'PY'
import json, sys, urllib.parse
raw = open(sys.argv[1], encoding="utf-8").read()
start = raw.find("{")
if start < 0:
    sys.exit("securotp enroll printed no JSON object")
obj, _ = json.JSONDecoder().raw_decode(raw[start:])
secret, uri = obj.get("secret"), obj.get("uri", "")
if not secret:
    sys.exit("securotp enroll JSON has no 'secret'")
parts = urllib.parse.urlsplit(uri)
if parts.netloc.lower() not in ("", "hotp"):
    sys.exit(f"securotp enrolled a {parts.netloc} token although --hotp was given")
query = urllib.parse.parse_qs(parts.query)
def one(key, default):
    return query.get(key, [default])[0]
if one("algorithm", "SHA1").upper() != "SHA1":
    sys.exit("token is not HMAC-SHA1; pam-bench only computes SHA1 codes")
print(secret.replace(" ", "").upper(), one("counter", "0"), one("digits", "6"))
PY
    ) || die "cannot read securotp's enrollment output ($D/enroll.json)"
    [ -n "${SECUROTP_B32:-}" ] || die "cannot read securotp's enrollment output ($D/enroll.json)"
    SECUROTP_HEX=$(b32_to_hex "$SECUROTP_B32") && [ -n "$SECUROTP_HEX" ] ||
        die "securotp's secret '$SECUROTP_B32' is not valid base32"
    [[ $SECUROTP_COUNTER =~ ^[0-9]+$ && $SECUROTP_DIGITS =~ ^[0-9]+$ ]] ||
        die "unexpected counter/digits in securotp's otpauth URI: '$SECUROTP_COUNTER' / '$SECUROTP_DIGITS'"
    printf '%s\n' "$SECUROTP_HEX" >"$D/key.hex"
    printf '%s\n' "$SECUROTP_DIGITS" >"$D/digits"
    printf '%s\n' "$SECUROTP_COUNTER" >"$D/counter"
    PAM_LINE[securotp]="auth required $SECUROTP_MODULE state_dir=$D/state"
fi

for m in "${MODULES[@]}"; do
    printf '%s\n' "${PAM_LINE[$m]}" >"$RUN/pam.d/$SERVICE_PREFIX-$m"
    f=/etc/pam.d/$SERVICE_PREFIX-$m
    [ -e "$f" ] && note "replacing leftover $f (from an interrupted run?)"
    CREATED_PAMD+=("$f")
    printf '%s\n' "${PAM_LINE[$m]}" >"$f"
done

# in_process MODULE ITERATIONS WARMUP [SAMPLES_FILE]: runs pam-bench from the module's next
# counter, stores the counter after the run, prints pam-bench's summary line. A non-empty
# WRAP array is put in front of the pam-bench command (used for strace).
WRAP=()
in_process() {
    local m=$1 d=$RUN/$1 line next
    local extra=(--require-prompt)
    [ "$m" = permit ] && extra=()
    [ $# -ge 4 ] && extra+=(--samples "$4")
    line=$("${WRAP[@]}" "$BENCH" --confdir "$RUN/pam.d" --service "$SERVICE_PREFIX-$m" --user "$BENCH_USER" \
        --key-hex "$(cat "$d/key.hex")" --digits "$(cat "$d/digits")" \
        --counter "$(cat "$d/counter")" --iterations "$2" --warmup "$3" --label "$m" \
        "${extra[@]}") ||
        die "in-process benchmark of $m failed (see the pam-bench error above)"
    next=$(sed -n 's/.* next_counter=\([0-9]*\).*/\1/p' <<<"$line")
    [ -n "$next" ] || die "unexpected pam-bench output: $line"
    printf '%s\n' "$next" >"$d/counter"
    printf '%s\n' "$line"
}

# Smoke test: one authentication per module through the private service directory, so a
# broken setup fails here with the module's own message instead of in the middle of timing.
for m in "${MODULES[@]}"; do
    in_process "$m" 1 0 >/dev/null
done

# Durable-write check (not timed): count fsync-family calls per authentication under strace.
declare -A SYNCS
SYNC_PROBE=11
if command -v strace >/dev/null; then
    note "counting fsync/fdatasync calls per authentication (strace, $SYNC_PROBE authentications per module)"
    for m in "${MODULES[@]}"; do
        WRAP=(strace -f -qq -o "$RUN/$m/syncs.strace" -e trace=fsync,fdatasync,syncfs,sync_file_range,msync)
        in_process "$m" "$((SYNC_PROBE - 1))" 1 >/dev/null
        WRAP=()
        n=$(grep -cE '^[0-9]+ +(fsync|fdatasync|syncfs|sync_file_range|msync)\(' "$RUN/$m/syncs.strace" || true)
        SYNCS[$m]=$(awk -v n="$n" -v k="$SYNC_PROBE" 'BEGIN { printf "%.1f", n / k }')
    done
fi

# cpu_busy: percentage of non-idle CPU time over one second (all cores)
cpu_busy() {
    local a b
    a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat)
    sleep 1
    b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat)
    awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " ");
        busy = y[1] - x[1]; idle = y[2] - x[2];
        printf "%.0f", (busy + idle > 0) ? 100 * busy / (busy + idle) : 0 }'
}
BUSY_BEFORE=$(cpu_busy)
if [ "$BUSY_BEFORE" -gt 20 ]; then
    note "warning: the CPUs were ${BUSY_BEFORE}% busy before the benchmark started; other work on this machine makes the numbers noisy"
fi
START_TIME=$(date +%s)

# module_order ROUND -> the modules, rotated by ROUND
module_order() {
    local n=${#MODULES[@]} k
    for (( k = 0; k < n; k++ )); do echo "${MODULES[$(( ($1 + k) % n ))]}"; done
}

# ---------------------------------------------------------------- (a) in-process

for (( r = 0; r < ROUNDS; r++ )); do
    for m in $(module_order "$r"); do
        note "in-process round $((r + 1))/$ROUNDS: $m ($WARMUP warm-up + $ITER_PER_ROUND authentications)"
        in_process "$m" "$ITER_PER_ROUND" "$WARMUP" "$RUN/$m/inproc.samples" | tee -a "$RUN/$m/inproc.rounds" >&2
    done
done

# ---------------------------------------------------------------- (b) whole process

for (( r = 0; r < ROUNDS; r++ )); do
    for m in $(module_order "$r"); do
        d=$RUN/$m
        note "whole process round $((r + 1))/$ROUNDS: pamtester $SERVICE_PREFIX-$m ($HF_WARMUP warm-up + $RUNS_PER_ROUND runs)"
        hyperfine -N --style basic --warmup "$HF_WARMUP" --runs "$RUNS_PER_ROUND" \
            --prepare "$HERE/next-code.sh $d" --export-json "$d/hyperfine-$r.json" \
            -n "$m" "dash -c 'exec pamtester -v $SERVICE_PREFIX-$m $BENCH_USER authenticate < $d/code'" >&2 ||
            die "whole-process benchmark of $m failed: a pamtester run did not authenticate (hyperfine stops at the first non-zero exit)"
        # hyperfine pretty-prints "times": [ one value in seconds per line ]; keep them in ms.
        awk '/"times": \[/ { t = 1; next } t && /\]/ { t = 0 } t { gsub(/[ ,]/, ""); printf "%.4f\n", $0 * 1000 }' \
            "$d/hyperfine-$r.json" >>"$d/whole.samples"
        [ "$(grep -c . "$d/whole.samples")" -ge $(( (r + 1) * RUNS_PER_ROUND )) ] ||
            die "cannot read the run times from $d/hyperfine-$r.json"
    done
done
ELAPSED=$(( $(date +%s) - START_TIME ))
BUSY_AFTER=$(cpu_busy)

# Every success must have moved the stored counter exactly as far as we advanced ours.
want=$(cat "$RUN/ga/counter")
got=$(awk '$1 == "\"" && $2 == "HOTP_COUNTER" { print $3 }' "$RUN/ga/.google_authenticator")
[ "$got" = "$want" ] || die "pam_google_authenticator's HOTP_COUNTER is $got, expected $want: some authentications were not counted"
want=$(( $(cat "$RUN/oath/counter") - 1 ))
got=$(awk -v u="$BENCH_USER" '$2 == u { print $5 }' "$RUN/oath/users.oath")
[ "$got" = "$want" ] || die "pam_oath's stored counter is $got, expected $want: some authentications were not counted"

# ---------------------------------------------------------------- statistics

# S[module.series.stat], series: auth / cycle (µs) and whole (ms); stats from pam-bench --stats.
declare -A S
for m in "${MODULES[@]}"; do
    for spec in auth:inproc.samples:1 cycle:inproc.samples:2 whole:whole.samples:1; do
        IFS=: read -r series file column <<<"$spec"
        line=$("$BENCH" --stats "$RUN/$m/$file" --column "$column") || die "cannot summarize $RUN/$m/$file"
        for pair in $line; do S[$m.$series.${pair%%=*}]=${pair#*=}; done
    done
    printf 'module=%s' "$m" >"$RUN/$m/summary.txt"
    for key in $(printf '%s\n' "${!S[@]}" | grep "^$m\." | sort); do
        printf ' %s=%s' "${key#"$m".}" "${S[$key]}" >>"$RUN/$m/summary.txt"
    done
    echo >>"$RUN/$m/summary.txt"
done

# ---------------------------------------------------------------- report

have() { [[ " ${MODULES[*]} " == *" $1 "* ]]; }
fmt() { awk -v x="$1" -v p="${2:-1}" 'BEGIN { printf "%.*f", p, x }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f×", a / b; else print "–" }'; }
display() {
    case $1 in
        permit) echo "pam_permit (floor)" ;;
        ga) echo "pam_google_authenticator" ;;
        oath) echo "pam_oath" ;;
        securotp) echo "pam_securotp" ;;
    esac
}
pkg_version() { dpkg-query -W -f '${Version}' "$1" 2>/dev/null || echo unknown; }

SECUROTP_VERSION="not measured"
if have securotp; then
    SECUROTP_VERSION="git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
    [ -n "$(git -C "$ROOT" status --porcelain 2>/dev/null)" ] && SECUROTP_VERSION+=" + uncommitted changes"
fi
N_AUTH=${S[ga.auth.n]}
N_WHOLE=${S[ga.whole.n]}

REPORT=$OUT/results.md
{
    echo "# PAM benchmark results"
    echo
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'); host: $(uname -srm), $(nproc) cores, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
    echo "- State files on: $(df -T "$RUN" | awk 'NR == 2 { print $2 " (" $1 ")" }'); CPU busy (1 s sample) before/after: ${BUSY_BEFORE}% / ${BUSY_AFTER}%"
    echo "- Logging: $LOGGING"
    echo "- Modules: pam_google_authenticator $(pkg_version libpam-google-authenticator) (HOTP, WINDOW_SIZE 3), pam_oath $(pkg_version libpam-oath) (HOTP, window=10), pam_securotp $SECUROTP_VERSION; Linux-PAM $(pkg_version libpam0g)"
    echo "- Samples per module: $N_AUTH in-process authentications and $N_WHOLE pamtester runs, in $ROUNDS rounds visiting the modules in rotating order, each after warm-up ($WARMUP in-process, $HF_WARMUP pamtester); every authentication succeeded with a fresh HOTP code"
    if [ -n "$SECUROTP_NOTE" ]; then echo "- pam_securotp: $SECUROTP_NOTE"; fi
    echo
    echo "## (a) In-process, µs per call (pam-bench)"
    echo
    echo "auth = pam_authenticate alone; cycle = pam_start_confdir + pam_authenticate + pam_end. Ratios compare means."
    echo "\"first → last 10%\": mean auth time of the earliest and the latest tenth of the samples (in run order);"
    echo "a rise means the module's cost grows with the number of authentications since enrollment."
    echo "syncs/auth: fsync-family calls per authentication, counted with strace outside the timed runs."
    echo
    echo "| module | auth median | auth mean | auth p99 | cycle median | cycle mean | cycle p99 | auth vs GA | auth vs pam_oath | cycle vs GA | cycle vs pam_oath | auth mean first → last 10% | syncs/auth |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for m in "${MODULES[@]}"; do
        trend=$(awk '{ v[NR] = $1 } END { k = int(NR / 10); if (k < 1) k = 1;
                     for (i = 1; i <= k; i++) { a += v[i]; b += v[NR - k + i] }
                     printf "%.0f → %.0f", a / k, b / k }' "$RUN/$m/inproc.samples")
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(display "$m")" \
            "$(fmt "${S[$m.auth.median]}")" "$(fmt "${S[$m.auth.mean]}")" "$(fmt "${S[$m.auth.p99]}")" \
            "$(fmt "${S[$m.cycle.median]}")" "$(fmt "${S[$m.cycle.mean]}")" "$(fmt "${S[$m.cycle.p99]}")" \
            "$(ratio "${S[$m.auth.mean]}" "${S[ga.auth.mean]}")" "$(ratio "${S[$m.auth.mean]}" "${S[oath.auth.mean]}")" \
            "$(ratio "${S[$m.cycle.mean]}" "${S[ga.cycle.mean]}")" "$(ratio "${S[$m.cycle.mean]}" "${S[oath.cycle.mean]}")" \
            "$trend" "${SYNCS[$m]:-n/a}"
    done
    echo
    echo "## (b) Whole process, ms per pamtester run (hyperfine)"
    echo
    echo "Each run: exec dash + pamtester, dynamic linking, /etc/pam.d parsing, loading the module, one authentication. Ratios compare means; \"above floor\" subtracts the pam_permit mean."
    echo
    echo "| module | mean ± σ | median | p99 | min | vs GA | vs pam_oath | above floor | above floor vs GA |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    floor=${S[permit.whole.mean]}
    above_ga=$(awk -v a="${S[ga.whole.mean]}" -v f="$floor" 'BEGIN { print a - f }')
    for m in "${MODULES[@]}"; do
        if [ "$m" = permit ]; then
            above="–"; above_ratio="–"
        else
            above=$(awk -v a="${S[$m.whole.mean]}" -v f="$floor" 'BEGIN { printf "%.2f", a - f }')
            above_ratio=$(ratio "$above" "$above_ga")
        fi
        printf '| %s | %s ± %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(display "$m")" \
            "$(fmt "${S[$m.whole.mean]}" 2)" "$(fmt "${S[$m.whole.stddev]}" 2)" "$(fmt "${S[$m.whole.median]}" 2)" \
            "$(fmt "${S[$m.whole.p99]}" 2)" "$(fmt "${S[$m.whole.min]}" 2)" \
            "$(ratio "${S[$m.whole.mean]}" "${S[ga.whole.mean]}")" "$(ratio "${S[$m.whole.mean]}" "${S[oath.whole.mean]}")" \
            "$above" "$above_ratio"
    done
    echo
    echo "## Targets"
    echo
    if have securotp; then
        verdict() { awk -v r="$1" -v t="$2" 'BEGIN { print (r <= t) ? "met" : "**not met**" }'; }
        r1=$(awk -v a="${S[securotp.auth.mean]}" -v b="${S[ga.auth.mean]}" 'BEGIN { printf "%.2f", a / b }')
        r1m=$(awk -v a="${S[securotp.auth.median]}" -v b="${S[ga.auth.median]}" 'BEGIN { printf "%.2f", a / b }')
        r2=$(awk -v a="${S[securotp.whole.mean]}" -v b="${S[ga.whole.mean]}" 'BEGIN { printf "%.2f", a / b }')
        r2m=$(awk -v a="${S[securotp.whole.median]}" -v b="${S[ga.whole.median]}" 'BEGIN { printf "%.2f", a / b }')
        echo "| target | pam_securotp / pam_google_authenticator (means) | (medians) | limit | verdict |"
        echo "|---|---:|---:|---:|---|"
        echo "| in-process cost per authentication (pam_authenticate) | ${r1}× | ${r1m}× | ≤ 0.50× | $(verdict "$r1" 0.5) |"
        echo "| whole-process time (pamtester run) | ${r2}× | ${r2m}× | ≤ 1.30× | $(verdict "$r2" 1.3) |"
    else
        echo "pam_securotp was not measured ($SECUROTP_NOTE), so the targets were not evaluated."
    fi
    echo
    echo "Raw data: bench/pam/out/run/<module>/ (inproc.samples: auth_us cycle_us per authentication; whole.samples: ms per pamtester run; hyperfine-<round>.json; summary.txt). Measurement took ${ELAPSED}s."
} >"$REPORT"

echo
cat "$REPORT"
