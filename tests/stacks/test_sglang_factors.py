"""`bisect factors sglang`: SGLang's boolean env flags, parsed from its real environ.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bisect_cli import bisect_here
from heisenbisect.errors import HeisenbisectError
from heisenbisect.hypotheses.loader import load_spec, parse_spec
from heisenbisect.hypotheses.model import Factor
from heisenbisect.stacks import sources
from heisenbisect.stacks.sglang_environ import ENVIRON_SUFFIX, parse_environ
from heisenbisect.stacks.sources import PackageFiles, SourceError

VERSION = "0.5.23"
ROOT = Path(__file__).resolve().parents[2]
PREFETCHED = Path("/tmp/sglang_wheel")  # `pip download --no-deps sglang==0.5.23 -d /tmp/sglang_wheel`


@pytest.fixture(scope="module")
def wheel_dir() -> Path:
    """A folder holding the real sglang 0.5.23 wheel: prefetched, cached, or downloaded now."""
    for folder in (PREFETCHED, default_cache_dir()):
        if sources.find_archive("sglang", VERSION, folder):
            return folder
    try:
        sources.fetch_archive("sglang", VERSION, default_cache_dir())
    except SourceError as exc:
        pytest.skip(f"no sglang {VERSION} wheel and no PyPI: {exc}")
    return default_cache_dir()


def default_cache_dir() -> Path:
    return sources.default_cache_dir("sglang")


def environ_text(wheel_dir: Path) -> str:
    """environ.py as the cached wheel holds it."""
    return PackageFiles.from_archive(sources.find_archive("sglang", VERSION, wheel_dir)).require(ENVIRON_SUFFIX).text


def test_version_lists_over_400_flags_with_their_defaults(wheel_dir, capsys):
    assert bisect_here(["factors", "sglang", "--version", VERSION, "--cache-dir", str(wheel_dir), "--format", "table"]) == 0
    rows = dict(line.split(None, 1) for line in capsys.readouterr().out.strip().splitlines())
    assert len(rows) > 400
    assert rows["SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION"] == "true"
    assert rows["SGLANG_OPT_USE_MULTI_STREAM_OVERLAP"] == "true"
    assert rows["SGLANG_DEBUG_MEMORY_POOL"] == "false"
    assert rows["SGLANG_FORCE_CONFIDENTIAL_COMPUTE"] == "unset"
    assert rows["SGLANG_DP_USE_REDUCE_SCATTER"] == "_default_hip() at run time"
    assert "SGLANG_TCP_STORE_PORT" not in rows and "SGLANG_PORT" not in rows  # integers, not flags


def test_stanzas_are_valid_factors_with_the_default_first(wheel_dir, capsys):
    assert bisect_here(["factors", "sglang", "--version", VERSION, "--cache-dir", str(wheel_dir)]) == 0
    document = yaml.safe_load(capsys.readouterr().out)
    stanzas = {f["var"]: Factor.model_validate(f) for f in document["factors"] if f["kind"] == "env"}
    assert len(stanzas) > 400
    assert stanzas["SGLANG_OPT_USE_MULTI_STREAM_OVERLAP"].levels == [True, False]
    assert stanzas["SGLANG_OPT_RELEASE_PREFILL_SWA"].levels == [False, True]  # an EnvBoolWithAlias
    assert stanzas["SGLANG_FORCE_CONFIDENTIAL_COMPUTE"].levels == [None, True, False]
    assert "autodetect" in stanzas["SGLANG_FORCE_CONFIDENTIAL_COMPUTE"].description


def test_launch_arguments_of_the_version_are_arg_factors(wheel_dir, capsys):
    assert bisect_here(["factors", "sglang", "--version", VERSION, "--cache-dir", str(wheel_dir), "--kind", "arg"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"# 173 boolean launch arguments from {wheel_dir}")
    args = {f["name"]: Factor.model_validate(f) for f in yaml.safe_load(out)["factors"]}
    assert len(args) == 173 and {f.kind for f in args.values()} == {"arg"}
    assert args["disable_radix_cache"].levels == [[], ["--disable-radix-cache"]]
    assert args["enable_deterministic_inference"].levels == [[], ["--enable-deterministic-inference"]]
    assert args["enable_tf32_matmul"].levels == [[], ["--enable-tf32-matmul"], ["--no-enable-tf32-matmul"]]
    assert args["disable_cuda_graph"].description.startswith("Deprecated. Use --cuda-graph-backend")
    assert "watermark_enforce_all" not in args  # an Arg(no_cli=True) field has no flag


def test_the_whole_output_pastes_under_factors_as_it_is(wheel_dir, capsys, tmp_path):
    assert bisect_here(["factors", "sglang", "--version", VERSION, "--cache-dir", str(wheel_dir)]) == 0
    text = capsys.readouterr().out
    spec = parse_spec("study: paste\ntarget:\n  command: [python, t.py]\n" + text, "paste.yaml")
    kinds = [f.kind for f in spec.factors]
    assert kinds.count("env") > 400 and kinds.count("arg") == 173


def test_source_checkout_and_match(wheel_dir, tmp_path, capsys):
    text = environ_text(wheel_dir)
    target = tmp_path / "sglang-checkout" / "python" / "sglang" / "srt"
    target.mkdir(parents=True)
    (target / "environ.py").write_text(text)
    assert bisect_here(["factors", "sglang", "--source", str(tmp_path / "sglang-checkout"),
                   "--match", "^sglang_opt_use_multi_stream_overlap$", "--format", "table"]) == 0
    assert capsys.readouterr().out.split() == ["SGLANG_OPT_USE_MULTI_STREAM_OVERLAP", "true"]


def test_the_example_spec_validates_and_names_real_flags(wheel_dir):
    spec = load_spec(ROOT / "examples" / "sglang" / "hypotheses.yaml")
    text = environ_text(wheel_dir)
    flags = {f.name: f for f in parse_environ(text)}
    env_factors = [f for f in spec.factors if f.kind == "env"]
    assert {f.env_var for f in env_factors} >= {"SGLANG_OPT_USE_MULTI_STREAM_OVERLAP", "SGLANG_OPT_USE_TOPK_V2"}
    for factor in env_factors:
        assert factor.env_var in flags, f"{factor.env_var} is not an SGLang {VERSION} flag"
        assert factor.levels[0] == flags[factor.env_var].default, f"{factor.name}: baseline is not SGLang's default"
    args = {tuple(level) if isinstance(level, list) else level for f in spec.factors if f.kind == "arg" for level in f.levels}
    assert ("--disable-cuda-graph",) in args and "--kv-cache-dtype fp8_e4m3" in args


def test_parser_on_the_shapes_environ_uses():
    source = '''
class EnvField: ...
class EnvBool(EnvField): ...
class EnvInt(EnvField): ...
class _Alias: ...
class EnvBoolWithAlias(_Alias, EnvBool): ...
class EnvBoolDeeper(EnvBoolWithAlias): ...

def _default_hip(): return False

class Envs:
    # ===================================================================
    # Section
    # ===================================================================
    FIRST = EnvBool(True)
    # Why this one exists,
    # over two lines.
    SECOND = EnvBool(default=False)
    NUMBER = EnvInt(3)
    ALIASED = EnvBoolWithAlias(True, deprecated_name="OLD")
    DEEPER = EnvBoolDeeper(False, deprecated_name="OLDER")
    PLATFORM = EnvBool(_default_hip)
    TEXTUAL = EnvBool("true")
    UNSET = EnvBool(None)
'''
    flags = {f.name: f for f in parse_environ(source)}
    assert list(flags) == ["FIRST", "SECOND", "ALIASED", "DEEPER", "PLATFORM", "TEXTUAL", "UNSET"]
    assert flags["FIRST"].comment == "" and flags["SECOND"].comment == "Why this one exists, over two lines."
    assert flags["SECOND"].default is False and flags["TEXTUAL"].default is True
    assert flags["PLATFORM"].default is None and flags["PLATFORM"].default_text == "_default_hip() at run time"
    assert flags["UNSET"].default_text == "unset"


def test_bad_sources_are_user_errors(tmp_path, monkeypatch):
    with pytest.raises(HeisenbisectError, match="no sglang/srt/environ.py"):
        bisect_here(["factors", "sglang", "--source", str(tmp_path)])
    with pytest.raises(HeisenbisectError, match="--match: not a regular expression"):
        (tmp_path / "sglang" / "srt").mkdir(parents=True)
        (tmp_path / "sglang" / "srt" / "environ.py").write_text("class Envs:\n    A = EnvBool(True)\n")
        bisect_here(["factors", "sglang", "--source", str(tmp_path), "--match", "("])
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip fails at once, network or not
    with pytest.raises(SourceError, match="cannot download sglang==0.0.0.0 with pip: .*sglang==0.0.0.0"):
        sources.fetch_archive("sglang", "0.0.0.0", tmp_path / "cache")
