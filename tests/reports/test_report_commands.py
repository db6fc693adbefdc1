"""The by-hand commands a report shows run exactly the trial, whatever a level holds."""

from __future__ import annotations

import json
import subprocess
import sys

from heisenbisect.engine import trial_seed
from heisenbisect.hypotheses.loader import parse_spec
from heisenbisect.reports.reproduce import trial_command

PROBE = "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ.get('LEVEL'), os.environ['HEISENBISECT_SEED']]))"


def test_a_pasted_command_passes_spaces_quotes_and_newlines_unchanged(tmp_path):
    spec = parse_spec(json.dumps({
        "study": "quoting",
        "target": {"command": [sys.executable, "-c", PROBE]},
        "factors": [
            {"name": "mode", "kind": "arg", "levels": [[], ["--name", "it's a\nnew line; $(rm -rf /)"]]},
            {"name": "level", "var": "LEVEL", "levels": ["plain", "two\nlines 'and' \"quotes\" $HOME"]},
        ],
    }), "spec.json")
    for config in spec.arms():
        command = trial_command(spec, config, tmp_path)
        out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True).stdout
        args, level, seed = json.loads(out)
        assert args == spec.arguments(config)
        assert level == spec.environment(config)["LEVEL"]
        assert seed == str(trial_seed("quoting", config.key, 0))
