#!/usr/bin/env bash
# Runs one fuzz target: scripts/fuzz-one.sh TARGET PACKAGE FUZZTIME.
# Go 1.26's fuzz coordinator can report "context deadline exceeded" when
# -fuzztime ends while a worker is mid-call (golang/go#75804, fixed in Go
# 1.27): that failure writes no reproducer. A failure counts only when it
# wrote one under testdata/fuzz/TARGET, or is anything but that message.
set -uo pipefail
target=$1 pkg=$2 fuzztime=$3
corpus="$pkg/testdata/fuzz/$target"
before=$(ls "$corpus" 2>/dev/null | sort)
out=$("${GO:-go}" test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 10s "$pkg" 2>&1)
status=$?
printf '%s\n' "$out"
[ $status -eq 0 ] && exit 0
after=$(ls "$corpus" 2>/dev/null | sort)
if [ "$before" = "$after" ] && printf '%s\n' "$out" | grep -q '^    context deadline exceeded$' &&
   [ "$(printf '%s\n' "$out" | grep -c -- '--- FAIL')" -eq 1 ]; then
  echo "fuzz-one: $target: the fuzzing coordinator's deadline race (golang/go#75804), no reproducer written: not a finding"
  exit 0
fi
exit $status
