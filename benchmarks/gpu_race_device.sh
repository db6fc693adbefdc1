#!/usr/bin/env bash
# The commands run on the device machine for docs/gpu-race/, one stage per call:
#   bash benchmarks/gpu_race_device.sh design   # environment, the race's design sweep, a shared check
#   bash benchmarks/gpu_race_device.sh local    # ground truth alone and shared, `bisect run` (local runner)
#   bash benchmarks/gpu_race_device.sh ray      # `bisect run --runner ray`, the commit bisection
#   bash benchmarks/gpu_race_device.sh screen SECONDS  # `bisect run` on hypotheses.yaml, resumable
#   bash benchmarks/gpu_race_device.sh alone SECONDS   # `bisect run` on alone.yaml (one trial per GPU), resumable
#   bash benchmarks/gpu_race_device.sh alone SECONDS ray   # either of the two on Ray (gpus_per_trial 1/trials_per_gpu)
# The resumable stages keep their study under .gpu-study/ (gitignored): carry that folder into the
# next call (the device tool's `carry`) and the same command resumes where the last call stopped.
# Run from a checkout of this repository with the wheels of benchmarks/gpu_device_run.sh in .whl/;
# writes everything under $OUT.
set -u -o pipefail
stage=${1:?stage: design, local, ray, screen or alone}
seconds=${2:-500}
runner=${3:-local}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
root=$PWD
bisect() { python3 -m heisenbisect "$@"; }
# At most 8 files come back from $OUT: each stage writes one log, plus its reports as tarballs.
exec > >(tee -a "$OUT/$stage.log") 2>&1
timed() { local t0=$SECONDS; "$@"; local rc=$?; echo "[$((SECONDS - t0)) s wall, exit $rc] $*"; }

case $stage in
design)
  nvidia-smi -L; nproc; python3 -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, torch.cuda.device_count(), torch.cuda.get_device_name(0))'
  cd examples/gpu_race
  timed timeout 60 env HEISENBISECT_SEED=1 python3 decode.py
  timed timeout 200 python3 sweep.py --spins 0 10000 20000 30000 40000 60000 90000 --seeds 8 --repeats 3 --pick 0.15 --pick-file /tmp/spin.txt
  spin=$(cat /tmp/spin.txt)
  timed timeout 120 python3 sweep.py --spins "$spin" --seeds 8 --repeats 3 --configs RACE_OVERLAP=0 RACE_PRECISION=fp8 RACE_GRAPH=0 RACE_BATCH=1 RACE_TOPK=sort RACE_PAD_MB=64
  t0=$SECONDS
  pids=()
  for i in 1 2 3 4; do
    timeout 100 python3 sweep.py --spins "$spin" --seeds 6 --first-seed $((100 * i)) --repeats 2 --configs "" RACE_GRAPH=0 > "/tmp/shared_$i.txt" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}"  # a bare wait would also wait for the log's tee, forever
  echo "[$((SECONDS - t0)) s wall] 4 x sweep.py at once on one GPU (shared):"
  cat /tmp/shared_*.txt
  ;;
local)
  nvidia-smi -L; nproc
  cd examples/gpu_race
  # Calibrate the indexer's window on this machine: the spin whose baseline rate is nearest 25% alone.
  timed timeout 90 python3 sweep.py --spins 20000 22000 24000 26000 28000 30000 32000 --seeds 8 --repeats 2 --pick 0.25 --pick-file /tmp/spin.txt
  export RACE_SPIN=$(cat /tmp/spin.txt); echo "RACE_SPIN=$RACE_SPIN"
  # Ground truth: alone (one process on GPU 0) and shared (4 processes at once on GPU 1), at the same time.
  t0=$SECONDS
  CUDA_VISIBLE_DEVICES=0 timeout 150 python3 measure.py --runs 40 --processes 1 > /tmp/alone.txt 2>&1 & alone=$!
  CUDA_VISIBLE_DEVICES=1 timeout 150 python3 measure.py --runs 40 --processes 4 > /tmp/shared.txt 2>&1 & shared=$!
  wait $alone $shared
  echo "[$((SECONDS - t0)) s wall] measure.py --runs 40 --processes 1 (GPU 0) | --processes 4 (GPU 1)"
  cat /tmp/alone.txt /tmp/shared.txt
  cd "$root"
  timed timeout -s INT 330 python3 -m heisenbisect run examples/gpu_race/hypotheses.yaml --out /tmp/local --plain
  python3 -m heisenbisect report examples/gpu_race/hypotheses.yaml --out /tmp/local > /dev/null 2>&1
  tar -C /tmp/local -czf "$OUT/local_reports.tgz" --exclude=logs .
  ;;
ray)
  nvidia-smi -L
  cd "$root"
  timed timeout -s INT 250 python3 -m heisenbisect run examples/gpu_race/hypotheses.yaml --runner ray --out /tmp/ray --plain
  python3 -m heisenbisect report examples/gpu_race/hypotheses.yaml --out /tmp/ray > /dev/null 2>&1
  tar -C /tmp/ray -czf "$OUT/ray_reports.tgz" --exclude=logs .
  timed python3 examples/gpu_race/make_history_repo.py /tmp/history/repo --commits 100 --culprit 61
  timed timeout -s INT 230 python3 -m heisenbisect commits /tmp/history/repo.yaml --out /tmp/commits --plain
  tar -C /tmp/commits -czf "$OUT/commits_reports.tgz" --exclude=logs .
  cp /tmp/history/repo.yaml "$OUT/history_spec.yaml"
  ;;
screen|alone)
  nvidia-smi -L; nproc
  python3 -c 'import time; t = time.perf_counter(); import torch; torch.zeros(1, device="cuda"); print(f"import torch + CUDA context: {time.perf_counter() - t:.2f} s", torch.__version__)'
  spec=examples/gpu_race/hypotheses.yaml; [ "$stage" = alone ] && spec=examples/gpu_race/alone.yaml
  study=$root/.gpu-study/$stage; [ "$runner" = ray ] && study=$study-ray
  [ -d "$study" ] && echo "resuming the study carried in $study"
  timed timeout -s INT "$seconds" python3 -m heisenbisect run "$spec" --runner "$runner" --out "$study" --plain
  python3 -m heisenbisect report "$spec" --out "$study" > /dev/null 2>&1
  tar -C "$study" -czf "$OUT/${stage}-${runner}_reports.tgz" --exclude=logs .
  ;;
*) echo "unknown stage $stage"; exit 2 ;;
esac
