#!/usr/bin/env bash
# The one command run on the 2-GPU device machine for docs/ray.md. Needs the wheels in .whl/
# (ray 2.60.0 without its Java/RLlib/Serve/Data/Tune/Train parts, and the deps the image lacks)
# and writes everything under $OUT.
set -u -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
{ nvidia-smi -L; nproc; python3 -c 'import sys, torch, ray; print(sys.version.split()[0], torch.__version__, ray.__version__, torch.cuda.device_count())'; } 2>&1 | tee $OUT/machine.txt
MATMUL_DEVICE=cpu HEISENBISECT_SEED=1 timeout 60 python3 examples/gpu/matmul_stress.py 2>&1 | tee $OUT/cpu_check.txt
MATMUL_SECONDS=4 timeout 240 python3 benchmarks/gpu_scaling.py --trials 8 --json $OUT/gpu_scaling.json 2>&1 | tee $OUT/gpu_scaling.txt
timeout 90 python3 benchmarks/runners.py --trials 500 2>&1 | tee $OUT/runners.txt
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/runners/test_runner_contract.py tests/runners/test_ray_runner.py tests/runners/test_ray_screening.py 2>&1 | tee $OUT/tests.txt
