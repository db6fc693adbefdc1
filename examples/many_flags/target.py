"""A simulated target with many flags and a known ground truth, following the trial protocol.

Flags are environment variables ``MF_<name>`` ("0" baseline, "1" changed). truth.json says
which flags do what: ``eliminates`` (each removes a necessary condition of the failure),
``reduces`` (scales every cause by ``reducer_factor``), ``or_pair`` (two independent causes,
each removed by one flag: each alone only reduces, both together eliminate), ``breakers``
(exit 125 at start-up, untestable); every other flag is inert. Standard library plus
heisenbisect's failure model; the seed comes from HEISENBISECT_SEED, so a trial is reproducible.
This is a simulation, not a real race: the point is a ground truth to check the search against.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

from heisenbisect.simulation import FailureModel

UNTESTABLE = 125


def read_flags(count: int) -> set[str]:
    """The flags set to "1": every flag is read, as a program reads all it has (inert ones too)."""
    names = [f"flag{i:03d}" for i in range(count)]
    return {name for name in names if os.environ.get(f"MF_{name}", "0") == "1"}


def main() -> int:
    truth = json.loads(Path(os.environ.get("MF_TRUTH", Path(__file__).with_name("truth.json"))).read_text())
    on = read_flags(truth["flags"])
    broken = [name for name in truth["breakers"] if name in on]
    if broken:
        print(f"many_flags: {broken[0]}=1 is not supported by this build", file=sys.stderr)
        return UNTESTABLE
    rng = random.Random(int(os.environ.get("HEISENBISECT_SEED", "0")))
    scale = truth["reducer_factor"] if any(name in on for name in truth["reduces"]) else 1.0
    clean = 1.0
    for name in truth["or_pair"]:
        if name not in on:
            clean *= 1.0 - truth["cause_rate"] * scale
    rate = 0.0 if any(name in on for name in truth["eliminates"]) else 1.0 - clean
    failures = FailureModel(rate, sessions=60, severity=0.2).draw(rng)
    Path(os.environ["HEISENBISECT_RESULT"]).write_text(json.dumps({"failures": failures, "total": 60}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
