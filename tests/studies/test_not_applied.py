"""A factor that never reached the target is ``not_applied``, never a decoy (issue 21, item 2).

Real studies of real targets: a misspelt variable (``APP_LOKC``, the target reads
``APP_LOCK``) beside a real fix and a decoy read only by a grandchild process; an effect
carried by a variable that only a shell wrapper reads; group screening, where a change
cleared by a group is not cleared when its variable was never read; `bisect validate --probe`.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
import textwrap
from pathlib import Path

import pytest

import heisenbisect
from bisect_cli import bisect
from heisenbisect.decide.exit_code import exit_code
from heisenbisect.decide.group.strategy import GroupScreening, GroupSettings
from heisenbisect.decide.reach import UNSEEN_REACH, ReadTally, applied_verdict, reach_of
from heisenbisect.decide.screening import ScreeningSettings
from heisenbisect.flag_simulation import scenario
from heisenbisect.hypotheses.model import Spec
from heisenbisect.records import Config, EnvReads, Verdict
from heisenbisect.reports.context import ReportContext
from heisenbisect.reports.group import markdown
from heisenbisect.testing.strategy_kit import drive_in_order

APP = """\
import json, os, random, subprocess, sys
# the decoy is read by a grandchild only: python -> python -> python
grandchild = "import os; os.environ.get('APP_TRACE')"
child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {grandchild!r}], check=True)"
subprocess.run([sys.executable, "-c", child], check=True)
fixed = os.environ.get("APP_LOCK") == "1" or "--fixed" in sys.argv
failed = not fixed and random.Random(int(os.environ["HEISENBISECT_SEED"])).random() < 0.7
print(json.dumps({"failures": int(failed), "total": 1}))
"""


# APP without the grandchild: one interpreter a run, where the decoy is not what is tested
PLAIN_APP = "\n".join(line for line in APP.splitlines() if "child" not in line) + "\n"


def write_study(folder: Path, factors: str, command: str = "[python, app.py]", app: str = APP) -> Path:
    (folder / "app.py").write_text(app)
    spec = folder / "hypotheses.yaml"
    spec.write_text(textwrap.dedent(f"""\
        study: applied
        target:
          command: {command}
          timeout: 60
        statistics: {{zero_rate: 0.25, max_trials: 20, first_look: 10}}
        execution: {{parallel: 2}}
        factors:
        """) + textwrap.indent(textwrap.dedent(factors), "  "))
    return spec


FACTORS = """\
- name: lock_typo
  var: APP_LOKC
  levels: ["0", "1"]
- name: lock
  var: APP_LOCK
  levels: ["0", "1"]
- name: trace
  var: APP_TRACE
  levels: ["0", "1"]
"""


@pytest.mark.slow
def test_a_misspelt_variable_is_not_applied_with_did_you_mean_never_a_decoy(tmp_path):
    spec = write_study(tmp_path, FACTORS)
    done = bisect("run", str(spec), "--out", "out", "--plain", cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-3000:]  # not decided: the misspelt arm tested nothing
    study = tmp_path / "out" / "applied"
    results = json.loads((study / "results.json").read_text())
    arms = {a["factor"]: a for a in results["arms"]}
    typo = arms["lock_typo"]
    assert typo["verdict"] == "not_applied"
    assert re.fullmatch(r"APP_LOKC never read by a Python process of the target in 2\d runs; did you mean "
                        r"APP_LOCK\? \(the runs alone: (no_effect|inconclusive)\)", typo["note"]), typo["note"]
    assert typo["reach"] | {"tracked_runs": None} == {
        "var": "APP_LOKC", "tracked_runs": None, "tracked_runs_with_result": typo["trials"], "read_in_runs": 0,
        "copied_in_runs": 0, "copied_at": [], "did_you_mean": ["APP_LOCK"]}
    assert arms["lock"]["verdict"] == "eliminates" and arms["lock"]["note"] == ""
    # read only by a grandchild process: it reached the target, so it is judged on its runs
    assert arms["trace"]["verdict"] in ("no_effect", "inconclusive")
    assert arms["trace"]["reach"]["read_in_runs"] == arms["trace"]["reach"]["tracked_runs"] >= 20
    assert results["schema_version"] == 3
    assert "`lock_typo=1` was not applied (APP_LOKC never read" in results["conclusion_markdown"]
    assert "Fix the factor's `var` in the spec" in results["conclusion_markdown"]

    line = next(x for x in done.stdout.splitlines() if x.startswith("lock_typo=1"))
    assert re.match(r"lock_typo=1 +not_applied +\d+/2\d runs failed: APP_LOKC never read .*did you mean APP_LOCK\?", line)
    row = next(x for x in (study / "report.md").read_text().splitlines() if x.startswith("| `lock_typo`"))
    assert "**not_applied** (`APP_LOKC` never read; did you mean `APP_LOCK`?)" in row

    again = heisenbisect.run(spec, out=tmp_path / "out")  # the Python API: the same answer, from the store
    assert again.verdict("lock_typo=1") == "not_applied" and again.exit_code == 1 and not again.decided
    [arm] = [a for a in again.arms if a.change == "lock_typo=1"]
    assert arm.note == typo["note"]


@pytest.mark.slow
def test_an_effect_through_a_variable_only_a_shell_wrapper_reads_keeps_its_verdict(tmp_path):
    (tmp_path / "wrapper.sh").write_text('if [ "$APP_FIX" = 1 ]; then exec python3 app.py --fixed; fi\nexec python3 app.py\n')
    spec = write_study(tmp_path, """\
        - name: fix
          var: APP_FIX
          levels: ["0", "1"]
        """, command="[sh, wrapper.sh]", app=PLAIN_APP)
    done = bisect("run", str(spec), "--out", "out", "--plain", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    [arm] = json.loads((tmp_path / "out" / "applied" / "results.json").read_text())["arms"]
    assert arm["verdict"] == "eliminates"  # the effect proves the change reached the target
    assert arm["reach"]["read_in_runs"] == 0 and arm["reach"]["tracked_runs"] >= 10
    assert arm["note"].startswith("APP_FIX never read by a Python process of the target in ")
    assert arm["note"].endswith("the effect shows that something the tracker cannot see reads it (a shell wrapper, C code)")


def test_validate_probe_says_per_factor_whether_its_variable_reached_the_target(tmp_path):
    spec = write_study(tmp_path, FACTORS + """\
- name: mode
  kind: arg
  levels: [null, --fixed]
""")
    done = bisect("validate", "--probe", str(spec), cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # a variable never read: worth fixing before a study
    lines = done.stdout.splitlines()
    assert re.fullmatch(r"probe: ran the baseline once: ok \([01]/1 failed\); 3 Python processes tracked", lines[1])
    assert lines[2:] == [
        "  lock_typo: APP_LOKC: never read; did you mean APP_LOCK?",
        "  lock: APP_LOCK: read by 1 Python process",
        "  trace: APP_TRACE: read by 1 Python process",
        "  mode: an arg factor: arguments are not tracked",
    ]
    spec.write_text(spec.read_text().replace("APP_LOKC", "APP_LOCK"))
    fixed = bisect("validate", str(spec), "--probe", cwd=tmp_path)
    assert fixed.returncode == 0 and "  lock_typo: APP_LOCK: read by 1 Python process" in fixed.stdout

    (tmp_path / "app.sh").write_text('echo \'{"failures": 0, "total": 1}\'\n')
    spec.write_text(spec.read_text().replace("[python, app.py]", "[sh, app.sh]"))
    shell = bisect("validate", "--probe", str(spec), cwd=tmp_path)
    assert shell.returncode == 0 and "no Python process started" in shell.stdout
    assert "  lock_typo: APP_LOCK: not tracked: no Python process ran" in shell.stdout


GROUP = GroupSettings(ScreeningSettings(confidence=0.95, zero_rate=0.05, min_reduction=0.5, max_trials=480, first_look=15),
                      group_size=4)


def test_group_screening_does_not_clear_a_change_whose_variable_was_never_read():
    truth = scenario(16, rate=0.5, eliminators=1, breakers=0, seed=3)
    [elim] = [c for c, v in truth.expected.items() if v == "eliminates"]
    inert = [c for c, v in truth.expected.items() if v == "no_effect"]
    typo, unread_fix = inert[5], elim
    variables = {f: f"APP_{f.upper()}" for f, _ in truth.changes}
    variables[typo[0]] = f"APP_{typo[0].upper()}X"  # misspelt: the target reads APP_F0NN
    variables[unread_fix[0]] = "BUILD_FLAG"  # read only by a build script the tracker cannot see
    read = {f"APP_{f.upper()}": 1 for f, _ in truth.changes if (f, "1") != unread_fix}
    result = drive_group(truth, variables, read)
    got = {v.change: v for v in result.changes}
    assert got[typo].verdict == "not_applied" and got[typo].via_group  # not "cleared by group"
    assert got[typo].note.startswith(f"APP_{typo[0].upper()}X never read by a Python process of the target in ")
    assert f"did you mean APP_{typo[0].upper()}?" in got[typo].note
    assert got[unread_fix].verdict == "eliminates" and "cannot see reads it" in got[unread_fix].note
    assert {got[c].verdict for c in inert if c != typo} <= {"no_effect", "inconclusive"}
    assert any(got[c].via_group for c in inert if c != typo)  # the search did clear changes by groups
    assert exit_code(result) == 1
    factors = [{"name": f, "var": variables[f], "levels": ["0", "1"]} for f, _ in truth.changes]
    spec = Spec.model_validate({"study": "g", "target": {"command": "true"}, "factors": factors})
    text = markdown(spec, "spec.yaml", result, [], ReportContext(), Path("."))
    assert "## Changes never applied (1)" in text and f"- `{typo[0]}=1`: APP_{typo[0].upper()}X never read" in text


def test_group_screening_says_not_applied_of_a_change_decided_by_its_own_arm():
    truth = scenario(2, rate=0.5, eliminators=1, breakers=0, seed=1)
    [inert] = [c for c, v in truth.expected.items() if v == "no_effect"]
    variables = {"f000": "APP_F000", "f001": "APP_F001", inert[0]: "APP_FO01"}
    result = drive_group(truth, variables, {"APP_F000": 1, "APP_F001": 1})
    [verdict] = [v for v in result.changes if v.change == inert]
    assert (verdict.verdict, verdict.via_group) == ("not_applied", False)
    assert "did you mean APP_F00" in verdict.note
    arm = result.arms[verdict.arm]  # the search's table and tree say so too
    assert (arm.decision, arm.result.verdict) == ("not_applied", Verdict.NOT_APPLIED)


def drive_group(truth, variables: dict[str, str], read: dict[str, int]):
    """Group screening of ``truth``'s simulated runs, each reading the names in ``read``."""
    strategy = GroupScreening(Config(), list(truth.changes), GROUP, variables)
    rng = random.Random(7)
    drive_in_order(strategy, lambda config, n: dataclasses.replace(truth.outcome(config, n, rng), env_reads=EnvReads(1, read)))
    return strategy.result()


def test_the_rule_never_turns_an_effect_or_an_unknown_into_not_applied():
    def reach(reads: list[EnvReads | None], var: str = "APP_LOKC"):
        tally = ReadTally()
        for r in reads:
            tally.add(r)
        return reach_of(var, [tally])

    unread = reach([EnvReads(1, {"APP_LOCK": 1}), None])
    assert unread.never_read and unread.similar == ("APP_LOCK",)
    crashed = ReadTally()
    crashed.add(EnvReads(1, {}), has_result=False)  # every trial crashed: perhaps on the change itself
    assert not reach_of("APP_LOKC", [crashed]).never_read
    assert applied_verdict(Verdict.NO_EFFECT, unread, effect_seen=False)[0] is Verdict.NOT_APPLIED
    assert applied_verdict(Verdict.INCONCLUSIVE, unread, effect_seen=False)[0] is Verdict.NOT_APPLIED
    for claim in (Verdict.ELIMINATES, Verdict.REDUCES, Verdict.INCREASES):
        assert applied_verdict(claim, unread, effect_seen=True)[0] is claim
    assert applied_verdict(Verdict.INCONCLUSIVE, unread, effect_seen=True)[0] is Verdict.INCONCLUSIVE
    assert applied_verdict(Verdict.CANNOT_REPRODUCE, unread, effect_seen=False) == (Verdict.CANNOT_REPRODUCE, "")
    read = reach([EnvReads(1, {"APP_LOKC": 1}), EnvReads(1, {})])  # read in one run of two
    assert not read.never_read
    assert applied_verdict(Verdict.NO_EFFECT, read, effect_seen=False) == (Verdict.NO_EFFECT, "")
    for unseen in (
        reach([EnvReads(2, {}, ("pydantic_settings/sources.py:88",))]),  # copied whole: may be read there
        reach([None, None]),  # no Python process ever ran (`python -I`, `-S`): nothing is known
    ):
        assert not unseen.never_read  # the verdict stands, and says the tracker could not see
        verdict, note = applied_verdict(Verdict.NO_EFFECT, unseen, effect_seen=False)
        assert verdict is Verdict.NO_EFFECT and note.endswith(UNSEEN_REACH) and unseen.line() in note
        assert applied_verdict(Verdict.ELIMINATES, unseen, effect_seen=True) == (Verdict.ELIMINATES, "")
    assert reach([EnvReads(1, {"app_lokc": 1, "APP_LOCKED_AT": 1, "LOCK": 1})]).similar == ("app_lokc",)


@pytest.mark.slow
def test_a_target_run_with_python_isolated_says_the_tracker_could_not_see(tmp_path):
    """``python -I`` ignores the tracker's hook: no run is tracked, so a decoy's no_effect (or
    inconclusive) is not taken for proof that the change reached the target; the report and
    the conclusion say so beside the verdict."""
    spec = write_study(tmp_path, "- {name: typo, var: APP_LOKC, levels: ['0', '1']}\n",
                       command="[python, -I, app.py]", app=PLAIN_APP)
    done = bisect("run", str(spec), "--out", "out", "--plain", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    data = json.loads((tmp_path / "out" / "applied" / "results.json").read_text())
    (arm,) = data["arms"]
    assert arm["verdict"] in ("no_effect", "inconclusive")  # never not_applied: nothing was seen
    assert UNSEEN_REACH in arm["note"] and "python -I" in arm["note"]
    report = (tmp_path / "out" / "applied" / "report.md").read_text()
    conclusion = report.split("**Conclusion.**", 1)[1].split("\n\n", 1)[0]
    assert "the tracker cannot tell whether the change reached the target" in conclusion


def test_a_not_applied_arm_whose_runs_alone_were_inconclusive_is_not_told_to_rename():
    from heisenbisect.reports.screening import not_applied_sentence

    reach = reach_of("APP_LOKC", [_tally(EnvReads(1, {"APP_LOCK": 1}))])
    inconclusive = not_applied_sentence(["`typo=1`"], [reach], ["inconclusive"])
    assert "Fix the factor's `var`" not in inconclusive and "C code" in inconclusive
    decoy = not_applied_sentence(["`typo=1`"], [reach], ["no_effect"])
    assert "Fix the factor's `var`" in decoy


def _tally(*reads: EnvReads) -> ReadTally:
    tally = ReadTally()
    for r in reads:
        tally.add(r)
    return tally
