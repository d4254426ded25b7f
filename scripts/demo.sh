#!/usr/bin/env bash
# make demo: enroll a TOTP token in a throw-away state directory and log in through the real
# libpam loading the real pam_securotp.so — then show that the same code is refused.
# Nothing outside the temporary directory is touched (no /etc/pam.d or /etc/securotp changes).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(swift build -c release --show-bin-path)
module=${SECUROTP_MODULE:-$bin/libpam_securotp.so}
work=$(mktemp -d /tmp/securotp-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
state="$work/state"
user=$(id -un)
bold=""; plain=""
if [ -t 1 ]; then bold=$(tput bold 2>/dev/null || true); plain=$(tput sgr0 2>/dev/null || true); fi
step() { printf '\n%s==> %s%s\n' "$bold" "$*" "$plain"; }

step "Enrolling a TOTP token for $user (state directory $state)"
echo "\$ securotp --state-dir $state enroll $user --nickname demo"
"$bin/securotp" --state-dir "$state" enroll "$user" --nickname demo | tee "$work/enroll.txt"
secret=$(sed -n 's/^URI: .*[?&]secret=\([A-Z2-7]*\).*/\1/p' "$work/enroll.txt")
[ -n "$secret" ] || { echo "demo: could not read the secret from the enroll output" >&2; exit 1; }

step "A private PAM service that requires the code"
mkdir "$work/pam.d"
echo "auth required $module state_dir=$state" | tee "$work/pam.d/securotp-demo"

code=$(oathtool --totp -b "$secret")
step "Logging in with the current code from oathtool (an independent implementation): $code"
echo "\$ pam-check --confdir $work/pam.d securotp-demo $user $code"
"$bin/pam-check" --confdir "$work/pam.d" securotp-demo "$user" "$code"

step "The same code again: refused, a code works exactly once"
if "$bin/pam-check" --confdir "$work/pam.d" securotp-demo "$user" "$code"; then
  echo "demo: FAILED — a replayed code was accepted" >&2; exit 1
fi

step "A wrong code: refused and counted"
wrong=$(printf '%06d' $(( (10#$code + 1) % 1000000 )))
if "$bin/pam-check" --confdir "$work/pam.d" securotp-demo "$user" "$wrong"; then
  echo "demo: FAILED — a wrong code was accepted" >&2; exit 1
fi

step "What the store now says"
"$bin/securotp" --state-dir "$state" list "$user"
printf '\n%sDemo complete:%s enrolled, logged in through libpam + pam_securotp.so, replay refused.\n' "$bold" "$plain"
echo "Next: README.md \"Deploy\" for sshd and sudo."
