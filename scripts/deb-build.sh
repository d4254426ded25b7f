#!/usr/bin/env bash
# `make deb`: the Debian packages of this tree in dist/, then lintian on them.
# dpkg-buildpackage -b builds binary packages only (debian/rules: scripts/deb-stage.sh builds,
# debhelper packages); its .buildinfo and .changes go to dist/ too, never to the parent
# directory. The Swift toolchain is found as debian/rules says (SWIFT, PATH, /opt/swift).
# Lintian errors fail the build; its warnings are printed (debian/*.lintian-overrides explains
# the ones we keep).
set -euo pipefail
cd "$(dirname "$0")/.."
export SWIFT=${SWIFT:-$(command -v swift || echo /opt/swift/usr/bin/swift)}
export PATH="$(dirname "$SWIFT"):$PATH"
version=$(scripts/deb-changelog.sh)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
rm -rf dist
mkdir -p dist
export SECUROTP_DEB_DESTDIR=$PWD/dist
start=$(date +%s)
dpkg-buildpackage -b -us -uc \
  --buildinfo-option=-udist --buildinfo-file="dist/securotp_${version}_$arch.buildinfo" \
  --changes-option=-udist --changes-file="dist/securotp_${version}_$arch.changes"
echo "deb: built in $(( $(date +%s) - start )) s:"
ls -l dist/*.deb
if command -v lintian >/dev/null; then
  echo "lintian:"
  lintian --tag-display-limit 0 --display-info --fail-on error dist/*.deb
fi
