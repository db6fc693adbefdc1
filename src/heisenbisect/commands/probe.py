"""`bisect validate --probe FILE`: print what one baseline run says of each factor.

The probe is `studies.probe` (its module doc says why and what the exit codes mean)."""

from __future__ import annotations

import sys
from pathlib import Path

from heisenbisect.exit_codes import ExitCode
from heisenbisect.hypotheses import Spec
from heisenbisect.studies.probe import probe as probe_baseline


def probe(spec: Spec, spec_path: Path) -> int:
    """Run the baseline once, print a line per factor; returns the probe's exit code."""
    found = probe_baseline(spec, spec_path)
    if found.exit_code == ExitCode.USAGE:
        print(f"error: probe: {found.summary}", file=sys.stderr)
        return found.exit_code
    print(f"probe: {found.summary}")
    for name, line in found.factor_lines:
        print(f"  {name}: {line}")
    return found.exit_code
