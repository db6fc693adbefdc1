#!/usr/bin/env bash
# The command run on the device machine for docs/gpu-race/group64/: examples/gpu_race/group64.yaml
# (the race's six factors among 58 flags that do nothing, group strategy, 8 trials per GPU, then the
# eliminators and reducers re-checked one trial per GPU), resumable:
#   bash benchmarks/gpu_race_group64.sh SECONDS
# The study lives under .gpu-study/ (gitignored): carry that folder into the next call (the device
# tool's `carry`) and the same command resumes from its store. Wheels of the dependencies the
# device image lacks go in .whl/ (`pip download --no-deps --python-version 3.12 ...`); numpy and
# torch come with the image. Writes its log and the reports (no trial logs) under $OUT.
#   bash benchmarks/gpu_race_group64.sh SECONDS recheck
# on a machine of several GPUs (nvidia-h200-x8) once the main study is finished: the re-check at one
# trial per GPU then runs one trial on each GPU at once (8 in flight, 5 s a trial: ~300 trials in
# about 4 minutes instead of 25). Without `recheck` the study is pinned to the first GPU, so a larger
# machine never spreads the main study's 8 trials over several GPUs (a placement it was not run at).
set -u -o pipefail
seconds=${1:-500}
mode=${2:-main}
python3 -c 'import importlib.util as u; print("on the image:", *[m for m in ("numpy", "scipy", "matplotlib", "PIL", "pydantic", "yaml", "rich", "psutil", "git") if u.find_spec(m)])'
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
exec > >(tee -a "$OUT/group64.log") 2>&1
nvidia-smi -L; nproc
spec=examples/gpu_race/group64.yaml
[ -d .gpu-study/gpu-race-group64 ] && echo "resuming the study carried in .gpu-study/"
if [ "$mode" = recheck ]; then
  python3 -m heisenbisect report "$spec" --out .gpu-study > /dev/null 2>&1
  python3 -c 'import json, sys; sys.exit(0 if json.load(open(".gpu-study/gpu-race-group64/results.json"))["finished"] else 3)' \
    || { echo "the main study is not finished: run it on one GPU first (without recheck)"; exit 3; }
else
  export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
fi
t0=$SECONDS
timeout -s INT "$seconds" python3 -m heisenbisect run "$spec" --out .gpu-study --plain 2>> "$OUT/progress.log"
echo "[$((SECONDS - t0)) s wall, exit $?] bisect run $spec"
grep -v '^\[' "$OUT/progress.log" | tail -20; tail -3 "$OUT/progress.log"
python3 -m heisenbisect report "$spec" --out .gpu-study > /dev/null 2>&1
python3 -c 'import sqlite3, sys; [print(p, sqlite3.connect(p).execute("select count(*) from outcomes").fetchone()[0], "trials") for p in sys.argv[1:]]' .gpu-study/*/*.sqlite 2>&1
tar -C .gpu-study -czf "$OUT/group64.tgz" --exclude=logs .
