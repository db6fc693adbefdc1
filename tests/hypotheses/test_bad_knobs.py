"""Amplify's knobs validate as factors do: one line, exit 2, from `validate` and `amplify` alike,
and an empty `var` is refused rather than replaced by the name."""

from __future__ import annotations

import pytest

from heisenbisect.cli import main
from refused import one_line, refused_alike

TARGET = "target: {command: [/bin/true]}\n"
BAD_KNOBS = {
    "float high .inf": ("{name: N, type: float, low: 1, high: .inf}", "needs finite bounds"),
    "float low -.inf": ("{name: N, type: float, low: -.inf, high: 1}", "needs finite bounds"),
    "int high 1e400": ("{name: N, type: int, low: 1, high: 1e400}", "needs finite bounds"),
    "int high 2**63": ("{name: N, type: int, low: 1, high: 9223372036854775808}", "must fit in 64 bits"),
    "var with =": ("{name: N, type: int, low: 1, high: 4, var: 'A=B'}", "without '=' or NUL"),
    "var with NUL": ('{name: N, type: int, low: 1, high: 4, var: "A\\0B"}', "without '=' or NUL"),
    "empty var": ("{name: N, type: int, low: 1, high: 4, var: ''}", "must be non-empty"),
}


@pytest.mark.parametrize("case", BAD_KNOBS)
def test_a_bad_knob_is_one_line_exit_2_in_validate_and_amplify(tmp_path, capsys, case):
    knob, why = BAD_KNOBS[case]
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(f"{TARGET}amplify:\n  knobs:\n    - {knob}\n")
    refused = refused_alike(capsys, spec, "amplify", tmp_path / "out")
    assert why in refused and f"{spec}:" in refused and "knobs" in refused


def test_an_empty_factor_var_is_refused_like_any_bad_name(tmp_path, capsys):
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(f"{TARGET}factors: [{{name: F, var: '', levels: [a, b]}}]\n")
    assert main(["validate", str(spec)]) == 2
    refused = one_line(capsys)
    assert "must be non-empty" in refused and "factors" in refused
