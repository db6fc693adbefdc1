"""A small pure-Python package released in 20 versions: a real git history with a tag per release
and a real wheel per tag, built from the tagged tree (zip files in the wheel format pip installs).

``flakypkg`` 1.0.0 .. 1.19.0: each release follows two work commits. ``flakypkg.check()`` returns
the exit status of one run: from the second work commit after 1.11.0 on (hence from release
1.12.0 on) it fails in 30% of runs (seeded by ``HEISENBISECT_SEED``). Release 1.5.0 was built
broken: importing it raises, and the next commit repairs it.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

NAME = "flakypkg"
VERSIONS = [f"1.{i}.0" for i in range(20)]
CULPRIT = "1.12.0"
BROKEN = "1.5.0"
RATE = 0.3
CHECK = ["python", "-c", "import flakypkg, sys; sys.exit(flakypkg.check())"]

SOURCE = '''"""flakypkg {label}"""
import os
import random

__version__ = "{label}"
FLAKY = {flaky}
{broken}

def check():
    seed = int(os.environ.get("HEISENBISECT_SEED", "0"))
    return 1 if FLAKY and random.Random(seed).random() < {rate} else 0
'''
BROKEN_LINE = 'raise RuntimeError("this release was built broken")'
ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00",
}


@dataclass(frozen=True)
class Releases:
    repo: Path
    wheels: Path
    culprit_commit: str  # the commit that brought the flaky failure


def freeze() -> str:
    """The running environment's packages: a bisection of versions must leave them as they were."""
    return subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--all"], capture_output=True, text=True, check=True
    ).stdout


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **ENV},
    )
    return done.stdout.strip()


def _commit(repo: Path, label: str, flaky: bool, broken: bool, message: str) -> str:
    path = repo / "src" / NAME / "__init__.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = SOURCE.format(label=label, flaky=flaky, broken=BROKEN_LINE if broken else "", rate=RATE)
    path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def make_releases(root: Path) -> Releases:
    """The repository with its tags, and a folder with one wheel per release."""
    repo, wheels = root / "flakypkg", root / "wheels"
    repo.mkdir(parents=True)
    wheels.mkdir()
    git(repo, "init", "-q", "-b", "main")
    flaky, culprit = False, ""
    for i, version in enumerate(VERSIONS):
        if i:
            _commit(repo, f"{version}.dev1", flaky, False, f"work towards {version}")
            if version == CULPRIT:
                flaky = True
            sha = _commit(repo, f"{version}.dev2", flaky, False, f"more work towards {version}")
            culprit = sha if version == CULPRIT else culprit
        _commit(repo, version, flaky, version == BROKEN, f"release {version}")
        git(repo, "tag", f"v{version}")
        source = (repo / "src" / NAME / "__init__.py").read_text()
        write_wheel(wheels, NAME, version, {f"{NAME}/__init__.py": source})
    return Releases(repo, wheels, culprit)


def write_wheel(folder: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """A pure-Python wheel (PEP 427) holding ``files``."""
    info = f"{name}-{version}.dist-info"
    contents = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
        f"{info}/top_level.txt": f"{name}\n",
    }
    record = []
    for path, text in contents.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in contents.items():
            archive.writestr(path, text)
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel


COLD = '''"""coldpkg {version}: from {first} on, the first {k} runs after an install fail (a cold cache)."""
import os
import sys

COLD = {cold}


def check():
    for i in range({k} if COLD else 0):  # one marker per failing run, made atomically
        try:
            os.close(os.open(os.path.join(sys.prefix, f"coldpkg-run-{{i}}"), os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            continue
        return 1
    return 0
'''


def write_cold_releases(folder: Path, versions: list[str], first: str, k: int) -> None:
    """``coldpkg`` in ``versions``: from ``first`` on, the first ``k`` runs in each environment
    fail and every later one passes, a failure that fresh runs do not reproduce."""
    cold = False
    for version in versions:
        cold = cold or version == first
        source = COLD.format(version=version, first=first, k=k, cold=cold)
        write_wheel(folder, "coldpkg", version, {"coldpkg/__init__.py": source})
