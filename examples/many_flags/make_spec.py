"""Write hypotheses.yaml (and truth.json) for N flags: `python make_spec.py 256`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent


def write(count: int, folder: Path = HERE, study: str = "many-flags") -> None:
    names = [f"flag{i:03d}" for i in range(count)]
    pick = lambda share: names[int(share * count)]  # noqa: E731  spread the effects over the groups
    truth = {
        "flags": count,  # target.py reads MF_flag000 .. by name, as a program reads all its flags
        "eliminates": [pick(0.14), pick(0.79)],
        "reduces": [pick(0.47)],
        "or_pair": [pick(0.25), pick(0.70)],
        "breakers": [pick(0.87)],
        "cause_rate": 0.3,  # two causes: the baseline fails in 1 - 0.7^2 = 51% of runs
        "reducer_factor": 0.3,
    }
    (folder / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    lines = [
        f"# {count} flags, ground truth in truth.json (a simulated target: see README.md)",
        f"study: {study}",
        "question: Which of these flags drive the failure to zero, alone or together?",
        "target:",
        f"  command: [{sys.executable if folder != HERE else 'python'}, target.py]",
        f"  cwd: {HERE if folder != HERE else '.'}",
        f"  env: {{MF_TRUTH: {folder / 'truth.json' if folder != HERE else 'truth.json'}}}",
        "  timeout: 30",
        "statistics:",
        "  strategy: group",
        "  zero_rate: 0.05",
        "  max_trials: 480",
        "  first_look: 15",
        "execution:",
        "  parallel: 2",
        "factors:",
    ]
    for name in names:
        lines += [f"  - name: {name}", f"    var: MF_{name}", '    levels: ["0", "1"]']
    (folder / "hypotheses.yaml").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    write(int(sys.argv[1]) if len(sys.argv) > 1 else 256)
