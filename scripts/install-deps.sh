#!/usr/bin/env bash
# Installs the Debian packages securotp needs to build, test, demo or benchmark — only the
# missing ones, so a second run does nothing. Usage: scripts/install-deps.sh build|test|demo|bench
set -euo pipefail

build=(libpam0g-dev libssl-dev libsqlite3-dev)
test=("${build[@]}" oathtool zbar-tools openssh-server sshpass stoken python3-pip)
demo=("${build[@]}" oathtool)
bench=("${build[@]}" oathtool pamtester hyperfine libpam-google-authenticator libpam-oath)

case "${1:-build}" in
  build) wanted=("${build[@]}") ;;
  test) wanted=("${test[@]}") ;;
  demo) wanted=("${demo[@]}") ;;
  bench) wanted=("${bench[@]}") ;;
  *) echo "usage: $0 build|test|demo|bench" >&2; exit 64 ;;
esac

missing=()
for package in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "Installing Debian packages: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
