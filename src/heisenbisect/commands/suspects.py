"""`bisect suspects STACK`: a starting spec of the factors real corruption bugs most often turned on.

A new user does not know which of SGLang's hundreds of flags to start from. This writes the usual
suspects (`stacks.suspects`), in the order real threads found them, spelled as the asked-for
release spells them: every flag and variable is looked up in that release's own definitions (as
`bisect factors` reads them) and a suspect the release cannot express is left as a comment.
`bisect factors` still lists everything.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from heisenbisect.commands.stack_flags import (
    add_cache_dir_argument,
    add_source_arguments,
    add_stack_argument,
    stack_files,
    yaml_bool,
)
from heisenbisect.errors import HeisenbisectError
from heisenbisect.stacks.base import Arm, Stack
from heisenbisect.stacks.flags import EnvFlag
from heisenbisect.stacks.sources import PackageFiles, SourceError
from heisenbisect.stacks.suspects import CONCURRENCY_CHOICES, SUSPECTS, Suspect


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "suspects",
        help="write a starting spec: the factors real corruption bugs most often turned on, for a stack's release",
        description="Write a spec whose factors are the usual suspects of serving-stack corruption (CUDA graph, "
        "attention backend, overlap/async scheduling, a concurrency cap, the all-reduce path, the grammar "
        "backend, the prefix cache, chunked prefill, the sampler, the determinism mode), each spelled as the "
        "given release spells it and checked against its own flag definitions, with a concurrency knob for "
        "`bisect amplify`. Edit the model and server_args, then `bisect validate` and `bisect run` it.",
    )
    add_stack_argument(parser, "the serving stack")
    add_source_arguments(
        parser, "a released version: its wheel is fetched once with `pip download --no-deps`"
    )
    parser.add_argument(
        "--model", default="MODEL", help="the model the server loads (edit it later otherwise)"
    )
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="write the spec here (default: stdout)"
    )
    add_cache_dir_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    stack, files = stack_files(args)
    options, env_flags = registry(stack, files)
    text = suspects_spec(
        stack, args.package_version or "installed", files.origin, options, env_flags, args.model
    )
    if args.output is None:
        print(text, end="")
    else:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise HeisenbisectError(
                f"--output {args.output}: cannot write: {exc.strerror}"
            ) from None
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def registry(stack: Stack, files: PackageFiles) -> tuple[frozenset[str], dict[str, EnvFlag]]:
    """The release's launch options and boolean environment flags, by name."""
    flags, _ = stack.flag_readers.env_flags(files)
    return stack.flag_readers.launch_options(files), {f.name: f for f in flags}


def pick(
    suspect: Suspect, stack: Stack, options: frozenset[str], env_flags: dict[str, EnvFlag]
) -> Arm | None:
    """The first spelling of ``suspect`` the release has, or None."""
    for arm in stack.suspect_spellings.arms.get(suspect.name, ()):
        if arm.var is not None and arm.var in env_flags:
            return arm
        if arm.var is None and all(flag in options for flag in arm.flags):
            return arm
    return None


def suspects_spec(
    stack: Stack,
    version: str,
    origin: str,
    options: frozenset[str],
    env_flags: dict[str, EnvFlag],
    model: str,
) -> str:
    """The spec's text: header, target, one factor per suspect the release can express, the knob."""
    target = stack.name
    lines = [
        f"# bisect suspects {target} --version {version}: what real corruption bugs most often turned on",
        f"# (issue 26's survey of 40 threads, most frequent first), spelled as {target} {version} spells it;",
        f"# every flag and variable below is checked against {origin}.",
        "# Edit model and server_args (what you run today), then `bisect validate` and `bisect run`.",
        f"study: {target}-suspects",
        "target:",
        "  timeout: 900",
        "  server:",
        f"    preset: {target}",
        f"    model: {json.dumps(model)}",
        "    server_args: []",
        "    trials_per_launch: 1  # one launch per trial: a race decided per launch stays independent",
        "    workload: {sessions: 60, rounds: 4}",
        "    signals:  # side signals that precede corruption, each a failure of its own class",
        "      logprobs: true",
        "      log:",
        *(f"        - {json.dumps(s)}" for s in stack.suspect_spellings.log_signals),
        "factors:",
    ]
    for suspect in SUSPECTS:
        lines.append(f"  # {suspect.name} ({suspect.source})")
        arm = pick(suspect, stack, options, env_flags)
        if suspect.manual or arm is None:
            lines.append(
                f"  #   {suspect.why}: {suspect.manual or f'not expressible in {target} {version}, left out'}"
            )
            continue
        description = json.dumps(f"{suspect.why}. Source: {suspect.source}", ensure_ascii=False)
        if arm.var is not None:
            default = env_flags[arm.var].default
            levels = ", ".join(yaml_bool(v) for v in (default, arm.value))
            lines += [
                f"  - name: {suspect.name}",
                "    kind: env",
                f"    var: {arm.var}",
                f"    levels: [{levels}]",
                f"    description: {description}",
            ]
        else:
            level = ", ".join(json.dumps(a) if not a.startswith("--") else a for a in arm.args)
            lines += [
                f"  - name: {suspect.name}",
                "    kind: arg",
                f"    levels: [[], [{level}]]",
                f"    description: {description}",
            ]
    flag = stack.suspect_spellings.concurrency_flag
    lines += [
        "amplify:  # `bisect amplify`: the batch sizes where the failure shows most per second",
        "  knobs:",
        "    - name: concurrency",
        "      type: choice",
        "      kind: arg",
        f"      flag: {flag}",
        f"      choices: [{', '.join(str(c) for c in CONCURRENCY_CHOICES)}]",
        f"      description: \"the server's batch cap ({flag}) with the sessions keeping it full: 1, 2, 3, "
        'and sizes either side of the CUDA-graph capture sizes, where batches are padded"',
    ]
    if flag not in options:
        raise SourceError(f"{origin}: no {flag}: cannot write the concurrency knob")
    return "\n".join(lines) + "\n"
