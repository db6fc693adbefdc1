"""A crash is untestable, not a failure; silence is not "clean"; a misspelt result is not a pass.

Real target processes throughout: each traceback below is printed by a real Python dying
the way a broken commit or a typo makes it die.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.targets.command import CommandTarget
from heisenbisect.targets.protocol import ReportError, parse_report
from heisenbisect.targets.tracebacks import last_traceback


def stderr_of(tmp_path: Path, files: dict[str, str], main: str = "main.py") -> str:
    """What a real Python prints on stderr running ``main`` among ``files``."""
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    done = subprocess.run([sys.executable, main], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    return done.stderr


# -- the classifier --------------------------------------------------------------------------

COULD_NOT_RUN = {
    "ModuleNotFoundError": {"main.py": "import not_a_module_anywhere\n"},
    "ImportError": {"main.py": "from helper import fast_path\n", "helper.py": "def slow_path(): pass\n"},
    "SyntaxError": {"main.py": "import helper\n", "helper.py": "def f(:\n    pass\n"},
    "IndentationError": {"main.py": "import helper\n", "helper.py": "def f():\nreturn 1\n"},
    "NameError": {"main.py": "import os\nSETTINGS = load_settings()\n"},
    "FileNotFoundError": {"main.py": "def main():\n    open('config/serving.yaml')\nmain()\n"},
}


@pytest.mark.parametrize("kind", sorted(COULD_NOT_RUN))
def test_could_not_run_tracebacks_are_recognised(tmp_path, kind):
    crash = last_traceback("starting\n" + stderr_of(tmp_path, COULD_NOT_RUN[kind]))
    assert crash is not None and crash.kind == kind and crash.could_not_run, crash
    assert crash.exception.startswith(f"{kind}: ")


def test_a_syntax_error_in_the_script_itself_has_no_header_and_is_recognised(tmp_path):
    stderr = stderr_of(tmp_path, {"main.py": "x = (1,\n"})
    assert "Traceback" not in stderr
    crash = last_traceback(stderr)
    assert crash is not None and crash.kind == "SyntaxError" and crash.could_not_run


def test_a_runtime_exception_inside_a_function_may_be_the_bug(tmp_path):
    runtime = {"main.py": """\
        class Server:
            pass

        def serve(server):
            return server.lock

        serve(Server())
        """}
    crash = last_traceback(stderr_of(tmp_path, runtime))
    assert crash is not None and crash.kind == "AttributeError" and not crash.could_not_run
    assert crash.functions == ("<module>", "serve")


def test_a_name_error_inside_a_function_is_not_module_level(tmp_path):
    crash = last_traceback(stderr_of(tmp_path, {"main.py": "def run():\n    return undefined_name\nrun()\n"}))
    assert crash is not None and crash.kind == "NameError" and not crash.at_module_level and not crash.could_not_run


def test_the_last_of_chained_tracebacks_counts(tmp_path):
    chained = {"main.py": """\
        try:
            import not_a_module_anywhere
        except ImportError:
            def fallback():
                raise RuntimeError("no fast path and the fallback failed")
            fallback()
        """}
    crash = last_traceback(stderr_of(tmp_path, chained))
    assert crash is not None and crash.exception == "RuntimeError: no fast path and the fallback failed"
    assert not crash.could_not_run


def test_no_traceback_no_crash():
    assert last_traceback("3 of 20 requests corrupted\n") is None
    assert last_traceback("ImportError: printed by the program itself\n") is None


# -- the protocol, through real processes -------------------------------------------------------

def run_script(tmp_path: Path, body: str, **kwargs):
    (tmp_path / "target.py").write_text(textwrap.dedent(body))
    for name, text in kwargs.pop("files", {}).items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    target = CommandTarget((sys.executable, str(tmp_path / "target.py")), timeout_s=60, cwd=str(tmp_path), **kwargs)
    return target.execute(Trial("t-0001", Config(), 1, seed=7), tmp_path / "logs" / "t-0001.log", threading.Event())


SILENT = """\
    print("3 of 20 requests corrupted")
"""


def test_under_json_a_run_without_a_result_is_an_error_that_names_the_log(tmp_path):
    outcome = run_script(tmp_path, SILENT, result="json")
    assert outcome.status is TrialStatus.ERROR
    assert outcome.detail.startswith("no result line: exit 0") and outcome.log_path in outcome.detail
    assert "target.result: exit" in outcome.detail
    assert (run_script(tmp_path, SILENT, result="exit").status, run_script(tmp_path, SILENT).failures) == (TrialStatus.OK, 0)


def test_under_json_a_runtime_traceback_without_a_result_is_an_error_naming_it(tmp_path):
    outcome = run_script(tmp_path, "def serve():\n    return None.lock\nserve()\n", result="json")
    assert outcome.status is TrialStatus.ERROR and "no result line: exit 1 after AttributeError" in outcome.detail
    assert "target.result: exit" not in outcome.detail  # reading exit 1 as "failed" would blame the crash


@pytest.mark.parametrize("result", ["json", "exit"])
def test_a_could_not_run_traceback_is_untestable_in_both_modes(tmp_path, result):
    outcome = run_script(tmp_path, "from helper import fast_path\n", files={"helper.py": "x = 1\n"}, result=result)
    assert outcome.status is TrialStatus.SKIP, outcome
    assert outcome.detail.startswith("could not run: exit 1 after ImportError: cannot import name 'fast_path'")


def test_a_reported_result_beats_a_traceback(tmp_path):
    body = """\
        print('{"failures": 2, "total": 5}', flush=True)
        import not_a_module_anywhere
        """
    outcome = run_script(tmp_path, body, result="json")
    assert (outcome.status, outcome.failures, outcome.total) == (TrialStatus.OK, 2, 5)


def test_a_traceback_deeper_than_the_old_stderr_tail_is_seen(tmp_path):
    """An import chain 30 modules deep: its traceback is over 60 lines, the old tail was 20."""
    files = {f"m{i}.py": f"import m{i + 1}\n" for i in range(30)}
    files["m30.py"] = "from helper import fast_path\n"
    files["helper.py"] = "x = 1\n"
    outcome = run_script(tmp_path, "import m0\n", files=files, result="exit")
    assert outcome.status is TrialStatus.SKIP and "ImportError" in outcome.detail, outcome


def test_traceback_is_failure_reads_the_exit_code(tmp_path):
    outcome = run_script(tmp_path, "import not_a_module_anywhere\n", result="exit", traceback_is_failure=True)
    assert (outcome.status, outcome.failures) == (TrialStatus.OK, 1)


@pytest.mark.parametrize("line, key", [
    ('{"failed": 3, "total": 20}', "failed"),
    ('{"fails": 3, "total": 20}', "fails"),
    ('{"failure": 1}', "failure"),
    ('{"Failures": 3, "total": 20}', "Failures"),
    ('{"faliures": 3, "total": 20}', "faliures"),
])
def test_a_misspelt_failures_key_is_an_error_naming_it(tmp_path, line, key):
    outcome = run_script(tmp_path, f"print('{line}')\n", result="exit")
    assert outcome.status is TrialStatus.ERROR, outcome
    assert outcome.detail == f"unknown key {key!r} in the result line on stdout; expected 'failures'"


def test_a_misspelt_key_in_the_result_file_is_an_error(tmp_path):
    body = """\
        import json, os
        json.dump({"failing": 2, "total": 4}, open(os.environ["HEISENBISECT_RESULT"], "w"))
        """
    outcome = run_script(tmp_path, body)
    assert outcome.status is TrialStatus.ERROR
    assert outcome.detail == "unknown key 'failing' in the result file; expected 'failures'"


def test_extra_top_level_numbers_are_kept_as_metrics(tmp_path):
    """Issue 37: `{"failures": 3, "total": 20, "overlap": true}` was an error for every run."""
    line = '{"failures": 3, "total": 20, "overlap": true, "tok_s": 12.5, "metrics": {"tok_s": 9}}'
    outcome = run_script(tmp_path, f"print('{line}')\n")
    assert (outcome.status, outcome.failures, outcome.total) == (TrialStatus.OK, 3, 20), outcome
    assert outcome.metrics == {"tok_s": 9.0, "overlap": 1.0}  # what `metrics` says wins
    assert outcome.detail == "extra result fields kept as metrics: overlap"


@pytest.mark.parametrize("line, message", [
    ('{"failures": 0, "total": 4, "note": "slow"}', "unknown key 'note' in the result line on stdout is not a number"),
    ('{"failures": 0, "totl": 4}', "unknown key 'totl' in the result line on stdout; expected 'total'"),
    ('{"failures": 0, "total": 4, "metric": 3}', "unknown key 'metric' in the result line on stdout; expected 'metrics'"),
])
def test_a_near_miss_or_a_non_number_beside_the_keys_is_still_an_error(tmp_path, line, message):
    outcome = run_script(tmp_path, f"print('{line}')\n")
    assert outcome.status is TrialStatus.ERROR and outcome.detail.startswith(message), outcome.detail


def test_a_total_without_failures_is_an_error_but_a_json_log_line_is_not_a_result(tmp_path):
    outcome = run_script(tmp_path, """print('{"total": 20, "corrupted": 3}')\n""", result="exit")
    assert outcome.status is TrialStatus.ERROR and "unknown key 'corrupted'" in outcome.detail
    logged = run_script(tmp_path, """print('{"event": "warmup", "step": 3}')\nprint('{"failures": 1, "total": 2}')\n""")
    assert (logged.status, logged.failures) == (TrialStatus.OK, 1)
    logged = run_script(tmp_path, """print('{"event": "warmup", "step": 3}')\n""", result="exit")
    assert (logged.status, logged.failures) == (TrialStatus.OK, 0)


def test_parse_report_names_the_unknown_key():
    with pytest.raises(ReportError, match=r"^unknown key 'failed' in the result; expected 'failures'$"):
        parse_report('{"failed": 3, "total": 20}')
    with pytest.raises(ReportError, match=r"^unknown key 'fails' in the result line; expected 'failures'$"):
        parse_report('{"total": 20, "note": "x", "fails": 3}', "result line")
    assert parse_report('{"failures": 3, "total": 20, "metrics": {"tps": 1}}').failures == 3


@pytest.mark.parametrize("result", ["json", "exit"])
def test_a_result_printed_on_stderr_is_an_error_saying_so(tmp_path, result):
    body = """\
        import sys
        print('{"failures": 3, "total": 20}', file=sys.stderr)
        """
    outcome = run_script(tmp_path, body, result=result)
    assert outcome.status is TrialStatus.ERROR, outcome
    assert outcome.detail.startswith("a result line was printed on stderr, not stdout:")


# -- bisect trial -------------------------------------------------------------------------------

def trial(tmp_path: Path, body: str, *options: str, files: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    (tmp_path / "app.py").write_text(textwrap.dedent(body))
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text)
    argv = [sys.executable, "-m", "heisenbisect", "trial", "--p-bad", "0.5", "--logs", str(tmp_path / "logs"),
            *options, "--", sys.executable, "app.py"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_trial_a_misspelt_result_key_is_untestable_not_a_pass(tmp_path):
    done = trial(tmp_path, """print('{"failed": 3, "total": 20}')\n""")
    assert done.returncode == 125, done.stderr
    assert "unknown key 'failed' in the result line on stdout; expected 'failures'" in done.stderr
    assert "pass" not in done.stderr


def test_trial_a_result_on_stderr_is_untestable(tmp_path):
    done = trial(tmp_path, """import sys\nprint('{"failures": 3, "total": 20}', file=sys.stderr)\n""")
    assert done.returncode == 125 and "printed on stderr, not stdout" in done.stderr, done.stderr


def test_trial_a_broken_import_is_untestable_unless_tracebacks_are_the_failure(tmp_path):
    broken = "from helper import fast_path\n"
    done = trial(tmp_path, broken, files={"helper.py": "x = 1\n"})
    assert done.returncode == 125, done.stderr
    assert "could not run: exit 1 after ImportError: cannot import name 'fast_path'" in done.stderr
    assert trial(tmp_path, broken, "--traceback-is-failure").returncode == 1


def test_trial_result_json_reads_silence_as_untestable(tmp_path):
    assert trial(tmp_path, SILENT).returncode == 0  # the default reads the exit code, git bisect's language
    done = trial(tmp_path, SILENT, "--result", "json")
    assert done.returncode == 125 and "no result line: exit 0" in done.stderr, done.stderr


# -- studies ------------------------------------------------------------------------------------

def write_study(tmp_path: Path, script: str, result: str | None = None) -> Path:
    (tmp_path / "app.py").write_text(textwrap.dedent(script))
    spec = tmp_path / "hypotheses.yaml"
    result_line = f"  result: {result}\n" if result else ""
    spec.write_text(
        "study: crash\n"
        f"target:\n  command: [python, app.py]\n{result_line}  timeout: 60\n"
        "factors:\n  - name: fix\n    var: APP_FIX\n    levels: ['0', '1']\n"
        "statistics:\n  max_trials: 20\n  first_look: 10\n"
        "execution:\n  parallel: 2\n"
        f"output: {str(tmp_path / 'out')!r}\n"
    )
    return spec


def run_study(spec: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "heisenbisect", "run", str(spec), "--plain"],
                          capture_output=True, text=True, timeout=300, cwd=spec.parent)


@pytest.mark.slow
def test_a_target_that_prints_no_result_line_exits_4_naming_the_log(tmp_path):
    spec = write_study(tmp_path, """\
        import os, random
        rng = random.Random(int(os.environ["HEISENBISECT_SEED"]))
        print(f"{3 if rng.random() < 0.5 else 0} of 20 requests corrupted")
        """)
    done = run_study(spec)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "could not be reproduced" not in done.stdout + done.stderr
    line = next(line for line in done.stderr.splitlines() if line.startswith("no trial produced a result"))
    assert "first: no result line: exit 0" in line and "target.result: exit" in line
    log = Path(line.split("(log: ")[1].split(")")[0])
    assert log.is_file() and "requests corrupted" in log.read_text()
    results = json.loads((tmp_path / "out" / "crash" / "results.json").read_text())
    assert results["no_valid_runs"] is True


CRASHING = """\
    import os, random, sys

    class Server:
        def __init__(self):
            self.lock = None

    def serve(server):
        return server.locks  # a typo: every run dies here, before any request is checked

    serve(Server())
    """


@pytest.mark.slow
def test_a_baseline_whose_every_failure_is_a_traceback_refuses_with_exit_4(tmp_path):
    done = run_study(write_study(tmp_path, CRASHING, result="exit"))
    assert done.returncode == 4, done.stdout + done.stderr
    assert "decoy" not in done.stdout and "no_effect" not in done.stdout
    line = next(line for line in done.stderr.splitlines() if line.startswith("no valid runs"))
    assert "AttributeError: 'Server' object has no attribute 'locks'" in line
    log = Path(line.split("(log: ")[1].split(")")[0])
    assert log.is_file() and "Traceback (most recent call last):" in log.read_text()
    report = (tmp_path / "out" / "crash" / "report.md").read_text()
    assert "## The baseline failed only by crashing" in report and "No verdict" in report
    assert json.loads((tmp_path / "out" / "crash" / "results.json").read_text())["no_valid_runs"] is True


@pytest.mark.slow
def test_a_failing_assert_is_a_test_failure_not_a_crash(tmp_path):
    """A check's own `assert` is how a script says "failed": the study decides as before."""
    spec = write_study(tmp_path, """\
        import os, random
        rng = random.Random(int(os.environ["HEISENBISECT_SEED"]))
        corrupted = 0 if os.environ["APP_FIX"] == "1" else int(rng.random() < 0.6)
        assert corrupted == 0, f"{corrupted} of 20 requests corrupted"
        """, result="exit")
    done = run_study(spec)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert "no valid runs" not in done.stderr


def validate(spec: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "heisenbisect", "validate", str(spec)],
                          capture_output=True, text=True, timeout=60)


def test_validate_takes_json_or_exit_as_the_result(tmp_path):
    assert validate(write_study(tmp_path, SILENT, result="exit")).returncode == 0
    done = validate(write_study(tmp_path, SILENT, result="exitcode"))
    assert done.returncode == 2 and "target.result" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_the_sglang_target_always_reports_so_result_exit_is_refused(tmp_path):
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text("study: s\ntarget:\n  sglang: {model: some/model}\n  result: exit\n")
    done = validate(spec)
    assert done.returncode == 2 and "'result: exit' applies to a command" in done.stderr, done.stderr
