#!/bin/sh
# hyperfine --prepare hook for bench/pam/run.sh (not timed).
# Usage: next-code.sh MODULE_DIR
# Writes the HOTP code for the counter in MODULE_DIR/counter to MODULE_DIR/code and
# advances MODULE_DIR/counter, so every timed pamtester run answers a fresh code.
set -eu
dir=$1
bench=$(dirname "$0")/pam-bench
counter=$(cat "$dir/counter")
"$bench" --print-code --key-hex "$(cat "$dir/key.hex")" --counter "$counter" \
    --digits "$(cat "$dir/digits")" >"$dir/code.new"
mv "$dir/code.new" "$dir/code"
echo $((counter + 1)) >"$dir/counter"
