"""Text from users is text (issue 37): a factor level that is mathtext to matplotlib, HTML, or a
markdown fence is shown as itself in every report; a plot that cannot be drawn costs no report."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from bisect_cli import bisect
from heisenbisect.reports.plotting import draw
from heisenbisect.user_text import capped, code, escaped

MATH = r"$\frac{1}{$"
HTML = "<b>x</b>"
FENCE = "a`b```c"  # a run of three would close a plain fence

TRIAL = """\
import json, os, random
rng = random.Random(int(os.environ["HEISENBISECT_SEED"]))
fails = os.environ["LEVEL"] == "on" and rng.random() < 0.6
with open(os.environ["HEISENBISECT_RESULT"], "w") as f:
    json.dump({"failures": int(fails), "total": 1}, f)
"""


def spec_with_levels(tmp_path: Path, levels: list[str]) -> Path:
    (tmp_path / "trial.py").write_text(TRIAL)
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(
        "study: text\n"
        f"target:\n  command: [{sys.executable!r}, trial.py]\n  result: json\n  timeout: 30\n"
        "factors:\n  - name: level\n    var: LEVEL\n"
        f"    levels: {json.dumps(['on', *levels])}\n"
        "statistics:\n  max_trials: 20\n  first_look: 10\nexecution:\n  parallel: 2\n"
    )
    return spec


@pytest.mark.slow
def test_mathtext_html_and_backticks_in_levels_render_as_text_in_run_and_report(tmp_path):
    spec = spec_with_levels(tmp_path, [MATH, HTML, FENCE])
    done = bisect("run", str(spec), "--plain", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    study = tmp_path / "reports" / "text"
    for name in ("results.json", "report.md", "paste.md", "rates.png"):
        assert (study / name).exists(), name
    report = (study / "report.md").read_text()
    assert "`level=<b>x</b>`" in report  # inside a code span: shown, never rendered
    assert f"`{MATH}`" in report or f"`level={MATH}`" in report
    assert "````level=a`b```c````" in report  # the fence is longer than any backtick run inside
    assert "````\n# baseline" in report  # the commands' fence outlasts the level's ``
    prose = re.sub(r"(?s)\n````\n.*?\n````\n|\n```\w*\n.*?\n```\n", "\n", report)
    prose = re.sub(r"(`+).*?\1", "", prose)  # code spans: literal
    assert HTML not in prose and MATH not in prose
    again = bisect("report", str(spec), cwd=tmp_path)
    assert "Traceback" not in again.stderr and "ParseSyntax" not in again.stderr, again.stderr


def test_a_plot_that_fails_leaves_one_warning_and_no_stale_image(tmp_path, capsys):
    stale = tmp_path / "rates.png"
    stale.write_bytes(b"old")

    def broken() -> None:
        raise ValueError("Unknown symbol: \\frac\nsecond line")

    assert draw(broken, stale) is False
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(stale) in err and "Unknown symbol" in err
    assert not stale.exists()


def test_matplotlib_draws_a_mathtext_label_as_text(tmp_path):
    from heisenbisect.reports.plotting import pyplot

    plt = pyplot()
    fig, ax = plt.subplots()
    ax.set_yticks([0])
    ax.set_yticklabels([MATH])
    path = tmp_path / "p.png"
    assert draw(lambda: fig.savefig(path), path)
    plt.close(fig)


def test_user_text_is_capped_and_escaped():
    huge = "v" * 5_000_000
    assert len(capped(huge)) < 300 and "5000000 characters" in capped(huge)
    assert capped("a\nb\rc") == "a\\nb\\rc"
    assert code(FENCE) == "````a`b```c````"
    assert code("`x`") == "`` `x` ``"
    assert escaped("<b>*x*</b> & [l](u)") == "&lt;b&gt;\\*x\\*&lt;/b&gt; &amp; \\[l\\](u)"


def test_a_knob_value_with_html_is_text_in_amplify_md():
    from heisenbisect.reports.amplify import knob_section
    from heisenbisect.reports.amplify_knobs import KnobLine

    line = KnobLine("mode", HTML, f"{HTML}, plain", "low", None, None, None)
    text = "\n".join(knob_section([line]))
    assert HTML not in text and "&lt;b&gt;x&lt;/b&gt;" in text
