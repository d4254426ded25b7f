#!/usr/bin/env bash
# Install privacyIDEA VERSION and gunicorn from PyPI into the venv VENV, unless that venv
# already holds exactly that version. Shared by bench/validator/run.sh and bench/push/run.sh,
# which both use bench/validator/out/venv-privacyidea-VERSION.
#
#     install-venv.sh VENV VERSION
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: install-venv.sh VENV VERSION" >&2; exit 2; }
venv=$1 version=$2
installed=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("privacyidea"))' 2>/dev/null || true)
if [ -x "$venv/bin/gunicorn" ] && [ "$installed" = "$version" ]; then
    exit 0
fi
echo "==> installing privacyIDEA $version and gunicorn from PyPI into $venv" >&2
rm -rf -- "$venv"
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv" || { echo "python3 -m venv failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
"$venv/bin/pip" install -q "privacyidea==$version" gunicorn ||
    { echo "pip install privacyidea==$version gunicorn failed" >&2; exit 1; }
