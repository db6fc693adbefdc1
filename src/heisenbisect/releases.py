"""The one place for package indexes: which released versions of a package exist, and where.

`bisect versions` bisects what users can install. The versions come from a folder of wheels
and sdists (``--find-links``, read from the file names), a simple-API index (``--index-url``,
PEP 691 JSON or PEP 503 HTML, which also says which files are yanked), or, with neither,
``pip index versions`` against pip's own configured index. Ordering is PEP 440's
(`packaging.version`); `between` picks a bisection's candidates, oldest first.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from heisenbisect.errors import HeisenbisectError

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Release:
    """One version of a package as its source offers it: yanked when every file of it is."""

    version: Version
    yanked: bool = False


@dataclass(frozen=True)
class VersionRange:
    """A resolved range: ``candidates`` run oldest first and end with ``bad``."""

    package: str
    good: str
    bad: str
    candidates: tuple[str, ...]
    source: str  # where the versions were listed: a folder, an index URL, pip's index


def versions_in_folder(folder: Path, package: str) -> list[Release]:
    """The versions of ``package`` among the wheel and sdist file names in ``folder``."""
    if not folder.is_dir():
        raise HeisenbisectError(f"--find-links: {str(folder)!r} is not a folder")
    return _releases(((p.name, False) for p in folder.iterdir()), package)


def versions_from_index(index_url: str, package: str) -> list[Release]:
    """The versions of ``package`` a simple-API index lists (JSON when it offers it, else HTML)."""
    url = f"{index_url.rstrip('/')}/{canonicalize_name(package)}/"
    request = urllib.request.Request(url, headers={"Accept": f"{JSON_TYPE}, text/html;q=0.1"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            kind = response.headers.get_content_type()
            body = response.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise HeisenbisectError(f"--index-url: {url} has no package {package!r}") from None
        raise HeisenbisectError(f"--index-url: {url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise HeisenbisectError(f"--index-url: cannot read {url}: {reason}") from None
    files = _json_files(body) if kind == JSON_TYPE else _html_files(body)
    return _releases(files, package)


def versions_from_pip(package: str, pre: bool) -> list[Release]:
    """``pip index versions``: pip's configured index (it leaves yanked versions out)."""
    argv = [sys.executable, "-m", "pip", "index", "versions", package, *(["--pre"] if pre else [])]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    found = re.search(r"^Available versions:(.*)$", done.stdout, re.MULTILINE)
    if done.returncode != 0 or not found:
        said = (done.stderr.strip().splitlines() or ["no versions listed"])[-1]
        raise HeisenbisectError(
            f"versions: pip index versions {package} found nothing ({said}); "
            "name a wheel folder with --find-links DIR or an index with --index-url URL"
        )
    versions = {_version(w.strip()) for w in found[1].split(",")}
    return [Release(v) for v in sorted(v for v in versions if v is not None)]


def between(
    releases: Iterable[Release], good: Version, bad: Version, pre: bool, yanked: bool
) -> list[Version]:
    """The versions after ``good`` up to ``bad`` (included), oldest first.

    Pre-releases and yanked versions only when asked, except the ends, which the user named."""
    chosen = {
        r.version
        for r in releases
        if good < r.version <= bad
        and (
            r.version == bad or ((pre or not r.version.is_prerelease) and (yanked or not r.yanked))
        )
    }
    return sorted(chosen)


def parse_version(text: str, option: str) -> Version:
    """A version the user typed; not PEP 440: `HeisenbisectError` naming ``option``."""
    version = _version(text)
    if version is None:
        raise HeisenbisectError(f"{option}: {text!r} is not a version (PEP 440), e.g. 1.4.2")
    return version


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _releases(files: Iterable[tuple[str, bool]], package: str) -> list[Release]:
    """One `Release` per version among ``(file name, yanked)`` pairs of ``package``."""
    wanted = canonicalize_name(package)
    yanked_all: dict[Version, bool] = {}
    for name, yanked in files:
        parsed = _name_and_version(name)
        if parsed is None or parsed[0] != wanted:
            continue
        version = parsed[1]
        yanked_all[version] = yanked_all.get(version, True) and yanked
    return [Release(v, y) for v, y in sorted(yanked_all.items())]


def _name_and_version(filename: str) -> tuple[str, Version] | None:
    try:
        if filename.endswith(".whl"):
            name, version, _, _ = parse_wheel_filename(filename)
            return name, version
        if filename.endswith((".tar.gz", ".zip")):
            return parse_sdist_filename(filename)
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        pass
    return None


def _json_files(body: str) -> list[tuple[str, bool]]:
    try:
        files = json.loads(body).get("files", [])
        return [(f["filename"], bool(f.get("yanked", False))) for f in files]
    except (ValueError, AttributeError, KeyError, TypeError):
        raise HeisenbisectError(
            "--index-url: the index answered JSON that is not PEP 691"
        ) from None


class _Links(HTMLParser):
    """The anchors of a PEP 503 page: the file name (the link's last path part) and yanked."""

    def __init__(self) -> None:
        super().__init__()
        self.files: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "a":
            return
        found = dict(attrs)
        href = (found.get("href") or "").split("#", 1)[0]
        name = urllib.parse.unquote(href.rsplit("/", 1)[-1])
        if name:
            self.files.append((name, "data-yanked" in found))


def _html_files(body: str) -> list[tuple[str, bool]]:
    parser = _Links()
    parser.feed(body)
    return parser.files
