"""A trial at a released version: a real environment per version, made by pip from a real
wheelhouse, once; a version that cannot be installed or imported is untestable."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.targets.command import CommandTarget
from heisenbisect.targets.installed import (
    READY,
    Environments,
    Installation,
    InstalledTarget,
    find_uv,
    installer,
)
from wheelhouse import BROKEN, NAME

pytestmark = pytest.mark.slow

SHOW = ("python", "-c", "import flakypkg, sys; print(flakypkg.__version__, sys.prefix)")


def _environments(releases, folder) -> Environments:
    installation = Installation(NAME, (), str(releases.wheels), None, "pip")
    return Environments(installation, folder, 300.0)


def test_a_version_is_installed_once_into_its_own_environment(releases, tmp_path):
    envs = _environments(releases, tmp_path / "envs")
    log = tmp_path / "first.build.log"
    assert envs.ensure("1.3.0", log, threading.Event()) is None
    env = envs.of("1.3.0")
    assert (env / READY).read_text().startswith(f"{NAME}==1.3.0")
    shown = subprocess.run(
        [str(env / "bin" / "python"), "-c", "import flakypkg; print(flakypkg.__version__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert shown.stdout.strip() == "1.3.0"
    assert "heisenbisect: imported flakypkg" in log.read_text()
    again = tmp_path / "second.build.log"
    assert envs.ensure("1.3.0", again, threading.Event()) is None
    assert not again.exists()  # ready: nothing ran


def test_a_version_that_does_not_import_or_install_is_a_problem_and_leaves_nothing(
    releases, tmp_path
):
    envs = _environments(releases, tmp_path / "envs")
    broken = envs.ensure(BROKEN, tmp_path / "broken.build.log", threading.Event())
    assert broken is not None
    assert broken[0].startswith(f"{NAME} {BROKEN} is installed but does not import (exit 97")
    assert "this release was built broken" in broken[1].read_text()
    assert not envs.of(BROKEN).exists()
    missing = envs.ensure("9.9.9", tmp_path / "missing.build.log", threading.Event())
    assert missing is not None and missing[0].startswith(f"{NAME} 9.9.9 cannot be installed")


def test_a_trial_runs_in_its_version_s_environment_and_an_untestable_one_is_skipped(
    releases, tmp_path
):
    envs = _environments(releases, tmp_path / "envs")
    target = InstalledTarget(CommandTarget(argv=SHOW, timeout_s=120, cwd=str(tmp_path)), envs)
    logs = tmp_path / "logs"
    logs.mkdir()
    ran = target.execute(
        Trial("t1", Config(commit="1.12.0"), 0, 1), logs / "t1.log", threading.Event()
    )
    assert ran.status is TrialStatus.OK, ran.detail
    assert f"1.12.0 {envs.of('1.12.0')}" in (logs / "t1.log").read_text()
    for trial_id in ("t2", "t3"):  # the second learns it from the first, without installing
        skipped = target.execute(
            Trial(trial_id, Config(commit=BROKEN), 0, 1),
            logs / f"{trial_id}.log",
            threading.Event(),
        )
        assert skipped.status is TrialStatus.SKIP
        assert "does not import" in skipped.detail
    assert not (logs / "t3.build.log").exists()


def test_the_installer_is_uv_when_found_beside_the_interpreter_and_pip_when_asked(monkeypatch):
    assert installer("pip") == "pip"
    monkeypatch.setenv("PATH", "")  # not on PATH: found beside the interpreter, as pip installs it
    uv = find_uv()
    if uv is None:
        pytest.skip("uv is not installed (the test extra brings it)")
    assert installer("auto") == installer("uv") == uv
    assert uv.endswith("/uv") and Path(uv).parent == Path(sys.executable).parent
