#!/usr/bin/env bash
# What a refused login costs, by kind of user and guess: the module must do the same work and
# the same writes whatever the user (docs/security.md, "Same work for everyone"), so timing
# tells no user name apart. In-process (pam-bench --wrong), medians of PAM_TIMING_ITERATIONS
# per case, in PAM_TIMING_ROUNDS rounds that visit the cases in rotating order.
#
#   token        root: one TOTP token, a wrong code (window and resync band searched)
#   no-token     daemon: a known account without a token
#   unknown      a name NSS does not know (shared failure row)
#   locked       bin: a token, locked by earlier failures (deny=1)
#   unknown-locked  a name NSS does not know, its shared row locked
#   recovery-hit   sys: recovery codes; a guess whose first group is a real code's
#   recovery-miss  sys: a guess whose first group matches no code
#
# Usage: SECUROTP_MODULE=... SECUROTP_CLI=... bench/pam/user-timing.sh   (as root; `make bench-timing`)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ITERATIONS=${PAM_TIMING_ITERATIONS:-400}
ROUNDS=${PAM_TIMING_ROUNDS:-4}
WARMUP=${PAM_TIMING_WARMUP:-20}
MODULE=${SECUROTP_MODULE:-$ROOT/.build/embedded/pam_securotp.so}
CLI=${SECUROTP_CLI:-$ROOT/.build/release/securotp}

die() { echo "user-timing.sh: error: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "must run as root (the store's files must be root's)"
[ -f "$MODULE" ] && [ -x "$CLI" ] || die "build first (make build): $MODULE, $CLI"
for user in root daemon bin sys; do id "$user" >/dev/null 2>&1 || die "no account $user on this system"; done

# Without /dev/log, syslog falls back to /dev/console: silence it in a private mount namespace.
if [ -z "${PAM_TIMING_IN_NAMESPACE:-}" ] && [ ! -S /dev/log ] && [ -e /dev/console ]; then
    export PAM_TIMING_IN_NAMESPACE=1
    exec unshare --mount --propagation private -- "$BASH" "$0" "$@"
fi
[ -n "${PAM_TIMING_IN_NAMESPACE:-}" ] && mount --bind /dev/null /dev/console

cc -O2 -Wall -Wextra -o "$HERE/pam-bench" "$HERE/pam-bench.c" -lpam -lcrypto -lm || die "cannot build pam-bench"
RUN=$(mktemp -d /tmp/securotp-timing.XXXXXX)
trap 'rm -rf -- "$RUN"' EXIT
# Two stores: in the second, bin and the unknown names' shared row are locked.
STATE=$RUN/state
LOCKED=$RUN/locked
mkdir -p "$RUN/pam.d"
chmod 0700 "$RUN"
cli() { "$CLI" --state-dir "$STATE" "$@"; }

cli enroll root >/dev/null
cli enroll sys >/dev/null
"$CLI" --state-dir "$LOCKED" enroll bin >/dev/null
codes=$(cli recovery-codes sys --count 10 | grep -Eo '[a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4}' | head -1)
[ -n "$codes" ] || die "no recovery code printed"
first_group=${codes%%-*}
# Guesses of the recovery-code shape: one starts like a real code, the other like none.
hit_guess="$first_group-zzzz-zzzz"
miss_guess="zzzz-zzzz-zzzz"
[ "$first_group" != zzzz ] || die "unlucky recovery code; run again"

# deny=1 for the locked cases: lock bin and the unknown names' shared row first.
echo "auth required $MODULE state_dir=$STATE deny=0" >"$RUN/pam.d/timing"
echo "auth required $MODULE state_dir=$LOCKED deny=1 unlock_time=0" >"$RUN/pam.d/timing-lock"
wrong=000000
"$HERE/pam-bench" --confdir "$RUN/pam.d" --service timing-lock --user bin --wrong "$wrong" --iterations 1 >/dev/null
"$HERE/pam-bench" --confdir "$RUN/pam.d" --service timing-lock --user nosuch-timing-user --wrong "$wrong" --iterations 1 >/dev/null

# case NAME SERVICE USER ANSWER
cases=(
    "token timing root $wrong"
    "no-token timing daemon $wrong"
    "unknown timing nosuch-timing-a $wrong"
    "locked timing-lock bin $wrong"
    "unknown-locked timing-lock nosuch-timing-b $wrong"
    "recovery-hit timing sys $hit_guess"
    "recovery-miss timing sys $miss_guess"
)
per_round=$(( (ITERATIONS + ROUNDS - 1) / ROUNDS ))
for ((round = 0; round < ROUNDS; round++)); do
    for ((i = 0; i < ${#cases[@]}; i++)); do
        read -r name service user answer <<<"${cases[$(( (i + round) % ${#cases[@]} ))]}"
        iterations=$per_round
        # A recovery-code guess costs a slow hash: fewer of them.
        [[ $name == recovery-* ]] && iterations=$(( (per_round + 9) / 10 ))
        "$HERE/pam-bench" --confdir "$RUN/pam.d" --service "$service" --user "$user" --wrong "$answer" \
            --iterations "$iterations" --warmup "$WARMUP" --label "$name" --samples "$RUN/$name.samples" >/dev/null
    done
done

printf '%-16s %8s %10s %10s %10s\n' case n median_us p99_us stddev
for entry in "${cases[@]}"; do
    read -r name _ <<<"$entry"
    read -r n median _ p99 _ _ stddev < <("$HERE/pam-bench" --stats "$RUN/$name.samples" --column 1 |
        sed -E 's/n=([^ ]+) median=([^ ]+) mean=([^ ]+) p99=([^ ]+) min=([^ ]+) max=([^ ]+) stddev=([^ ]+)/\1 \2 \3 \4 \5 \6 \7/')
    printf '%-16s %8s %10.1f %10.1f %10.1f\n' "$name" "$n" "$median" "$p99" "$stddev"
done
