"""vLLM's boolean launch arguments read from its release, and `bisect suspects` specs that validate and
name only flags and variables the release's own registry has."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bisect_cli import bisect_here
from heisenbisect.commands.suspects import registry
from heisenbisect.hypotheses.loader import load_spec
from heisenbisect.stacks.registry import STACKS
from heisenbisect.stacks.sources import PackageFiles, default_cache_dir, find_archive
from heisenbisect.stacks.vllm_args import vllm_launch_flags

RELEASES = {"sglang": "0.5.23", "vllm": "0.33.0"}  # `pip download --no-deps PACKAGE==V` into ~/.cache/heisenbisect/


def wheel(package: str) -> Path:
    found = find_archive(package, RELEASES[package], default_cache_dir(package))
    if found is None:
        pytest.skip(f"the {package} {RELEASES[package]} wheel is not cached")
    return found


ARG_UTILS = '''
import argparse
from vllm.config import CacheConfig, ModelConfig

@dataclass
class EngineArgs:
    enforce_eager: bool = ModelConfig.enforce_eager
    enable_prefix_caching: bool | None = None
    max_num_seqs: int | None = None

    @staticmethod
    def add_cli_args(parser):
        model_kwargs = get_kwargs(ModelConfig)
        cache_kwargs = get_kwargs(CacheConfig)
        model_group.add_argument("--enforce-eager", **model_kwargs["enforce_eager"])
        model_group.add_argument("--max-num-seqs", **model_kwargs["max_num_seqs"])
        cache_group.add_argument("--enable-prefix-caching", **{**cache_kwargs["enable_prefix_caching"], "default": None})
        parser.add_argument("--disable-log-stats", action="store_true", help="Disable logging statistics.")
'''
MODEL = '''
class ModelConfig:
    enforce_eager: bool = False
    """Whether to always use eager-mode PyTorch."""
    max_num_seqs: int | None = None
'''
CACHE = '''
class CacheConfig:
    enable_prefix_caching: bool = True
'''
FRONTEND = '''
class BaseFrontendArgs:
    enable_auto_tool_choice: bool = False
    """Enable auto tool choice."""
    chat_template: str | None = None
'''


def test_vllm_launch_flags_from_kwargs_of_config_fields_explicit_actions_and_the_frontend(tmp_path):
    for path, text in {"engine/arg_utils.py": ARG_UTILS, "config/model.py": MODEL, "config/cache.py": CACHE,
                       "entrypoints/common/cli_args.py": FRONTEND, "envs.py": ""}.items():
        (tmp_path / "vllm" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "vllm" / path).write_text(text)
    flags = {f.option: f for f in vllm_launch_flags(PackageFiles.from_folder(tmp_path, "vllm/envs.py"))}
    assert list(flags) == ["--enforce-eager", "--enable-prefix-caching", "--disable-log-stats", "--enable-auto-tool-choice"]
    assert flags["--enforce-eager"].levels == [[], ["--enforce-eager"]]  # ModelConfig's default, False
    assert flags["--enforce-eager"].help == "Whether to always use eager-mode PyTorch."
    assert flags["--enable-prefix-caching"].levels == [[], ["--enable-prefix-caching"], ["--no-enable-prefix-caching"]]
    assert flags["--disable-log-stats"].style == "store_true"
    assert flags["--enable-auto-tool-choice"].where == "vllm/entrypoints/common/cli_args.py:3"


def test_factors_vllm_of_a_release_lists_its_launch_arguments(capsys):
    wheel("vllm")
    assert bisect_here(["factors", "vllm", "--version", RELEASES["vllm"], "--kind", "arg", "--format", "table"]) == 0
    rows = dict(line.split(None, 1) for line in capsys.readouterr().out.strip().splitlines())
    assert len(rows) == 92
    assert rows["--enforce-eager"] == "false" and rows["--async-scheduling"] == "unset"
    assert rows["--enable-prefix-caching"] == "unset" and rows["--enable-auto-tool-choice"] == "false"


@pytest.mark.parametrize("stack", sorted(RELEASES))
def test_suspects_of_a_release_validate_and_name_only_what_its_registry_has(stack, tmp_path, capsys):
    wheel(stack)
    path = tmp_path / f"{stack}.yaml"
    assert bisect_here(["suspects", stack, "--version", RELEASES[stack], "-o", str(path)]) == 0
    assert bisect_here(["validate", str(path)]) == 0
    assert "ok: study" in capsys.readouterr().out
    spec = load_spec(path)
    options, env_flags = registry(STACKS[stack], PackageFiles.from_archive(wheel(stack)))
    names = [f.name for f in spec.factors]
    assert names[:4] == ["cuda_graph", "attention_backend", "overlap_scheduling", "concurrency_cap"]
    assert "determinism_mode" in names and "prefix_cache" in names and len(names) == 10
    for factor in spec.factors:
        if factor.kind == "env":
            assert factor.env_var in env_flags, factor.name
        for level in factor.levels if factor.kind == "arg" else []:
            flags = [a for a in (level if isinstance(level, list) else level.split()) if a.startswith("--")]
            assert all(flag in options for flag in flags), (factor.name, flags)
    (knob,) = spec.amplify.knobs
    assert knob.flag in options and {1, 2, 3, 9, 17, 33} <= set(knob.choices)
    text = path.read_text()
    assert "mlc-ai/xgrammar#460" in text and "version" in text and "bisect commits" in text
    assert yaml.safe_load(text)["target"]["server"]["preset"] == stack
