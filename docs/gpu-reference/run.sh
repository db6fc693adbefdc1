#!/usr/bin/env bash
# The one command run on the GPU machine (nvidia-h200) for docs/gpu-reference/: installs the
# carried wheels (transformers[serving]'s and heisenbisect's deps the image lacks), builds the
# random model, measures its greedy top-2 gaps in-process, then screens with `bisect run`.
set -u -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
cd docs/gpu-reference
{ nvidia-smi -L; python3 -c 'import torch, transformers; print(torch.__version__, transformers.__version__)'; } 2>&1 | tee $OUT/machine.txt
timeout 120 python3 tiny_model.py /tmp/tiny-reference 2>&1 | tail -3
timeout 120 python3 tiny_model.py /tmp/tiny-reference $OUT/gaps 2>&1 | grep -v Warning | tail -4 | tee $OUT/gaps.txt
timeout 420 python3 -m heisenbisect run hypotheses.yaml --out /tmp/study 2>&1 | tail -40 | tee $OUT/run.txt
cp /tmp/study/gpu-reference/report.md /tmp/study/gpu-reference/paste.md $OUT/ 2>/dev/null
f=$(ls /tmp/study/gpu-reference/logs/*.log 2>/dev/null | head -1); [ -n "$f" ] && tail -c 200000 "$f" > $OUT/first-trial.log
tar czf $OUT/study.tgz -C /tmp/study gpu-reference --exclude='*.evidence.json' 2>/dev/null; ls -la $OUT
