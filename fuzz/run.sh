#!/usr/bin/env bash
# Runs the fuzz harnesses built by fuzz/build.sh, FUZZ_JOBS at a time (default: one per core),
# each for FUZZ_SECONDS (default 20) on its seed corpus (fuzz/corpus/HARNESS, read-only) plus a working corpus in
# .build/fuzz/work/HARNESS that keeps what earlier runs found. A crash, a property violation,
# a leak in module code, a timeout or running out of memory fails the run; the input that did
# it is saved in .build/fuzz/artifacts/HARNESS/ and printed (base64 and hex) with the command
# that reproduces it.
#
# Usage: FUZZ_SECONDS=N [FUZZ_JOBS=N] fuzz/run.sh [HARNESS...]   (default: every built harness)
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-20}
jobs=${FUZZ_JOBS:-$(nproc)}
out=.build/fuzz
if [ $# -gt 0 ]; then harnesses=("$@"); else
  harnesses=()
  for file in fuzz/harnesses/*.swift; do harnesses+=("$(basename "$file" .swift)"); done
fi

# Leak checks rescan the heap whenever an input's mallocs and frees differ, which Foundation's
# caches (and its own leak, fuzz/lsan.supp) make happen for nearly every input of the importers:
# there they cost 25x the speed, for a CLI that exits after one import. The harnesses of code
# the PAM module links, which lives in long-running sshd and screen lockers, keep them.
detect_leaks() {
  case $1 in
    base32|otpauth|ocra|config|passcode|json|mapping-file|push-assertion|push-base64|push-certificate) echo 1 ;;
    *) echo 0 ;;
  esac
}

export SWIFT_BACKTRACE=enable=no   # libFuzzer, not the Swift runtime, reports the crash
export LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan.supp:print_suppressions=0"
# One harness: its summary line in $out/results/HARNESS.summary, and on failure its report
# (the end of its log, each new input and how to reproduce it) in $out/results/HARNESS.report.
run_one() {
  local harness=$1 binary work artifacts log before status done_line runs rate cov
  binary=$out/bin/$harness
  work=$out/work/$harness
  artifacts=$out/artifacts/$harness
  log=$out/logs/$harness.log
  mkdir -p "$work" "$artifacts" "$(dirname "$log")"
  local options=(-max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 -print_final_stats=1
                 -detect_leaks="$(detect_leaks "$harness")" -artifact_prefix="$artifacts/")
  [ -f "fuzz/dictionaries/$harness.dict" ] && options+=(-dict="fuzz/dictionaries/$harness.dict")
  before=$(ls "$artifacts" | wc -l)
  "$binary" "${options[@]}" "$work" "fuzz/corpus/$harness" >"$log" 2>&1
  status=$?
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  cov=$(sed -nE 's/.* cov: ([0-9]+) ft: ([0-9]+) .*/cov \1 ft \2/p' <<<"$done_line")
  if [ $status -eq 0 ]; then
    printf '%-14s %10s runs %7s exec/s  %s\n' "$harness" "${runs:-?}" "${rate:-?}" "${cov:-}" >"$out/results/$harness.summary"
    return
  fi
  printf '%-14s FAILED (exit %s), log %s\n' "$harness" "$status" "$log" >"$out/results/$harness.summary"
  {
    echo "---- $harness failed (exit $status); end of $log:"
    tail -n 40 "$log"
    if [ "$(ls "$artifacts" | wc -l)" -gt "$before" ]; then
      for input in $(ls -t "$artifacts" | head -n $(( $(ls "$artifacts" | wc -l) - before ))); do
        path=$artifacts/$input
        echo "---- input $path ($(stat -c %s "$path") bytes), base64:"
        base64 -w 76 "$path" | head -n 40
        echo "---- hex:"
        od -A x -t x1z -v "$path" | head -n 40
        echo "---- reproduce: SWIFT_BACKTRACE=enable=no LSAN_OPTIONS=suppressions=fuzz/lsan.supp $binary $path"
      done
    fi
  } >"$out/results/$harness.report"
}

rm -rf "$out/results"
mkdir -p "$out/results"
for harness in "${harnesses[@]}"; do
  [ -x "$out/bin/$harness" ] || { echo "fuzz/run.sh: $out/bin/$harness is missing; run fuzz/build.sh first" >&2; exit 66; }
done
running=0
for harness in "${harnesses[@]}"; do
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
  echo "== $harness: ${seconds}s"
  run_one "$harness" &
  running=$((running + 1))
done
wait

failed=()
summary=()
for harness in "${harnesses[@]}"; do
  summary+=("$(cat "$out/results/$harness.summary" 2>/dev/null || echo "$harness: no result")")
  if [ -s "$out/results/$harness.report" ] || [ ! -s "$out/results/$harness.summary" ]; then
    failed+=("$harness")
    cat "$out/results/$harness.report" 2>/dev/null
  fi
done

echo "== fuzz summary (${seconds}s each)"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz/run.sh: ${failed[*]} failed; see above (inputs in $out/artifacts/)" >&2
  exit 1
fi
