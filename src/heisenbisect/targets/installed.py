"""A trial at a released version: run in a virtual environment where that version is installed.

`bisect versions` (`studies.versions`) wraps the spec's command target: each version gets one
environment of its own, made once and kept in a cache folder (`layout.VersionsPaths.envs`),
with uv where it is installed and pip otherwise, never touching the environment heisenbisect
runs in. A trial runs with that environment's ``bin`` first on PATH, so ``python`` (and any
console script CMD names) is the environment's. A version that cannot be installed, or whose
modules fail to import, is untestable (a ``skip``), never a failure.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import importlib.util
import os
import shlex
import shutil
import sys
import threading
from pathlib import Path
from typing import ClassVar

from heisenbisect.errors import HeisenbisectError
from heisenbisect.records import Outcome, Trial, TrialStatus
from heisenbisect.targets.base import TrialTarget
from heisenbisect.targets.commit import run_build
from heisenbisect.targets.protocol import merged_environment, trial_outcome

READY = ".heisenbisect-ready"  # written last: an environment without it is half made
IMPORT_FAILED = 97  # the import check's exit status, telling "cannot import" from "cannot install"
LOCK_POLL_S = 0.1

# Imports every top-level module the installed distribution ships (top_level.txt, else RECORD).
IMPORT_CHECK = """\
import importlib, importlib.metadata as md, sys, traceback
dist = md.distribution(sys.argv[1])
names = (dist.read_text("top_level.txt") or "").split()
if not names:
    for f in dist.files or ():
        top = f.parts[0]
        if len(f.parts) > 1 and not top.endswith((".dist-info", ".data")) and top != "..":
            names.append(top)
        elif len(f.parts) == 1 and top.endswith((".py", ".so", ".pyd")):
            names.append(top.split(".")[0])
names = sorted({n for n in names if n.isidentifier()})
for name in names:
    try:
        importlib.import_module(name)
    except BaseException:
        traceback.print_exc()
        print(f"heisenbisect: import {name} failed", file=sys.stderr)
        sys.exit(97)
print("heisenbisect: imported", *names)
"""


def installer(choice: str = "auto") -> str:
    """What makes the environments: the path of uv (``uv``, or ``auto`` when uv is on PATH or
    beside the running interpreter, as ``pip install uv`` puts it) or ``pip`` (this
    interpreter's); the one asked for missing: `HeisenbisectError`."""
    uv = find_uv()
    if choice in ("auto", "uv") and uv is not None:
        return uv
    if choice == "uv":
        raise HeisenbisectError(
            f"--installer uv: uv is neither on PATH nor beside {sys.executable}; install it "
            "(pip install uv) or use --installer pip"
        )
    if importlib.util.find_spec("pip") is not None:
        return "pip"
    raise HeisenbisectError(
        f"--installer {choice}: "
        + ("this interpreter has no pip" if choice == "pip" else "neither uv nor pip is available")
        + " to make the environments; install one"
    )


def find_uv() -> str | None:
    """uv on PATH, else beside this interpreter (a virtual environment's ``bin``)."""
    beside = Path(sys.executable).parent / "uv"
    return shutil.which("uv") or (str(beside) if os.access(beside, os.X_OK) else None)


@dataclasses.dataclass(frozen=True)
class Installation:
    """How each version's environment is made: the package, the pins beside it, where from."""

    package: str
    pins: tuple[str, ...] = ()  # --with: other requirements, installed beside every version
    find_links: str | None = None  # a folder of wheels and sdists
    index_url: str | None = None  # without it, --find-links alone means no index at all
    tool: str = "pip"  # "pip", or the path of uv (`installer`)
    python: str = sys.executable  # the interpreter each environment is made from

    def requirements(self, version: str) -> list[str]:
        return [f"{self.package}=={version}", *self.pins]

    def folder_name(self, version: str) -> str:
        """``<version>-<hash of everything that makes the environment>``: a cache key."""
        what = [self.package, version, *self.pins, self.find_links, self.index_url, self.python]
        digest = hashlib.sha256("\0".join(str(w) for w in what).encode()).hexdigest()[:10]
        return f"{version}-{digest}"

    def sources(self) -> list[str]:
        words = ["--find-links", self.find_links] if self.find_links else []
        if self.index_url:
            words += ["--index-url", self.index_url]
        elif self.find_links:
            words.append("--no-index")
        return words

    def script(self, env: Path, version: str) -> str:
        """The shell line that makes ``env``, installs ``version`` there and imports it."""
        python = str(env / "bin" / "python")
        if self.tool != "pip":
            make = [self.tool, "venv", "--quiet", "--python", self.python, str(env)]
            install = [self.tool, "pip", "install", "--python", python]
        else:  # pip of this interpreter installs into the new one (pip >= 22.3's --python)
            make = [self.python, "-m", "venv", "--without-pip", str(env)]
            install = [self.python, "-m", "pip", "--python", python, "install"]
            install += ["--disable-pip-version-check", "--no-input"]
        install += [*self.sources(), *self.requirements(version)]
        check = [python, "-c", IMPORT_CHECK, self.package]
        return " && ".join(shlex.join(step) for step in (make, install, check))


class Environments:
    """One environment per version in ``folder``, made once (under a file lock, so threads and
    Ray workers on one host make each one once) and reused across trials and resumes."""

    def __init__(self, installation: Installation, folder: Path, timeout_s: float):
        self.installation = installation
        self.folder = Path(folder)
        self.timeout_s = timeout_s

    def of(self, version: str) -> Path:
        return self.folder / self.installation.folder_name(version)

    def ensure(
        self, version: str, build_log: Path, cancelled: threading.Event
    ) -> tuple[str, Path] | None:
        """Make the environment of ``version`` unless it is ready; (what went wrong, its log)
        or None (ready, or cancelled)."""
        env_dir = self.of(version)
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / f"{env_dir.name}.lock", "w") as lock:
            while True:  # a blocking flock would not hear `cancelled`
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if cancelled.wait(LOCK_POLL_S):
                        return None
            if (env_dir / READY).exists():
                return None
            shutil.rmtree(env_dir, ignore_errors=True)  # what a killed install left half made
            ok, detail = run_build(
                ("/bin/sh", "-c", self.installation.script(env_dir, version)),
                self.folder,
                merged_environment({"VIRTUAL_ENV": None, "PYTHONHOME": None}),
                build_log,
                cancelled,
                self.timeout_s,
            )
            if ok:
                (env_dir / READY).write_text("\n".join(self.installation.requirements(version)))
                return None
            shutil.rmtree(env_dir, ignore_errors=True)
            if cancelled.is_set():
                return None
            package = self.installation.package
            what = (
                f"{package} {version} is installed but does not import"
                if detail.startswith(f"exit {IMPORT_FAILED},")
                else f"{package} {version} cannot be installed"
            )
            return f"{what} ({detail})", build_log


class InstalledTarget(TrialTarget):
    """Runs a trial of ``inner`` with the trial's version installed (``trial.config.commit``).

    ``inner`` must keep a bare ``python`` in its argv (not this interpreter's path), so that
    the environment's ``bin``, first on PATH, decides which Python runs.
    """

    keeps_state: ClassVar[bool] = False

    def __init__(self, inner: TrialTarget, environments: Environments):
        self.inner = inner
        self.environments = environments
        self._setup()

    def _setup(self) -> None:
        self._failed: dict[str, tuple[str, Path]] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_failed", "_lock")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._setup()

    def execute(self, trial: Trial, log_path: Path, cancelled: threading.Event) -> Outcome:
        version = trial.config.commit
        assert version is not None, "version trials carry their version as the config's commit"
        with self._lock:
            failed = self._failed.get(version)
        if failed:
            return _skip(trial, failed[1], f"{failed[0]} (earlier)")
        build_log = log_path.with_name(f"{trial.trial_id}.build.log")
        problem = self.environments.ensure(version, build_log, cancelled)
        if cancelled.is_set():
            return trial_outcome(trial, TrialStatus.ERROR, log_path=log_path, detail="cancelled")
        if problem is not None:
            with self._lock:
                self._failed[version] = problem
            return _skip(trial, problem[1], problem[0])
        env_dir = self.environments.of(version)
        env = dict(trial.env)
        path = env.get("PATH") or os.environ.get("PATH", "")
        env["PATH"] = os.pathsep.join(p for p in (str(env_dir / "bin"), path) if p)
        env["VIRTUAL_ENV"] = str(env_dir)
        env["PYTHONHOME"] = None  # unset (`merged_environment`)
        return self.inner.execute(dataclasses.replace(trial, env=env), log_path, cancelled)

    def close(self) -> None:
        self.inner.close()


def _skip(trial: Trial, log_path: Path, detail: str) -> Outcome:
    return trial_outcome(trial, TrialStatus.SKIP, log_path=log_path, detail=detail)
