"""Where a package's source files come from: a released wheel (fetched once with pip), a folder,
or the package installed here.

``bisect factors`` reads a few files of a serving stack as they are in the version asked for;
``pip download --no-deps`` fetches only the package's own wheel (vLLM's is ~340 MB, once).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from heisenbisect.errors import HeisenbisectError


class SourceError(HeisenbisectError):
    """A package's files could not be found or read: a wrong --source folder, a version that
    lacks the file, no network to PyPI for ``--version``."""


def default_cache_dir(package: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "heisenbisect" / package


def find_archive(package: str, version: str, cache_dir: Path) -> Path | None:
    pattern = re.compile(rf"^{re.escape(package)}-{re.escape(version)}(-.+\.whl|\.tar\.gz)$")
    matches = (
        sorted(p for p in cache_dir.glob(f"{package}-*") if pattern.match(p.name))
        if cache_dir.is_dir()
        else []
    )
    return matches[0] if matches else None


def latest_cached_archive(package: str, cache_dir: Path) -> Path | None:
    """The newest release (PEP 440 order) of ``package`` in ``cache_dir``, if one was fetched."""
    pattern = re.compile(rf"^{re.escape(package)}-([^-]+)(-.+\.whl|\.tar\.gz)$")
    found: list[tuple[Version, Path]] = []
    for path in cache_dir.glob(f"{package}-*") if cache_dir.is_dir() else ():
        if match := pattern.match(path.name):
            try:
                found.append((Version(match.group(1)), path))
            except InvalidVersion:
                continue
    return max(found)[1] if found else None


def fetch_archive(package: str, version: str, cache_dir: Path) -> Path:
    """The package==version wheel (or sdist) in ``cache_dir``, downloaded with pip when missing."""
    found = find_archive(package, version, cache_dir)
    if found:
        return found
    cache_dir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--disable-pip-version-check",
            f"{package}=={version}",
            "-d",
            str(cache_dir),
        ],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    found = find_archive(package, version, cache_dir)
    if done.returncode != 0 or not found:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SourceError(f"cannot download {package}=={version} with pip: {last}")
    return found


@dataclass(frozen=True)
class SourceFile:
    path: str  # inside the package, e.g. sglang/srt/server_args.py
    text: str
    where: str  # for messages and comments: archive!member or a file path


class PackageFiles:
    """Read-only view of a package's ``.py`` files, by path inside the package; read on demand."""

    def __init__(self, files: dict[str, str], read: Callable[[str], str], origin: str):
        self._files = files  # package path -> where (archive!member, or a file path)
        self._read = read  # where -> text
        self._texts: dict[str, str] = {}  # read once: several registries parse the same files
        self.origin = origin

    @classmethod
    def from_archive(cls, archive: Path) -> PackageFiles:
        """A wheel, or an sdist (whose files sit under ``name-version/`` and maybe ``python/``)."""
        files: dict[str, str] = {}
        if archive.suffix == ".whl":
            zf = zipfile.ZipFile(
                archive
            )  # kept open: vLLM's wheel has thousands of members to index
            files = {n: n for n in zf.namelist() if n.endswith(".py")}

            def read(member: str) -> str:
                return zf.read(member).decode("utf-8", errors="replace")
        else:
            with tarfile.open(archive) as tf:
                for member in tf.getnames():
                    if member.endswith(".py") and "/" in member:
                        inner = member.split("/", 1)[1]
                        files[inner[len("python/") :] if inner.startswith("python/") else inner] = (
                            member
                        )

            def read(member: str) -> str:
                with tarfile.open(archive) as tf:
                    extracted = tf.extractfile(member)
                    if extracted is None:  # a folder or a link, not a file
                        raise KeyError(member)
                    return extracted.read().decode("utf-8", errors="replace")

        return cls(files, read, str(archive))

    @classmethod
    def from_folder(cls, folder: Path, needed: str) -> PackageFiles:
        """A checkout (``python/<package>/`` or ``<package>/``) or the package folder itself,
        whichever holds ``needed`` (a package path such as ``sglang/srt/environ.py``)."""
        package = needed.split("/", 1)[0]
        for root in (folder / "python", folder, folder.parent if folder.name == package else None):
            if root is not None and (root / needed).is_file():
                files = {
                    p.relative_to(root).as_posix(): str(p) for p in (root / package).rglob("*.py")
                }
                return cls(
                    files, lambda where: Path(where).read_text(encoding="utf-8"), str(folder)
                )
        raise SourceError(f"--source {folder}: no {needed} or python/{needed} under it")

    @property
    def is_archive(self) -> bool:
        return self.origin.endswith((".whl", ".tar.gz"))

    def get(self, path: str) -> SourceFile | None:
        member = self._files.get(path)
        if member is None:
            return None
        where = (
            member if not self.origin.endswith((".whl", ".tar.gz")) else f"{self.origin}!{member}"
        )
        if member not in self._texts:
            self._texts[member] = self._read(member)
        return SourceFile(path, self._texts[member], where)

    def require(self, path: str) -> SourceFile:
        """The file at ``path``; `SourceError` naming the package when it lacks it."""
        found = self.get(path)
        if found is None:
            raise SourceError(f"{self.origin}: no {path}")
        return found

    def under(self, folder: str) -> list[SourceFile]:
        """Every .py file directly in ``folder`` (a package path ending in /), sorted by name."""
        names = sorted(
            p for p in self._files if p.startswith(folder) and "/" not in p[len(folder) :]
        )
        return [f for f in (self.get(n) for n in names) if f is not None]


def package_files(
    package: str, needed: str, version: str | None, source: Path | None, cache_dir: Path | None
) -> PackageFiles:
    """The package's files: a source folder, a released wheel (fetched once), the package
    installed here, or else the newest release already in the cache (``bisect factors vllm``
    works where vLLM is not installed); ``needed`` is a file a folder must have
    (``vllm/envs.py``)."""
    if source is not None:
        return PackageFiles.from_folder(source, needed)
    if version:
        cache = cache_dir or default_cache_dir(package)
        return PackageFiles.from_archive(fetch_archive(package, version, cache))
    spec = importlib.util.find_spec(package)  # locates the package without importing it
    if spec is not None and spec.submodule_search_locations:
        return PackageFiles.from_folder(Path(list(spec.submodule_search_locations)[0]), needed)
    cache = cache_dir or default_cache_dir(package)
    if cached := latest_cached_archive(package, cache):
        return PackageFiles.from_archive(cached)
    raise SourceError(
        f"{package} is not installed here and no release of it is cached in {cache}: "
        "give --version V (fetched once) or --source DIR"
    )
