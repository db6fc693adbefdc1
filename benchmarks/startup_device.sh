#!/usr/bin/env bash
# Issue 24's start-up figures on an idle machine (the device: 16 idle cores), pinned to 2 cores
# (taskset -c 0,1) as on the development machine, and on all 16:
#   bash benchmarks/startup_device.sh
# Needs .whl/ (the wheels of the dependencies the image lacks: pydantic, gitpython, ...; see
# gpu_race_group64.sh) and, for the "before" rows, an older tree in .bench-trees/before
# (`git archive REF src examples | tar -x -C .bench-trees/before`; skipped when absent).
# Each section's table goes to .startup-results/ (gitignored) as it finishes; a section whose
# table is there already is skipped, so carrying .startup-results into the next call resumes.
# Everything is copied to $OUT at the end. About 90 s.
set -u -o pipefail
results=.startup-results
mkdir -p "$results"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
before=()
[ -d .bench-trees/before/src ] && before=(--before .bench-trees/before)
nproc; uptime
if command -v taskset > /dev/null; then pin=(taskset -c 0,1)
else pin=(python3 -c 'import os, sys; os.sched_setaffinity(0, {0, 1}); os.execvp(sys.argv[1], sys.argv[1:])'); fi
section() {  # section NAME COMMAND...: run it unless its table exists, keep its output
  local name=$1; shift
  if [ -s "$results/$name.md" ]; then echo "== $name: kept from an earlier call"; return; fi
  echo "== $name: $*"
  if timeout 100 "$@" > "$results/$name.tmp" 2>&1; then mv "$results/$name.tmp" "$results/$name.md"
  else echo "exit $? (partial output kept in $name.tmp)"; fi
  cat "$results/$name".* 2>/dev/null | tail -30
}
section first-trial-2cores "${pin[@]}" python3 benchmarks/cli_startup.py --first-trial "${before[@]}" --repeats 5
section first-trial-16cores python3 benchmarks/cli_startup.py --first-trial "${before[@]}" --repeats 5
section signal-window-2cores "${pin[@]}" python3 benchmarks/cli_startup.py --signal-window "${before[@]}" --repeats 20 --sweep 3
section version-validate-2cores "${pin[@]}" python3 benchmarks/cli_startup.py "${before[@]}" --repeats 9
cp "$results"/* "$OUT"/
