"""What `bisect factors` and `bisect suspects` share: the arguments that say where a serving
stack's own flag definitions are read from, those files, the stack's boolean environment flags,
and how a flag's value is spelled in the spec they print."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from heisenbisect.registries.flags import EnvFlag
from heisenbisect.registries.sglang_environ import ENVIRON_SUFFIX, parse_environ
from heisenbisect.registries.sources import PackageFiles, SourceError, default_cache_dir, fetch_archive
from heisenbisect.registries.vllm_envs import ENVS as VLLM_ENVS
from heisenbisect.registries.vllm_envs import vllm_env_flags

NEEDED = {"sglang": ENVIRON_SUFFIX, "vllm": VLLM_ENVS}  # the file a source must have


def add_source_arguments(parser: argparse.ArgumentParser, version_help: str) -> None:
    """``--version V`` or ``--source DIR``: which release's files to read (neither: the installed one)."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--version", dest="package_version", metavar="V", help=version_help)
    source.add_argument("--source", type=Path, metavar="DIR", help="a checkout or package folder")


def add_cache_dir_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cache-dir", type=Path, metavar="DIR",
                        help="where downloaded wheels are kept (default: ~/.cache/heisenbisect/TARGET)")


def package_files(package: str, version: str | None, source: Path | None, cache_dir: Path | None) -> PackageFiles:
    """The stack's files: a source folder, a released wheel (fetched once), or the package installed here."""
    if source is not None:
        return PackageFiles.from_folder(source, NEEDED[package])
    if version:
        cache = cache_dir or default_cache_dir(package)
        return PackageFiles.from_archive(fetch_archive(package, version, cache))
    spec = importlib.util.find_spec(package)  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise SourceError(f"{package} is not installed here: give --version V or --source DIR")
    return PackageFiles.from_folder(Path(list(spec.submodule_search_locations)[0]), NEEDED[package])


def env_flags(target: str, files: PackageFiles) -> tuple[list[EnvFlag], str]:
    """The stack's boolean environment flags and the file they were read from."""
    if target == "vllm":
        return vllm_env_flags(files)
    environ = files.get(ENVIRON_SUFFIX)
    if environ is None:
        raise SourceError(f"{files.origin} has no {ENVIRON_SUFFIX} (SGLang versions before 0.5 lack it)")
    return parse_environ(environ.text, environ.where), environ.where


def yaml_bool(value: bool | None) -> str:
    return "null" if value is None else ("true" if value else "false")
