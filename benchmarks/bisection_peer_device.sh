#!/usr/bin/env bash
# benchmarks/bisection_peer.py on the device machine (16 cores), resumable across calls:
#   bash benchmarks/bisection_peer_device.sh SECONDS [bisection_peer.py's cell options ...]
# It starts from the log in the working tree (benchmarks/results/bisection-peer.jsonl), appends
# each finished search to $OUT/bisection-peer.jsonl, stops after SECONDS (what finished stays), and
# prints the table. Copy $OUT/bisection-peer.jsonl over benchmarks/results/bisection-peer.jsonl
# before the next call: it skips what the log holds. git-bayesect, which the image lacks, comes as
# a wheel in .whl/ (carry it: `pip download --no-deps -d .whl git-bayesect==1.2`); numpy and scipy
# come with the image. Every worker uses one BLAS thread (bisection_peer.py sets it).
set -u -o pipefail
seconds=${1:?seconds}
shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/git_bayesect-*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
log=$OUT/bisection-peer.jsonl
[ -s "$log" ] || cp benchmarks/results/bisection-peer.jsonl "$log"
echo "$(nproc) cores; $(wc -l < "$log") searches in the log; python3 benchmarks/bisection_peer.py $*"
t0=$SECONDS
timeout -s INT -k 10 "$seconds" python3 benchmarks/bisection_peer.py --workers "$(nproc)" --log "$log" "$@" > "$OUT/run.txt" 2>&1
echo "[$((SECONDS - t0)) s wall, exit $?]; $(wc -l < "$log") searches in the log"
python3 benchmarks/bisection_peer.py --table-only --log "$log" | tee "$OUT/table.md"
