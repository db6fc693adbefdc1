"""A server target's trial by hand: the launch command, then the stress command against it.

A server trial is two processes, so one `env ... ARGS` line (all a command target needs) runs
nothing: the report gives the server's launch, filled in as the target fills it (its launcher,
its template, ``server_args`` and the config's arguments, the config's environment), and the
`bisect stress` line that sends the trial's sessions, with its seed. An API key is never
written: a key the server demands is passed as ``$API_KEY``.
"""

from __future__ import annotations

import shlex

from heisenbisect.hypotheses.model import Spec
from heisenbisect.records import Config, trial_seed

HOST, PORT, NCCL_PORT = "127.0.0.1", "30000", "30001"  # any free ports do


def server_trial_lines(spec: Spec, config: Config, index: int = 0) -> list[str]:
    """The launch and stress commands of trial ``index`` of ``config``."""
    # loaded here: every report imports this module, and the server target brings httpx along
    from heisenbisect.targets.server.spec import make_server_target
    from heisenbisect.targets.server.target import api_key_of

    target = make_server_target(spec)
    args = [*target.server_args, *spec.arguments(config)]
    fields = {"model": target.model, "host": HOST, "port": PORT, "nccl_port": NCCL_PORT}
    launch = target.stack.argv(target.launcher, fields, _masked(args))
    env = {**target.env, **spec.environment(config)}
    words = ["env"]
    words += [arg for k, v in env.items() if v is None for arg in ("-u", k)]
    words += [f"{k}={v}" for k, v in env.items() if v is not None]
    work = target.workload
    stress = ["bisect", "stress", "--url", f"http://{HOST}:{PORT}"]
    model = target.model if target.stack.names_model and target.model else work.model
    stress += ["--model", model] if model else []
    stress += ["--sessions", str(work.sessions), "--rounds", str(work.rounds)]
    stress += ["--concurrency", str(work.concurrency)] if work.concurrency else []
    stress += ["--max-tokens", str(work.max_tokens), "--temperature", f"{work.temperature:g}"]
    stress += ["--stream", work.stream] if work.stream != "false" else []
    stress += ["--seed", str(trial_seed(spec.study, config.key, index))]
    key = ' --api-key "$API_KEY"' if api_key_of(args) or work.api_key else ""
    return [
        _unquoted_key(shlex.join(words + launch)) + " &   # the server; wait until it is ready",
        shlex.join(stress) + key + "   # the trial's stress sessions",
    ]


def _unquoted_key(line: str) -> str:
    """Let the shell expand ``$API_KEY``, which `shlex.join` quoted as a literal."""
    return line.replace("'$API_KEY'", '"$API_KEY"').replace(
        "'--api-key=$API_KEY'", '--api-key="$API_KEY"'
    )


def _masked(args: list[str]) -> list[str]:
    """``args`` with the value of ``--api-key`` replaced by ``$API_KEY`` (left for the shell)."""
    masked = list(args)
    for i, arg in enumerate(masked):
        if arg == "--api-key" and i + 1 < len(masked):
            masked[i + 1] = "$API_KEY"
        elif arg.startswith("--api-key="):
            masked[i] = "--api-key=$API_KEY"
    return masked
