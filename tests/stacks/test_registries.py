"""Flag registries parsed from source: vLLM's envs.py, SGLang's launch-argument definitions."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from bisect_cli import bisect, bisect_here
from heisenbisect.hypotheses.loader import parse_spec
from heisenbisect.stacks.python_flags import parse_launch_flags
from heisenbisect.stacks.sglang_args import SHORT_PREFIX
from heisenbisect.stacks.sources import (
    PackageFiles,
    SourceError,
    SourceFile,
    default_cache_dir,
    find_archive,
)
from heisenbisect.stacks.vllm_envs import parse_envs

EXCERPT = (Path(__file__).resolve().parents[1] / "fixtures") / "vllm_envs_excerpt.py"
VLLM_VERSION = "0.33.0"  # `pip download --no-deps vllm==0.33.0` (~340 MB) into ~/.cache/heisenbisect/vllm


@pytest.fixture
def vllm_checkout(tmp_path: Path) -> Path:
    (tmp_path / "vllm").mkdir()
    shutil.copy(EXCERPT, tmp_path / "vllm" / "envs.py")
    return tmp_path


def test_vllm_flags_from_a_real_excerpt_of_envs_py():
    flags = {f.name: f for f in parse_envs(SourceFile("vllm/envs.py", EXCERPT.read_text(), str(EXCERPT)))}
    assert list(flags) == ["VLLM_BATCH_INVARIANT", "VLLM_TRITON_USE_TD", "VLLM_USE_PRECOMPILED",
                           "VLLM_CONFIGURE_LOGGING", "VLLM_SKIP_P2P_CHECK", "VLLM_USE_V2_MODEL_RUNNER",
                           "VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_USE_FLASHINFER_SAMPLER", "VLLM_NO_USAGE_STATS"]
    assert flags["VLLM_BATCH_INVARIANT"].levels == [False, True]
    assert flags["VLLM_BATCH_INVARIANT"].comment.startswith("Enable batch-invariant mode")
    assert flags["VLLM_CONFIGURE_LOGGING"].levels == [True, False]
    assert flags["VLLM_TRITON_USE_TD"].levels == [None, True, False]  # bool | None = None: unset first
    # typed `bool = False`, but read as os.getenv(..., "1") == "1": the reading code wins, and says so
    assert flags["VLLM_SKIP_P2P_CHECK"].default is True
    assert "typed default False, but read as True when unset" in flags["VLLM_SKIP_P2P_CHECK"].comment


def test_factors_vllm_from_a_source_folder_pastes_under_factors(vllm_checkout, capsys):
    assert bisect_here(["factors", "vllm", "--source", str(vllm_checkout)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"# 9 boolean environment flags from {vllm_checkout / 'vllm' / 'envs.py'}")
    spec = parse_spec("study: paste\ntarget:\n  command: [python, t.py]\n" + text, "paste.yaml")
    by_var = {f.env_var: f for f in spec.factors}
    assert by_var["VLLM_NO_USAGE_STATS"].levels == [False, True] and len(by_var) == 9
    assert bisect_here(["factors", "vllm", "--source", str(vllm_checkout), "--match", "p2p", "--format", "table"]) == 0
    assert capsys.readouterr().out.split() == ["VLLM_SKIP_P2P_CHECK", "true"]


def test_factors_vllm_without_envs_py_is_a_user_error(tmp_path):
    with pytest.raises(SourceError, match=r"--source .*: no vllm/envs.py or python/vllm/envs.py under it"):
        bisect_here(["factors", "vllm", "--source", str(tmp_path)])


def test_a_source_without_the_launch_arguments_file_names_it(vllm_checkout, capsys):
    """envs.py alone: the env flags list with a note, and asking for launch arguments is refused."""
    assert bisect_here(["factors", "vllm", "--source", str(vllm_checkout), "--format", "table"]) == 0
    assert "no vllm/engine/arg_utils.py: launch arguments not listed" in capsys.readouterr().err
    with pytest.raises(SourceError, match=r": no vllm/engine/arg_utils.py$"):
        bisect_here(["factors", "vllm", "--source", str(vllm_checkout), "--kind", "arg"])


@pytest.mark.skipif(find_archive("vllm", VLLM_VERSION, default_cache_dir("vllm")) is None,
                    reason=f"the vllm {VLLM_VERSION} wheel is not cached (~340 MB)")
def test_factors_vllm_of_a_release(capsys):
    assert bisect_here(["factors", "vllm", "--version", VLLM_VERSION, "--kind", "env", "--format", "table"]) == 0
    rows = dict(line.split(None, 1) for line in capsys.readouterr().out.strip().splitlines())
    assert len(rows) == 150
    assert rows["VLLM_BATCH_INVARIANT"] == "false" and rows["VLLM_SKIP_P2P_CHECK"] == "true"


def test_launch_flag_shapes_old_and_new():
    source = '''
import argparse
from dataclasses import dataclass

@dataclass
class ServerArgs:
    enable_metrics: bool = False
    skip_warmup: bool = True

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--enable-metrics", action="store_true", default=ServerArgs.enable_metrics,
                            help="Enable log prometheus metrics.")
        parser.add_argument("--skip-warmup", action="store_true", default=ServerArgs.skip_warmup)
        parser.add_argument("--no-stream-output", dest="stream_output", action="store_false")
        parser.add_argument("--port", type=int, default=30000)
        parser.add_argument("--disable-cuda-graph", action=DeprecatedStoreTrueAction, help="Deprecated. Use x.")

class Features(msgspec.Struct):
    enable_fp32_lm_head: A[bool, "If set, the LM head outputs (logits) are in FP32."] = False
    enable_tf32_matmul: A[Optional[bool], Arg(help="TF32.", action=argparse.BooleanOptionalAction)] = None
    enable_overlap: A[bool | None, Arg(help="Overlap.", action=argparse.BooleanOptionalAction)] = True
    hidden: A[bool, Arg(no_cli=True)] = False
    lora_paths: A[Optional[list], Arg(action=LoRAPathAction)] = None
    renamed: A[bool, Arg(help="Renamed.", cli_name="--tp-renamed")] = False
    port: A[int, "The port."] = 30000
'''
    flags = {f.option: f for f in parse_launch_flags(SourceFile("sglang/srt/server_args.py", source, "x"), SHORT_PREFIX)}
    assert list(flags) == ["--enable-metrics", "--skip-warmup", "--no-stream-output", "--disable-cuda-graph",
                           "--enable-fp32-lm-head", "--enable-tf32-matmul", "--enable-overlap", "--tp-renamed"]
    assert flags["--enable-metrics"].help == "Enable log prometheus metrics."
    assert flags["--skip-warmup"].default is True  # ServerArgs.skip_warmup, resolved from the class
    assert flags["--no-stream-output"].style == "store_false" and flags["--no-stream-output"].default is True
    assert flags["--disable-cuda-graph"].deprecated and flags["--disable-cuda-graph"].where == "server_args.py:17"
    assert flags["--enable-tf32-matmul"].levels == [[], ["--enable-tf32-matmul"], ["--no-enable-tf32-matmul"]]
    assert flags["--enable-overlap"].levels == [[], ["--no-enable-overlap"]]
    assert flags["--tp-renamed"].name == "tp_renamed"
    stanza = yaml.safe_load("levels: " + str(flags["--enable-fp32-lm-head"].levels).replace("'", ""))
    assert stanza["levels"] == [[], ["--enable-fp32-lm-head"]]


def test_an_sdist_and_a_folder_read_alike(tmp_path):
    import tarfile

    tree = tmp_path / "sglang-9.9" / "python" / "sglang" / "srt"
    tree.mkdir(parents=True)
    (tree / "environ.py").write_text("class Envs:\n    A = EnvBool(True)\n")
    archive = tmp_path / "sglang-9.9.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(tmp_path / "sglang-9.9", arcname="sglang-9.9")
    packed = PackageFiles.from_archive(archive).get("sglang/srt/environ.py")
    folder = PackageFiles.from_folder(tmp_path / "sglang-9.9", "sglang/srt/environ.py").get("sglang/srt/environ.py")
    assert packed.text == folder.text and packed.where.endswith("!sglang-9.9/python/sglang/srt/environ.py")


def cached_vllm_wheel(cache: Path, version: str, envs: str) -> None:
    """A wheel-shaped zip of vLLM ``version`` holding ``envs`` as vllm/envs.py."""
    cache.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(cache / f"vllm-{version}-cp38-abi3-manylinux1_x86_64.whl", "w") as wheel:
        wheel.writestr("vllm/envs.py", envs)


def test_factors_vllm_without_vllm_reads_the_newest_cached_release(tmp_path):
    """Issue 37: the README's `bisect factors vllm | head` failed where vLLM is not installed."""
    cache = tmp_path / "cache"
    excerpt = EXCERPT.read_text()
    cached_vllm_wheel(cache, "0.9.0", excerpt.replace("VLLM_NO_USAGE_STATS", "VLLM_OLD_FLAG"))
    cached_vllm_wheel(cache, "0.10.0", excerpt)  # newer than 0.9.0 by PEP 440, older by name
    piped = subprocess.run(
        ["bash", "-o", "pipefail", "-c",
         f"{shlex.quote(sys.executable)} -m heisenbisect factors vllm --cache-dir {cache} | head -3"],
        capture_output=True, text=True, timeout=120)
    assert piped.returncode in (0, 141) and "Traceback" not in piped.stderr, piped.stderr
    assert piped.stdout.startswith("# 9 boolean environment flags from ") and "vllm-0.10.0-" in piped.stdout
    assert "note: vllm is not installed here: reading the newest cached release, vllm-0.10.0-" in piped.stderr
    table = bisect("factors", "vllm", "--cache-dir", str(cache), "--format", "table", "--kind", "env")
    assert table.returncode == 0 and "VLLM_NO_USAGE_STATS" in table.stdout, table.stderr


def test_factors_vllm_without_vllm_or_a_cached_release_is_one_line(tmp_path):
    done = bisect("factors", "vllm", "--cache-dir", str(tmp_path / "empty"))
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.strip().splitlines() == [
        f"error: vllm is not installed here and no release of it is cached in {tmp_path / 'empty'}: "
        "give --version V (fetched once) or --source DIR"]
