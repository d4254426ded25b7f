#!/usr/bin/env bash
# The Debian packages in dist/ on a clean Debian 12 root (`make test-deb`; tests/packaging/README.md).
#
# mmdebstrap builds a minimal bookworm root from the Debian archive (cached as a tarball under
# .build/deb-test/ for a week), with the programs under test (sudo, openssh, login from the
# essential set) and test-only tools (oathtool, sshpass, tmux, libnss-wrapper) — no Swift.
# In a private mount namespace, with its own /dev, devpts and a /dev/log listener for the
# module's syslog lines, it then:
#   1. installs packages of this tree numbered as the previous version (VERSION~prev), enrolls
#      users and changes the configuration; upgrades to dist/*.deb with apt and checks that
#      tokens, key, configuration and offline caches survive and the schema is current;
#   2. enables the pam-auth-update profile and logs in through the real sudo, su, login (on a
#      tmux pseudo-terminal) and sshd (publickey + keyboard-interactive): right code in, wrong
#      code and replay out, users without a token and root unaffected (nullok);
#   3. checks groups= with users and groups that come from nss_wrapper, not /etc/passwd;
#   4. disables the profile (the stacks are restored byte for byte), refuses removal while a
#      hand-edited stack names the module, removes (data kept) and purges (data gone, listed).
# Exit status: the number of failed checks (0: all passed). Needs root.
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
[ "$(id -u)" -eq 0 ] || { echo "clean-root-test: needs root (chroot, mounts)" >&2; exit 77; }
if [ -z "${SECUROTP_CLEAN_ROOT_NS:-}" ]; then
  export SECUROTP_CLEAN_ROOT_NS=1
  exec unshare --mount --propagation private "$0" "$@"
fi
ls dist/*.deb >/dev/null 2>&1 || { echo "clean-root-test: no dist/*.deb; run make deb first" >&2; exit 66; }

work=$repo/.build/deb-test
root=$work/root
mkdir -p "$work"
started=$(date +%s)
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   - $*"; }
failures=()
fail() { failed=$((failed + 1)); failures+=("$*"); echo "FAIL - $*"; }
# check NAME COMMAND...: passes when COMMAND succeeds.
check() { local name=$1; shift; if "$@"; then ok "$name"; else fail "$name"; fi; }
not() { ! "$@"; }
step() { echo; echo "== $* ($(( $(date +%s) - started )) s)"; }

# Runs a shell command inside the root with a clean environment.
r() {
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TERM=xterm-256color DEBIAN_FRONTEND=noninteractive /bin/bash -c "$1"
}

# --- the root -----------------------------------------------------------------------------
tools=sudo,openssh-server,openssh-client,sshpass,tmux,oathtool,libnss-wrapper,procps,ca-certificates
base=$work/bookworm-$(echo "$tools" | sha256sum | cut -c1-12).tar
if [ ! -f "$base" ] || [ -n "$(find "$base" -mtime +7)" ]; then
  step "mmdebstrap bookworm (cached in $base)"
  rm -f "$work"/bookworm-*.tar
  # The archive is across the network: a dropped connection is tried again, twice.
  for try in 1 2 3; do
    mmdebstrap --quiet --format=tar --variant=apt --include="$tools" --skip=cleanup/apt/lists bookworm "$base.tmp" && break
    [ "$try" -lt 3 ] || exit 1
    echo "mmdebstrap failed (try $try of 3); again in 20 s" >&2
    sleep 20
  done
  mv "$base.tmp" "$base"
fi
step "fresh root from $(basename "$base") ($(du -m "$base" | cut -f1) MB)"
set -e   # the root must be complete before anything is tested in it
rm -rf "$root"
mkdir -p "$root"
tar -C "$root" -xf "$base"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount -t tmpfs -o mode=0755 tmpfs "$root/dev"
for node in null zero full random urandom tty; do
  touch "$root/dev/$node"
  mount --bind "/dev/$node" "$root/dev/$node"
done
mkdir -p "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts "$root/dev/pts"
ln -s pts/ptmx "$root/dev/ptmx"
mount -t tmpfs tmpfs "$root/run"
mkdir -p "$root/run/sshd" "$root/run/lock"
set +e

# A syslog listener at the root's /dev/log: the module's lines end up in $work/syslog.txt.
syslog=$work/syslog.txt
: > "$syslog"
python3 - "$root/dev/log" "$syslog" <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
import os; os.chmod(sys.argv[1], 0o666)
with open(sys.argv[2], "a", buffering=1) as out:
    while True:
        out.write(s.recv(8192).decode(errors="replace").rstrip("\n") + "\n")
EOF
syslog_pid=$!
sshd_started=no
cleanup() {
  kill "$syslog_pid" 2>/dev/null
  [ "$sshd_started" = yes ] && r 'kill $(cat /run/sshd-test.pid) 2>/dev/null'
  r 'for s in /tmp/tmux-0/*; do tmux -S "$s" kill-server; done 2>/dev/null'
}
trap cleanup EXIT
sleep 0.5
logged() { grep -q -- "$1" "$syslog"; }
# both PATTERN: the last command succeeded ($status 0) and its output ($out) has PATTERN.
both() { [ "$status" -eq 0 ] && grep -q -- "$1" <<<"$out"; }

# --- 1. previous version, enrolment, upgrade ----------------------------------------------
version=$(dpkg-deb -f "$(ls dist/libpam-securotp_*.deb | head -1)" Version)
previous="$version~prev"
step "packages $version; building the 'previous' ones numbered $previous"
rm -rf "$work/prev" && mkdir -p "$work/prev" "$root/tmp/prev" "$root/tmp/debs"
for deb in dist/*.deb; do
  tree=$work/prev/tree
  rm -rf "$tree" && dpkg-deb -R "$deb" "$tree"
  sed -i "s/^Version: .*/Version: $previous/" "$tree/DEBIAN/control"
  dpkg-deb --root-owner-group -Zgzip -b "$tree" "$root/tmp/prev/" >/dev/null
done
rm -rf "$work/prev/tree"
cp dist/*.deb "$root/tmp/debs/"

step "apt install the previous packages (their Debian dependencies from the archive)"
t0=$(date +%s)
check "apt install ./previous packages" r 'apt-get install -y -q /tmp/prev/*.deb > /tmp/apt-prev.log 2>&1 || { tail -30 /tmp/apt-prev.log; exit 1; }'
echo "   ($(( $(date +%s) - t0 )) s; apt pulled in: $(r "sed -n 's/^Setting up \([^ :]*\).*/\1/p' /tmp/apt-prev.log" | grep -v securotp | tr '\n' ' '))"
check "no installed program needs a library that is missing (no Swift runtime)" \
  r 'for f in /usr/sbin/securotp /usr/sbin/securotpd /usr/bin/securotp-authenticator /lib/*/security/pam_securotp.so; do ldd $f | grep -E "not found|swift" && exit 1; done; exit 0'
check "securotp init made the key and database root-only at install" \
  r '[ "$(stat -c %a:%U /etc/securotp/securotp.key)" = 600:root ] && [ "$(stat -c %a:%U /var/lib/securotp/securotp.db)" = 600:root ] && [ "$(stat -c %a /var/lib/securotp)" = 700 ]'
check "configuration files root-only" r '[ "$(stat -c %a /etc/securotp/securotp.conf)" = 600 ] && [ "$(stat -c %a /etc/securotp/securotpd.conf)" = 600 ]'
check "the profile is installed and off" r 'test -f /usr/share/pam-configs/securotp && ! grep -q pam_securotp /etc/pam.d/common-auth'
check "securotpd is not enabled at install" r '! test -e /etc/systemd/system/multi-user.target.wants/securotpd.service'
check "securotp init again: idempotent" r 'securotp init --quiet && [ -z "$(securotp init --quiet)" ]'

step "users and tokens"
echo "127.0.1.1 $(hostname)" >> "$root/etc/hosts"   # sudo resolves the host name
r 'for u in alice bob; do useradd -m -s /bin/bash $u; echo "$u:pw-$u" | chpasswd; usermod -aG sudo $u; done; echo root:pw-root | chpasswd'
secret=$(r 'securotp enroll alice --hotp --format json' | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')
check "alice enrolled (HOTP)" test -n "$secret"
counter=0
# Sets $code to the next HOTP code of alice's token (each accepted code moves the counter on;
# not in a $(…) subshell, which would lose the count).
next_code() { code=$(r "oathtool --hotp -b -c $counter $secret"); counter=$((counter + 1)); }
r 'sed -i "s/^# deny = 5/deny = 5/" /etc/securotp/securotp.conf; mkdir -p -m 0700 /var/lib/securotp/offline; echo test > /var/lib/securotp/offline/keep-me; chmod 600 /var/lib/securotp/offline/keep-me'
key_before=$(r 'sha256sum /etc/securotp/securotp.key')
# An older release's store: both package builds come from one tree, so the store is put back
# at schema 2 by hand — what schema 2 was (Sources/SecurOTPStore/Schema.swift): without
# migration 5's push tables, migration 4's validator tables and migration 3's tokens.suite
# column — with alice's token in.
schema=$(r 'securotp status --format json' | python3 -c 'import json,sys; print(json.load(sys.stdin)["schema_version"])')
python3 - "$root/var/lib/securotp/securotp.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.executescript("""DROP TABLE devices; DROP TABLE push_requests; DROP TABLE push_users; DROP TABLE web_devices; DROP TABLE web_sessions; DROP TABLE method_policies;
                    DROP TABLE credentials; DROP TABLE audit; DROP TABLE challenges; DROP TABLE offline_grants;
                    ALTER TABLE tokens DROP COLUMN suite; PRAGMA user_version = 2;""")
db.close()
PY
# Read without securotp: any securotp command opens the store and migrates it.
schema_of() { python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA user_version").fetchone()[0])' "$root/var/lib/securotp/securotp.db"; }
check "store put back at schema 2 (current: $schema) with alice's token" [ "$(schema_of)" = 2 ]

step "upgrade to $version with apt"
t0=$(date +%s)
check "apt install ./dist/*.deb over the previous packages" r 'apt-get install -y -q /tmp/debs/*.deb > /tmp/apt-up.log 2>&1 || { tail -30 /tmp/apt-up.log; exit 1; }'
echo "   ($(( $(date +%s) - t0 )) s)"
check "schema migrated 2 -> $schema by the upgrade (securotp init in the postinst)" [ "$(schema_of)" = "$schema" ]
check "all four packages at $version" r "[ \$(dpkg-query -W -f='\${Version}\n' libpam-securotp securotp securotpd securotp-authenticator | sort -u) = '$version' ]"
check "key unchanged" [ "$(r 'sha256sum /etc/securotp/securotp.key')" = "$key_before" ]
check "token kept" r 'securotp list alice | grep -qi hotp'
check "changed configuration kept" r 'grep -q "^deny = 5" /etc/securotp/securotp.conf'
check "offline cache kept" r 'test -f /var/lib/securotp/offline/keep-me'

# --- 2. the profile and the real programs ---------------------------------------------------
step "pam-auth-update --enable securotp"
mkdir -p "$work/stacks-before"
cp "$root"/etc/pam.d/common-* "$work/stacks-before/"
check "pam-auth-update --enable securotp" r 'pam-auth-update --enable securotp'
check "common-auth asks the module with nullok" r 'grep -E "^auth[[:space:]]+required[[:space:]]+pam_securotp.so nullok" /etc/pam.d/common-auth'
next_code
check "securotp test: right code through /etc/pam.d/sudo" r "printf 'pw-alice\n$code\n' | securotp test alice"

step "sudo"
# sudo -S reads every prompt (password, code) from stdin and shows them on stderr.
sudo_as() { r "printf '%s\n' $2 | runuser -u $1 -- sudo -S -k true" 2>&1; }
next_code
out=$(sudo_as alice "pw-alice $code"); status=$?
check "sudo: alice, password + right code: in" [ $status -eq 0 ]
check "sudo: the module's prompt was shown" grep -q "Verification code" <<<"$out"
check "syslog: accepted line" logged "pam_securotp.*alice"
out=$(sudo_as alice "pw-alice $code"); status=$?
check "sudo: the same code again (replay): out" [ $status -ne 0 ]
echo "   what the user sees on a replay: $(tr '\n' '|' <<<"$out")"
# sudo runs PAM silently (PAM_SILENT) and tries again on the same handle: the reason for a
# refusal comes in front of the next try's prompt (pam_securotp(8), "What the user sees").
out=$(sudo_as alice "pw-alice 000000 pw-alice 000000"); status=$?
check "sudo: wrong code twice: out" [ $status -ne 0 ]
check "sudo: the second try's prompt says why the first code was refused" \
    grep -q "Code refused (wrong, or locked after repeated failures). Verification code" <<<"$out"
echo "   what the user sees on a wrong code: $(tr '\n' '|' <<<"$out")"
out=$(sudo_as bob "pw-bob"); status=$?
check "sudo: bob without a token, password only: in (nullok)" [ $status -eq 0 ]
check "sudo: bob was not asked for a code" not grep -q "Verification code" <<<"$out"

step "su"
su_as() { r "printf '%s\n' $3 | runuser -u $1 -- su $2 -c 'id -un'" 2>&1; }
next_code
out=$(su_as bob alice "pw-alice $code"); status=$?
check "su: bob → alice, password + right code: in" both alice
out=$(su_as bob alice "pw-alice 000000"); status=$?
check "su: wrong code: out" [ $status -ne 0 ]
out=$(su_as alice bob "pw-bob"); status=$?
check "su: alice → bob (no token), password only: in" [ $status -eq 0 ]
out=$(su_as bob root "pw-root"); status=$?
check "su: → root (no token), password only: in — root is never locked out by nullok" [ $status -eq 0 ]
check "su: root → alice needs nothing (pam_rootok)" r 'su alice -c true </dev/null'

step "login on a pseudo-terminal (tmux)"
# Each login gets a tmux server of its own (-L): killing the last session of a server ends it
# while it winds down, and a session started on it just then died with it (seen once in CI:
# "no server running", no login: prompt).
tmux_server=0
pane() { r "tmux -L login$tmux_server capture-pane -p -t login"; }
wait_for() { local i; for i in $(seq 1 50); do pane | grep -q -- "$1" && return 0; sleep 0.2; done; echo "   (timeout waiting for '$1'; screen:)"; pane | grep -v '^$' | tail -5 | sed 's/^/   | /'; return 1; }
login_as() {
  local user=$1 password=$2 code=$3
  r "tmux -L login$tmux_server kill-server 2>/dev/null"
  tmux_server=$((tmux_server + 1))
  local t="tmux -L login$tmux_server"
  r "$t new-session -d -s login -x 100 -y 25 /bin/login"
  wait_for "login:" || return 1
  r "$t send-keys -t login '$user' Enter"; wait_for "Password:" || return 1
  r "$t send-keys -t login '$password' Enter"
  if [ -n "$code" ]; then wait_for "Verification code" || return 1; r "$t send-keys -t login '$code' Enter"; fi
  sleep 1
  r "$t send-keys -t login 'echo LOGIN-\$((6*7))-\$(id -un)' Enter"
  wait_for "LOGIN-42-$user"
}
next_code
check "login: alice, password + right code: shell" login_as alice pw-alice "$code"
check "login: alice, wrong code: no shell" not login_as alice pw-alice 000000
check "login: bob without a token, password only: shell" login_as bob pw-bob ""
check "login: root (no token), password only: shell" login_as root pw-root ""
r "tmux -L login$tmux_server kill-server 2>/dev/null"

step "sshd: publickey + keyboard-interactive (key and code)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
r 'for u in alice bob root; do h=$(getent passwd $u | cut -d: -f6); mkdir -p -m 700 $h/.ssh; ssh-keygen -q -t ed25519 -N "" -f /root/key-$u; cp /root/key-$u.pub $h/.ssh/authorized_keys; chown -R $u: $h/.ssh; done'
# Debian's sshd_config says KbdInteractiveAuthentication no before anything appended and the
# first value wins: appending the settings makes sshd refuse to start. A drop-in in
# sshd_config.d (included at the top) is read first.
r 'cp /etc/ssh/sshd_config /tmp/appended; printf "KbdInteractiveAuthentication yes\nAuthenticationMethods publickey,keyboard-interactive\n" >> /tmp/appended'
check "sshd -t: settings appended to Debian's sshd_config are refused (earlier 'no' wins)" not r 'sshd -t -f /tmp/appended 2>/tmp/appended.err'
echo "   sshd -t says: $(r 'cat /tmp/appended.err')"
# The README's drop-in. Debian's PermitRootLogin prohibit-password turns keyboard-interactive
# off for root, so root (by key) gets its own Match block: key alone, as before.
r 'printf "UsePAM yes\nKbdInteractiveAuthentication yes\nAuthenticationMethods publickey,keyboard-interactive\nMatch User root\n    AuthenticationMethods publickey\n" > /etc/ssh/sshd_config.d/securotp.conf'
check "sshd -t: the drop-in /etc/ssh/sshd_config.d/securotp.conf passes" r 'sshd -t'
check "sshd -T: alice needs key and code" r 'sshd -T -C user=alice,host=h,addr=127.0.0.1 | grep -qx "authenticationmethods publickey,keyboard-interactive"'
check "sshd -T: the Match block ends with the drop-in (alice keeps the main config's settings)" r 'sshd -T -C user=alice,host=h,addr=127.0.0.1 | grep -qx "x11forwarding yes"'
check "sshd -T: root, key alone" r 'sshd -T -C user=root,host=h,addr=127.0.0.1 | grep -qx "authenticationmethods publickey"'
cp "$root/etc/pam.d/sshd" "$work/sshd.pam.orig"
# Key + code: the key proved who it is, so no password; the code from the module (nullok), and
# pam_permit so that a user the module ignores (no token) gets in on the key alone.
r 'sed -i "s/^@include common-auth/# @include common-auth\nauth required pam_securotp.so nullok\nauth required pam_permit.so/" /etc/pam.d/sshd'
r "/usr/sbin/sshd -p $port -o PidFile=/run/sshd-test.pid -E /tmp/sshd.log" && sshd_started=yes
sleep 0.5
ssh_as() {
  local user=$1 code=$2 prompt=${3:-Verification code}
  r "sshpass -P '$prompt' -p '$code' ssh -p $port -i /root/key-$user -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
     -o PreferredAuthentications=publickey,keyboard-interactive -o BatchMode=no -o LogLevel=ERROR $user@127.0.0.1 'echo SSH-\$(id -un)'" 2>&1
}
next_code
out=$(ssh_as alice "$code"); status=$?
check "ssh: alice, key + right code: in" both SSH-alice
out=$(ssh_as alice "$code"); status=$?
check "ssh: alice, the same code again (replay): out" [ $status -ne 0 ]
out=$(ssh_as alice 000000); status=$?
check "ssh: alice, wrong code: out" [ $status -ne 0 ]
out=$(ssh_as bob unused "no-such-prompt"); status=$?
check "ssh: bob (no token), key only: in (nullok)" both SSH-bob
out=$(ssh_as root unused "no-such-prompt"); status=$?
check "ssh: root (no token), key only: in" both SSH-root
check "syslog: replay logged" logged "replay"

# --- 3. users and groups from nss_wrapper ---------------------------------------------------
step "groups= with users and groups from nss_wrapper (not /etc/passwd)"
r 'mkdir -p /etc/nsswrap
   { getent passwd root; echo "carol:x:2001:2001:Carol:/tmp:/bin/bash"; echo "dave:x:2002:2002:Dave:/tmp:/bin/bash"; } > /etc/nsswrap/passwd
   { getent group root; echo "carol:x:2001:"; echo "dave:x:2002:"; echo "otpusers:x:3001:carol"; } > /etc/nsswrap/group
   printf "auth required pam_securotp.so groups=otpusers\nauth required pam_permit.so\naccount required pam_permit.so\n" > /etc/pam.d/otp-groups'
wrap='LD_PRELOAD=$(ls /usr/lib/*/libnss_wrapper.so) NSS_WRAPPER_PASSWD=/etc/nsswrap/passwd NSS_WRAPPER_GROUP=/etc/nsswrap/group'
check "carol is not in the root's /etc/passwd" r '! grep -q ^carol: /etc/passwd'
carol=$(r "$wrap securotp enroll carol --format json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')
check "carol (nss_wrapper) enrolled" test -n "$carol"
check "carol (in otpusers via nss_wrapper), right code: in" r "printf '%s\n' \$(oathtool --totp -b $carol) | $wrap securotp test carol --service otp-groups"
check "carol, wrong code: out" not r "printf '000000\n' | $wrap securotp test carol --service otp-groups"
out=$(r "$wrap securotp test dave --service otp-groups </dev/null" 2>&1); status=$?
check "dave (not in otpusers) is not asked" [ $status -eq 0 ]

# --- 4. disable, remove, purge --------------------------------------------------------------
step "pam-auth-update --disable securotp"
check "pam-auth-update --disable securotp" r 'pam-auth-update --disable securotp'
same=yes
for f in "$work"/stacks-before/*; do cmp -s "$f" "$root/etc/pam.d/$(basename "$f")" || { same=no; echo "   differs: $(basename "$f")"; }; done
check "common-* stacks restored byte for byte" [ $same = yes ]

step "apt remove"
out=$(r 'apt-get remove -y -q libpam-securotp 2>&1'); status=$?
check "remove refused while /etc/pam.d/sshd names the module" [ $status -ne 0 ]
check "the refusal names the file" grep -q "/etc/pam.d/sshd" <<<"$out"
check "libpam-securotp still installed" r "dpkg-query -W -f='\${Status}' libpam-securotp | grep -q 'install ok installed'"
cp "$work/sshd.pam.orig" "$root/etc/pam.d/sshd"
r 'rm -f /etc/pam.d/otp-groups'
r 'pam-auth-update --enable securotp'
check "apt remove (profile enabled, no hand-made lines): done" r 'apt-get remove -y -q libpam-securotp securotp securotpd securotp-authenticator >/tmp/remove.log 2>&1 || { tail /tmp/remove.log; exit 1; }'
check "no stack names the module after remove" r '! grep -rq "^[^#]*pam_securotp" /etc/pam.d'
check "remove keeps key, database, configuration" r 'test -f /etc/securotp/securotp.key && test -f /var/lib/securotp/securotp.db && test -f /etc/securotp/securotp.conf'
check "sudo still works for bob after remove (password only)" r "printf 'pw-bob\n' | runuser -u bob -- sudo -S -k -p '' true"

step "apt purge"
# securotp-authenticator has no configuration files: remove already purged it.
out=$(r 'apt-get purge -y -q libpam-securotp securotp securotpd 2>&1'); status=$?
check "apt purge" [ $status -eq 0 ]
echo "$out" | grep -E "purge:" | sed 's/^/   /'
check "purge says what it removes" grep -q "removing /etc/securotp/securotp.key" <<<"$out"
check "purge removed /etc/securotp and /var/lib/securotp" r '! test -e /etc/securotp && ! test -e /var/lib/securotp'

# --- the unit, offline --------------------------------------------------------------------
step "systemd-analyze (offline) on the installed unit"
unit=$work/securotpd.service
dpkg-deb --fsys-tarfile dist/securotpd_*.deb | tar -xO ./lib/systemd/system/securotpd.service > "$unit"
# On the host (the root has no systemd): the one expected message is that the host has no
# /usr/sbin/securotpd (it is in the package); anything else fails.
verify=$(systemd-analyze verify --man=no "$unit" 2>&1 | grep -v 'Command /usr/sbin/securotpd is not executable')
[ -n "$verify" ] && echo "$verify" | sed 's/^/   | /'
check "systemd-analyze verify: clean" [ -z "$verify" ]
score=$(systemd-analyze security --offline=true "$unit" 2>/dev/null | sed -n 's/.*Overall exposure level for securotpd.service: \([0-9.]*\).*/\1/p')
echo "   exposure: $score"
check "systemd-analyze security: exposure $score ≤ 2.0" python3 -c "import sys; sys.exit(0 if float('$score') <= 2.0 else 1)"

echo
echo "module log lines seen:"
grep -o 'pam_securotp.*' "$syslog" | sort | uniq -c | sort -rn | head -12 | sed 's/^/  /'
echo
for failure in "${failures[@]}"; do echo "FAIL - $failure"; done
echo "clean-root-test: $passed passed, $failed failed, $(( $(date +%s) - started )) s"
exit $failed
