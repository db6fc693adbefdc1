"""Conformance kit for a `Strategy`: drive it as the engine does and check the contract.

    from heisenbisect.testing.strategy_kit import check_strategy

    check_strategy(lambda: MyStrategy(...), target, decision=lambda s: s.result())

``target(config, index, rng)`` gives the outcome of a config's index-th trial (a simulated one:
`flag_simulation.FlagTruth.outcome` is such a function). The kit drives a fresh strategy as
`engine.Engine` does: ``capacity`` trials in flight, landing a few at a time in an order fixed by
``seed``, the obsolete ones cancelled, until the strategy finishes, stalls (nothing running,
nothing proposed) or ``max_trials`` outcomes are in; trials still in flight at the finish land
too, as the engine lands them. It checks:

- **proposals within the free slots**: never more configs than free slots, none for 0 slots;
- **finished means nothing proposed**;
- **trial ids unique**: each proposal becomes a trial with the engine's id (config key and
  index), and no id comes twice (two unequal configs with one key would share the store's rows);
- **replay determinism**: a fresh strategy given the same calls in the same order gives the
  same answers; and one given only the outcomes so far, as `engine.replay` rebuilds a strategy
  from the store, then finishes, proposes, cancels and decides exactly as the live one did.

A broken rule raises `StrategyContractError`, naming the rule and the call. Within one process
only: a strategy that iterates over a set of strings may still replay differently in another
(string hashes change with ``PYTHONHASHSEED``).

`drive_in_order` is the plain drive that tests and benchmarks of a strategy's decisions share:
no trials in flight, each proposal observed in the order proposed, no contract checked.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from heisenbisect.decide.strategy import Strategy
from heisenbisect.records import Config, Outcome, trial_id

S = TypeVar("S", bound=Strategy)
Target = Callable[
    [Config, int, random.Random], Outcome
]  # (config, index, rng) -> the trial's outcome
Decision = Callable[[Any], object]  # the strategy -> what it decided (its result)
Nth = Callable[[Config, int], Outcome]  # (config, n) -> the study's n-th outcome, n from 0
QUERIES = (
    "finished()",
    "propose(in_flight, free)",
    "propose(in_flight, 0)",
    "obsolete(in_flight)",
    "decision",
)


class StrategyContractError(AssertionError):
    """A strategy broke a rule of the `Strategy` contract."""


@dataclass(frozen=True)
class KitRun:
    """What the drive saw: the outcomes in arrival order, and how it ended."""

    outcomes: tuple[tuple[Config, Outcome], ...]
    proposed: int  # configs proposed
    cancelled: int  # trials cancelled as obsolete
    finished: bool


@dataclass(frozen=True)
class _Snapshot:
    """The live strategy's answers right after its ``observed``-th outcome."""

    observed: int
    in_flight: Counter[Config]
    free: int
    answers: tuple[object, ...]


def check_strategy(
    make: Callable[[], S],
    target: Target,
    *,
    decision: Callable[[S], object] | None = None,
    capacity: int = 3,
    max_trials: int = 5000,
    seed: int = 0,
) -> KitRun:
    """Drive ``make()`` against ``target`` and check the contract (module docstring); ``decision``
    reads what the strategy decided (its result), compared by ``repr`` on every replay."""
    if capacity < 1:
        raise ValueError(f"capacity is the trials in flight at once, at least 1, got {capacity}")
    live = _Recorder(make(), decision)
    run = _drive(live, target, capacity, max_trials, seed)
    _replay_calls(make(), decision, live.calls)
    for snapshot in live.snapshots:
        _replay_outcomes(make(), decision, run.outcomes[: snapshot.observed], snapshot)
    return run


def drive_in_order(
    strategy: Strategy, outcome: Nth, *, slots: int = 1, stop_after: int | None = None
) -> list[tuple[Config, Outcome]]:
    """Drive ``strategy`` with nothing ever in flight: ask for up to ``slots`` configs, observe
    ``outcome(config, n)`` for each in the order proposed (n counts the study's outcomes from 0),
    ask again. Ends when the strategy finishes, proposes nothing or ``stop_after`` outcomes are
    in; returns them in order. The one loop of the simulations that need only its answers."""
    seen: list[tuple[Config, Outcome]] = []
    while not strategy.finished() and (stop_after is None or len(seen) < stop_after):
        proposed = strategy.propose(Counter(), slots)
        if not proposed:
            break
        room = len(proposed) if stop_after is None else stop_after - len(seen)
        for config in proposed[:room]:
            seen.append((config, outcome(config, len(seen))))
            strategy.observe(*seen[-1])
    return seen


class _Recorder:
    """The live strategy, every call to it and its answer kept for the replays."""

    def __init__(self, strategy: Strategy, decision: Decision | None):
        self.strategy = strategy
        self.decision = decision
        self.calls: list[tuple[str, tuple, object]] = []
        self.snapshots: list[_Snapshot] = []

    def call(self, name: str, *args: object) -> Any:  # whatever the strategy's method returns
        answer = _answer(self.strategy, self.decision, name, args)
        self.calls.append((name, args, answer))
        return answer

    def snapshot(self, observed: int, in_flight: Counter[Config], free: int) -> None:
        """The answers a strategy rebuilt from these outcomes must give; the first rules checked on them."""
        answers = _queries(self.call, in_flight, free)
        finished, proposed, none_slots = answers[:3]
        _require(
            not none_slots,
            "proposals within the free slots",
            f"propose(..., 0) gave {_short(none_slots)}",
        )
        _require(
            not (finished and proposed),
            "finished means nothing proposed",
            f"finished, yet proposed {_short(proposed)}",
        )
        self.snapshots.append(_Snapshot(observed, in_flight, free, answers))


def _answer(strategy: Strategy, decision: Decision | None, name: str, args: tuple) -> object:
    """One call, its answer in a form two runs can compare."""
    if name == "observe":
        strategy.observe(*args)
        return None
    if name == "decision":
        return repr(decision(strategy)) if decision else None
    got = getattr(strategy, name)(
        *(Counter(a) if isinstance(a, Counter) else a for a in args)
    )  # a copy each
    return bool(got) if name == "finished" else list(got)


def _queries(
    call: Callable[..., object], in_flight: Counter[Config], free: int
) -> tuple[object, ...]:
    """What a snapshot asks, in QUERIES' order."""
    return (
        call("finished"),
        call("propose", Counter(in_flight), free),
        call("propose", Counter(in_flight), 0),
        call("obsolete", Counter(in_flight)),
        call("decision"),
    )


def _drive(live: _Recorder, target: Target, capacity: int, max_trials: int, seed: int) -> KitRun:
    rng = random.Random(seed)
    in_flight: dict[str, tuple[Config, int]] = {}
    next_index: Counter[Config] = Counter()
    started: dict[str, Config] = {}
    outcomes: list[tuple[Config, Outcome]] = []
    proposed = cancelled = 0
    next_snapshot = 1

    def counts() -> Counter[Config]:
        return Counter(config for config, _ in in_flight.values())

    def land(tid: str) -> None:
        nonlocal next_snapshot
        config, index = in_flight.pop(tid)
        outcome = replace(
            target(config, index, rng), trial_id=tid, config_key=config.key, index=index
        )
        live.call("observe", config, outcome)
        outcomes.append((config, outcome))
        if (
            len(outcomes) == next_snapshot
        ):  # after outcomes 1, 2, 4, 8, ...: replays cost twice the drive
            live.snapshot(len(outcomes), counts(), capacity - len(in_flight))
            next_snapshot *= 2

    while len(outcomes) < max_trials:
        finished = live.call("finished")
        free = capacity - len(in_flight)
        configs = live.call("propose", counts(), free)
        _require(
            len(configs) <= free,
            "proposals within the free slots",
            f"{len(configs)} configs for {free} free slots",
        )
        _require(
            not (finished and configs),
            "finished means nothing proposed",
            f"finished, yet proposed {_short(configs)}",
        )
        for config in configs:
            tid = trial_id(config.key, next_index[config])
            other = started.get(tid)
            _require(
                other is None, "trial ids unique", f"{tid} twice: for {other!r} and for {config!r}"
            )
            started[tid] = config
            in_flight[tid] = (config, next_index[config])
            next_index[config] += 1
        proposed += len(configs)
        if finished or not in_flight:
            break
        for tid in rng.sample(sorted(in_flight), rng.randint(1, len(in_flight))):
            land(tid)
        obsolete = set(live.call("obsolete", counts()))
        for tid in [t for t, (config, _) in in_flight.items() if config in obsolete]:
            del in_flight[tid]
            cancelled += 1
    for tid in sorted(
        in_flight
    ):  # trials that finished as the study did: real evidence, observed too
        land(tid)
    live.snapshot(len(outcomes), counts(), capacity - len(in_flight))
    return KitRun(
        tuple(outcomes), proposed, cancelled, finished=bool(live.snapshots[-1].answers[0])
    )


def _replay_calls(
    fresh: Strategy, decision: Decision | None, calls: list[tuple[str, tuple, object]]
) -> None:
    for step, (name, args, answer) in enumerate(calls):
        got = _answer(fresh, decision, name, args)
        _require(
            got == answer,
            "replay determinism",
            f"call {step}, {name}({_short(args)}): live answered {_short(answer)}, "
            f"a fresh strategy given the same calls {_short(got)}",
        )


def _replay_outcomes(
    fresh: Strategy,
    decision: Decision | None,
    outcomes: tuple[tuple[Config, Outcome], ...],
    snapshot: _Snapshot,
) -> None:
    for config, outcome in outcomes:
        fresh.observe(config, outcome)
    got = _queries(
        lambda name, *args: _answer(fresh, decision, name, args), snapshot.in_flight, snapshot.free
    )
    for what, live, rebuilt in zip(QUERIES, snapshot.answers, got):
        _require(
            rebuilt == live,
            "replay determinism",
            f"after {snapshot.observed} outcomes, {what}: live answered {_short(live)}, "
            f"a strategy rebuilt from those outcomes alone {_short(rebuilt)}",
        )


def _require(holds: bool, rule: str, detail: str) -> None:
    if not holds:
        raise StrategyContractError(f"{rule}: {detail}")


def _short(value: object, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
