"""What the machine a study runs on is, as a report names it: a rate depends on it.

Collected when a study runs (`studies.run_record`) and when a commit bisection or an
amplification renders its report on the machine it ran on. Never imports torch (seconds, and
a CUDA context): versions come from package metadata and GPUs, the driver and CUDA from
``nvidia-smi`` when it is on PATH.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from importlib import metadata
from pathlib import Path

from heisenbisect import __version__

NO_REPOSITORY = "not in a git repository"
NO_COMMITS = "a git repository with no commits yet"


def load_average() -> float | None:
    """The 1-minute load average: processes running or waiting for a CPU, over the last minute."""
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):  # not on this platform
        return None


def cpu_model() -> str | None:
    """The CPU's model name (Linux's /proc/cpuinfo), else what the platform says, else None."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _nvidia_smi(*args: str) -> str | None:
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        return subprocess.run(
            ["nvidia-smi", *args], capture_output=True, text=True, timeout=20, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def gpu_names() -> list[str]:
    out = _nvidia_smi("--query-gpu=name", "--format=csv,noheader")
    return [line.strip() for line in (out or "").splitlines() if line.strip()]


def driver_and_cuda() -> tuple[str | None, str | None]:
    """The NVIDIA driver's version and the CUDA version it supports, from nvidia-smi's header."""
    out = _nvidia_smi()
    if not out:
        return None, None
    driver = re.search(r"Driver Version:\s*([\d.]+)", out)
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", out)
    return (driver and driver.group(1)), (cuda and cuda.group(1))


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def target_commit(folder: Path) -> str | None:
    """The commit the target's folder is at (``+dirty`` with uncommitted changes), if in git."""
    from heisenbisect.git import open_repo, resolve

    try:
        with open_repo(folder, "target.cwd") as repo:  # closed: no git process outlives the call
            sha = resolve(repo, "HEAD", "target.cwd")
            return sha + ("+dirty" if repo.is_dirty(untracked_files=False) else "")
    except Exception:  # no git, no commit yet, git missing: nothing to record
        return None


def source_commit() -> str | None:
    """The commit of the checkout this package runs from (``pip install -e``); None when installed."""
    here = Path(__file__).resolve().parent
    return None if "site-packages" in here.parts else target_commit(here)


def repository_state(folder: Path) -> str:
    """Why a folder has no commit to name: outside any repository, or in one with no commits yet."""
    from heisenbisect.git import open_repo, resolve

    try:
        repo = open_repo(folder, "target.cwd")
    except Exception:
        return NO_REPOSITORY
    with repo:
        try:
            resolve(repo, "HEAD", "target.cwd")
        except Exception:  # HEAD names a branch with no commit
            return NO_COMMITS
    return "a git repository"


def source_url() -> str | None:
    """Where the checkout this package runs from was cloned from (its ``origin``), without any
    user or password in the URL; None when installed or without a remote."""
    if "site-packages" in Path(__file__).resolve().parts:
        return None
    try:
        done = subprocess.run(
            ["git", "remote", "get-url", "origin"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    url = done.stdout.strip()
    return without_userinfo(url) if done.returncode == 0 and url else None


def without_userinfo(url: str) -> str:
    """``https://user:token@host/x.git`` as ``https://host/x.git``: a token is a secret."""
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@", r"\1", url)


def describe(target_folder: Path | None) -> dict:
    """The machine's record, keyed as `reports.environment` reads it (no runner, no sessions)."""
    driver, cuda = driver_and_cuda()
    folder = target_folder or Path.cwd()
    return {
        "heisenbisect": __version__,
        "heisenbisect_commit": source_commit(),
        "heisenbisect_source": source_url(),
        "python": platform.python_version(),
        "host": platform.node(),
        "platform": platform.platform(),
        "gpus": gpu_names(),
        "nvidia_driver": driver,
        "cuda": cuda,
        "torch": package_version("torch"),
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "target_commit": target_commit(folder),
        "target_repository": repository_state(folder),
        "load": load_average(),
    }
