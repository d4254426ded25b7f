#!/usr/bin/env bash
# Lists the PAM stack lines that name pam_securotp.so, outside pam-auth-update's managed block
# (pam-auth-update --remove takes those out itself). `make uninstall` runs it first: once the
# module is gone, every such stack refuses every login ("PAM unable to dlopen").
#   scripts/pam-stacks-check.sh uninstall [--force]   refuse (exit 1) unless --force
# PAM_DIR_ETC (default /etc/pam.d) for tests.
set -euo pipefail
dir=${PAM_DIR_ETC:-/etc/pam.d}
force=no
[ "${2:-}" = --force ] && force=yes
named=$(for file in "$dir"/*; do
  [ -f "$file" ] || continue
  awk -v file="$file" '
    /^# here are the per-package modules/ { managed = 1 }
    /^# end of pam-auth-update config/ { managed = 0 }
    /^[[:space:]]*[^#[:space:]].*pam_securotp\.so/ { print file ":" FNR ": " $0 (managed ? "   (pam-auth-update: run pam-auth-update --disable securotp)" : "") }
  ' "$file"
done)
[ -z "$named" ] && exit 0
echo "These PAM stacks name pam_securotp.so; without the module they refuse every login (PAM unable to dlopen):" >&2
echo "$named" | sed 's/^/  /' >&2
if [ "$force" = yes ]; then
  echo "FORCE=yes: going on; fix those lines now, from a root shell you keep open" >&2
  exit 0
fi
echo "Remove or comment out those lines first (then test a login), or run make uninstall FORCE=yes." >&2
exit 1
