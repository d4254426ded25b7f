#!/usr/bin/env bash
# Push benchmark (issue 14, item 10): time from the device's approval to the login returning,
# securotp vs privacyIDEA's push token in poll-only mode, same machine, same run; and one
# securotpd holding many waiting logins (memory, idle CPU, approve->return under that load).
# See bench/README.md ("Push approval"). Results: bench/push/out/results.md (also printed),
# raw samples under bench/push/out/run/.
#
# Environment knobs (defaults in brackets):
#   PUSH_PEERS          ["privacyidea securotpd"]
#   PI_VERSION          [3.14]  privacyIDEA from PyPI, the venv bench/validator/run.sh uses
#                               (bench/validator/out/venv-privacyidea-VERSION, shared installer)
#   PI_WORKERS          [nproc] gunicorn sync workers
#   PI_TOKENS           [4]     users with a push token (logins take them in turn)
#   PI_LOGINS           [100]   measured privacyIDEA logins (one at a time), after PUSH_WARMUP
#   PUSH_LOGINS         [200]   measured securotp logins without load (one at a time)
#   PUSH_WARMUP         [3]     unmeasured logins first, per peer and phase
#   PUSH_WAITING        [10000] waiting logins held open in the load phase
#   PUSH_LOAD_LOGINS    [200]   measured securotp logins while those wait
#   PUSH_PAM_LOGINS     [50]    measured logins through libpam + pam_securotp (pam-check)
#   PUSH_DEVICE         [authenticator] web: securotpd's devices are phones' passkeys (the page's
#                               assertions, docs/push.md "Phones without an app"); rows securotpd-web
#   PUSH_SECUROTPD      [auto]  auto: measure securotpd if built and it serves /v1/push; require; skip
#   SECUROTPD_BIN, SECUROTP_CLI, PAM_CHECK [.build/release/{securotpd,securotp,pam-check}]
#   SECUROTP_MODULE     [.build/release/libpam_securotp.so]
set -euo pipefail
{

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=$HERE/out
RUN=$OUT/run

PEERS=${PUSH_PEERS:-privacyidea securotpd}
PI_VERSION=${PI_VERSION:-3.14}
PI_WORKERS=${PI_WORKERS:-$(nproc)}
PI_TOKENS=${PI_TOKENS:-4}
PI_LOGINS=${PI_LOGINS:-100}
PUSH_LOGINS=${PUSH_LOGINS:-200}
WARMUP=${PUSH_WARMUP:-3}
WAITING=${PUSH_WAITING:-10000}
LOAD_LOGINS=${PUSH_LOAD_LOGINS:-200}
PAM_LOGINS=${PUSH_PAM_LOGINS:-50}
SECUROTPD_MODE=${PUSH_SECUROTPD:-auto}
PUSH_DEVICE=${PUSH_DEVICE:-authenticator}
case $PUSH_DEVICE in authenticator|web) ;; *) echo "bench/push/run.sh: error: PUSH_DEVICE must be authenticator or web" >&2; exit 1 ;; esac
SECUROTPD_BIN=${SECUROTPD_BIN:-$ROOT/.build/release/securotpd}
SECUROTP_CLI=${SECUROTP_CLI:-$ROOT/.build/release/securotp}
PAM_CHECK=${PAM_CHECK:-$ROOT/.build/release/pam-check}
SECUROTP_MODULE=${SECUROTP_MODULE:-$ROOT/.build/release/libpam_securotp.so}
PI_VENV=$ROOT/bench/validator/out/venv-privacyidea-$PI_VERSION

PORT_PI=18411
PORT_SECUROTPD=18413

die() { echo "bench/push/run.sh: error: $*" >&2; exit 1; }
note() { echo "==> $*" >&2; }
has_peer() { [[ " $PEERS " == *" $1 "* ]]; }

for n in PI_WORKERS PI_TOKENS PI_LOGINS PUSH_LOGINS WARMUP WAITING LOAD_LOGINS PAM_LOGINS; do
    v=${!n}; [[ $v =~ ^[0-9]+$ ]] || die "$n must be a non-negative integer, got '$v'"
done
case $SECUROTPD_MODE in auto|require|skip|standin) ;; *) die "PUSH_SECUROTPD must be auto, require, skip or standin" ;; esac
for tool in curl python3 openssl; do
    command -v "$tool" >/dev/null || die "required tool '$tool' not found (scripts/install-deps.sh bench)"
done

STARTED_PIDS=()
cleanup() {
    local pid
    for pid in "${STARTED_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${STARTED_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    return 0
}
trap cleanup EXIT
trap 'echo "bench/push/run.sh: error: a command failed at line $LINENO" >&2' ERR
trap 'exit 130' INT
trap 'exit 143' TERM

stop_pid() {
    local pid=$1 keep=() p
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    for p in "${STARTED_PIDS[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
    STARTED_PIDS=("${keep[@]}")
}

# wait_http URL SECONDS: until anything answers at URL
wait_http() {
    local i
    for (( i = 0; i < $2 * 10; i++ )); do
        curl -s -o /dev/null --max-time 2 "$1" && return 0
        sleep 0.1
    done
    return 1
}

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

rm -rf -- "$RUN"
mkdir -p "$RUN"
RESULTS=$RUN/results.txt # one key=value line per measured phase
: >"$RESULTS"
BUSY_BEFORE=$(cpu_busy)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
[ "$BUSY_BEFORE" -gt 20 ] && note "warning: the CPUs were ${BUSY_BEFORE}% busy before the benchmark (load $LOAD_BEFORE); latencies will be noisy"
START_TIME=$(date +%s)

# ---------------------------------------------------------------- privacyIDEA

if has_peer privacyidea; then
    "$ROOT/bench/validator/privacyidea/install-venv.sh" "$PI_VENV" "$PI_VERSION" || die "cannot install privacyIDEA $PI_VERSION"
    "$PI_VENV/bin/pip" freeze >"$RUN/privacyidea-pip-freeze.txt" 2>/dev/null
    dir=$RUN/privacyidea
    mkdir -p "$dir"
    chmod 0700 "$dir"
    # pi.cfg as bench/validator/run.sh writes it (privacyIDEA's defaults: signed responses and
    # audit entries), SQLite next to it.
    {
        echo "import logging, os"
        echo "INSTANCE_DIRECTORY = os.path.abspath(os.path.dirname(__file__))"
        echo "PI_ENCFILE = os.path.join(INSTANCE_DIRECTORY, 'encKey')"
        echo "PI_AUDIT_KEY_PRIVATE = os.path.join(INSTANCE_DIRECTORY, 'private.pem')"
        echo "PI_AUDIT_KEY_PUBLIC = os.path.join(INSTANCE_DIRECTORY, 'public.pem')"
        echo "PI_LOGFILE = os.path.join(INSTANCE_DIRECTORY, 'privacyidea.log')"
        echo "PI_LOGLEVEL = logging.INFO"
        echo "PI_UUID_FILE = os.path.join(INSTANCE_DIRECTORY, 'uuid.txt')"
        echo "SQLALCHEMY_DATABASE_URI = 'sqlite:///' + os.path.join(INSTANCE_DIRECTORY, 'privacyidea.sqlite')"
        echo "SECRET_KEY = bytes.fromhex('$(openssl rand -hex 32)')"
        echo "PI_PEPPER = '$(openssl rand -hex 12)'"
    } >"$dir/pi.cfg"
    PI_ADMIN_PASSWORD=$(openssl rand -hex 16)
    note "privacyIDEA $PI_VERSION: setting up an instance in $dir"
    (
        export PRIVACYIDEA_CONFIGFILE=$dir/pi.cfg
        cd "$dir"
        pim=("$PI_VENV/bin/pi-manage")
        "${pim[@]}" setup create_enckey
        "${pim[@]}" setup create_audit_keys
        "${pim[@]}" setup create_tables
        "${pim[@]}" admin add benchadmin -p "$PI_ADMIN_PASSWORD"
        "${pim[@]}" config resolver create_internal pushusers
        "${pim[@]}" config realm create bench pushusers
        "${pim[@]}" config realm set_default bench
    ) >"$dir/setup.log" 2>&1 || die "privacyIDEA setup failed; see $dir/setup.log"
    note "privacyidea: starting gunicorn ($PI_WORKERS sync workers) on 127.0.0.1:$PORT_PI"
    (cd "$dir" && exec "$PI_VENV/bin/gunicorn" --workers "$PI_WORKERS" --bind "127.0.0.1:$PORT_PI" \
        --no-control-socket --error-logfile "$dir/gunicorn.log" \
        "privacyidea.app:create_app(config_name='production', config_file='$dir/pi.cfg', silent=True)") &
    GUNICORN_PID=$!
    STARTED_PIDS+=("$GUNICORN_PID")
    wait_http "http://127.0.0.1:$PORT_PI/" 120 || die "privacyIDEA's gunicorn did not answer; see $dir/gunicorn.log"
    note "privacyidea: enrolling $PI_TOKENS push tokens (poll only), then $WARMUP + $PI_LOGINS logins, one at a time"
    line=$("$PI_VENV/bin/python" "$HERE/pi_push.py" --url "http://127.0.0.1:$PORT_PI" --admin benchadmin \
        --password "$PI_ADMIN_PASSWORD" --resolver pushusers --realm bench --tokens "$PI_TOKENS" \
        --logins "$PI_LOGINS" --warmup "$WARMUP" --samples "$RUN/privacyidea.samples") ||
        die "the privacyIDEA push measurement failed (gunicorn log: $dir/gunicorn.log)"
    echo "$line" | tee -a "$RESULTS" >&2
    stop_pid "$GUNICORN_PID"
fi

# ---------------------------------------------------------------- securotpd
SECUROTPD_NOTE=""
if has_peer securotpd; then
    . "$HERE/securotp.sh"
fi

# ---------------------------------------------------------------- report
ELAPSED=$(( $(date +%s) - START_TIME ))
BUSY_AFTER=$(cpu_busy)
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
"$(command -v python3)" "$HERE/report.py" --results "$RESULTS" --out "$OUT/results.md" \
    --host "$(uname -srm), $(nproc) cores, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)" \
    --load "$LOAD_BEFORE / $LOAD_AFTER; CPU busy (1 s sample) before/after: ${BUSY_BEFORE}% / ${BUSY_AFTER}%" \
    --privacyidea "$(has_peer privacyidea && echo "privacyIDEA $PI_VERSION on $(awk -F'==' '$1 == "gunicorn" { print "gunicorn " $2 }' "$RUN/privacyidea-pip-freeze.txt"), $PI_WORKERS sync workers, SQLite, $PI_TOKENS push tokens (poll only)")" \
    --securotpd-note "$SECUROTPD_NOTE" --elapsed "$ELAPSED"
cat "$OUT/results.md"
exit 0
}
