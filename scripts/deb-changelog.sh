#!/usr/bin/env bash
# Writes debian/changelog for this commit, so the packages' version comes from the tree and
# nobody edits the changelog per commit:
#   VERSION+git<commits>.<hash>   e.g. 0.4.0+git163.6d87198
# VERSION is SecurOTPVersion.string (Sources/SecurOTPCore/Version.swift, the version every
# binary reports); the commit count orders builds of one VERSION; the date is the commit's,
# so two builds of one commit write the same changelog (dpkg takes SOURCE_DATE_EPOCH from it).
# SECUROTP_DEB_VERSION overrides the whole version (the upgrade test builds an older one).
set -euo pipefail
cd "$(dirname "$0")/.."
base=$(sed -n 's/.*static let string = "\(.*\)".*/\1/p' Sources/SecurOTPCore/Version.swift)
[ -n "$base" ] || { echo "deb-changelog: no version in Sources/SecurOTPCore/Version.swift" >&2; exit 1; }
if git rev-parse --git-dir >/dev/null 2>&1; then
  version=${SECUROTP_DEB_VERSION:-$base+git$(git rev-list --count HEAD).$(git rev-parse --short=7 HEAD)}
  date=$(git log -1 --format=%aD)
  commit="commit $(git rev-parse --short=12 HEAD)"
else
  version=${SECUROTP_DEB_VERSION:-$base}
  date=$(date -R -d @"${SOURCE_DATE_EPOCH:-0}")
  commit="a tree without git"
fi
maintainer=$(sed -n 's/^Maintainer: //p' debian/control)
cat > debian/changelog <<END
securotp ($version) unstable; urgency=medium

  * Built from the source tree at $commit.

 -- $maintainer  $date
END
echo "$version"
