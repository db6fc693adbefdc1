"""The hypotheses spec as frozen pydantic models: what a YAML file may say, and nothing else."""

from __future__ import annotations

import math
import re
import shlex
from typing import Literal

from pydantic import Field, field_validator, model_validator

from heisenbisect.hypotheses.common import Frozen, check_env_name, check_env_value
from heisenbisect.hypotheses.targets import Target
from heisenbisect.records import Config
from heisenbisect.runner_kinds import RUNNER_KINDS

LevelValue = str | int | float | bool | None | list[str]
INT64_MIN, INT64_MAX = (
    -(2**63),
    2**63 - 1,
)  # what a target parses an int knob into, and sqlite stores
MAX_STUDY_NAME = 100  # a folder name, with room under NAME_MAX (255) for the files beside it


class Factor(Frozen):
    """A named knob; its first level is the baseline.

    ``env`` factors set (or, with a null level, unset) the variable ``var``;
    ``arg`` factors append arguments (a string is split like a shell would).
    """

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*$")
    kind: Literal["env", "arg"] = "env"
    var: str | None = None
    levels: list[LevelValue] = Field(min_length=2)
    description: str = ""

    @model_validator(mode="after")
    def _check(self) -> Factor:
        labels = self.labels
        if len(set(labels)) != len(labels):
            raise ValueError(f"levels must be distinct, got {labels}")
        if self.kind == "env" and any(isinstance(v, list) for v in self.levels):
            raise ValueError("an env factor's levels are scalars, not lists")
        if self.kind == "arg" and self.var is not None:
            raise ValueError("'var' applies to env factors only")
        if self.kind == "env":
            check_env_name(self.env_var)
            for value in self.levels:
                check_env_value(value)
        return self

    @property
    def env_var(self) -> str:
        return (
            self.name if self.var is None else self.var
        )  # '' is refused, not replaced by the name

    @property
    def labels(self) -> list[str]:
        return [level_label(v) for v in self.levels]

    @property
    def baseline_label(self) -> str:
        return self.labels[0]

    def value_of(self, label: str) -> LevelValue:
        return self.levels[self.labels.index(label)]


def level_label(value: LevelValue) -> str:
    """A short, stable name for a level: used in config keys and reports."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, list):
        return " ".join(value) if value else "(none)"
    return str(value)


def env_value(value: LevelValue) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def arg_values(value: LevelValue) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return list(value)
    if isinstance(value, bool):
        return [] if not value else ["1"]
    return shlex.split(str(value))


class Statistics(Frozen):
    """How sure a verdict must be, and how much it may cost."""

    confidence: float = Field(0.95, gt=0.5, lt=1)
    zero_rate: float = Field(0.05, gt=0, lt=1)
    min_reduction: float = Field(0.5, gt=0, lt=1)
    max_trials: int = Field(400, ge=2)
    first_look: int = Field(10, ge=2)
    cost_metric: str | None = None  # a metric the target reports; default: the first one seen
    cost_higher_is_better: bool = True
    # group: search many changes by group testing (docs/group-screening.md); one_at_a_time: an arm
    # per change; auto: group above GROUP_STRATEGY_ABOVE candidate changes
    strategy: Literal["auto", "group", "one_at_a_time"] = "auto"
    group_size: int | None = Field(None, ge=1)  # default: Hwang's size for expected_effects
    expected_effects: int = Field(2, ge=1)


GROUP_STRATEGY_ABOVE = 16  # candidate changes; docs/group-screening.md says why


class Execution(Frozen):
    """Where and how many trials run at once."""

    # runners.registry builds each kind; the names come from it, a tuple Literal takes at run time
    runner: Literal[RUNNER_KINDS] = "local"  # type: ignore[valid-type]
    parallel: int = Field(1, ge=1)
    address: str | None = None
    gpus_per_trial: float = Field(0, ge=0)
    cpus_per_trial: float = Field(1, ge=0)
    max_in_flight: int | None = Field(None, ge=1)
    working_dir: str | None = None
    trials_per_gpu: int | None = Field(
        None, ge=1
    )  # placement: local pins each trial to one GPU; Ray: 1/N GPU
    # contention as a condition: re-screen the decided eliminators and reducers at N trials in flight
    # (N per GPU with trials_per_gpu) after the study; a changed verdict "depends on contention"
    recheck_parallel: int | None = Field(None, ge=1)


class CommitPrior(Frozen):
    """A suspicion about some commits: those matching it weigh ``weight`` times more as the culprit.

    A soft prior, never an exclusion (``paths:`` of the range excludes): a commit matches when it
    touches one of ``paths`` (globs; a plain folder matches everything under it) and, if given,
    its message matches the regular expression ``message``; weights of several matches multiply.
    """

    paths: list[str] = Field(default_factory=list)
    message: str | None = None
    weight: float = Field(gt=0)

    @model_validator(mode="after")
    def _check(self) -> CommitPrior:
        if not self.paths and self.message is None:
            raise ValueError("a prior needs 'paths' or 'message' (or both)")
        if self.message is not None:
            try:
                re.compile(self.message)
            except re.error as exc:
                raise ValueError(f"message: not a regular expression: {exc}") from None
        return self


class Commits(Frozen):
    """A commit range for noisy bisection: ``good`` does not fail, ``bad`` does (sometimes).

    With ``direction: fix`` the range still runs old (``good``) to new (``bad``), but the search
    is for the first commit whose failure rate went down: ``good`` fails, ``bad`` (rarely) not.
    """

    repo: str = "."
    good: str
    bad: str
    first_parent: bool = True
    paths: list[str] = Field(default_factory=list)
    build: list[str] | str | None = None
    build_timeout: float = Field(
        600.0, gt=0
    )  # seconds; a build still running then is killed, the commit untestable
    pythonpath: str | None = None
    p_bad: float | None = Field(None, gt=0, le=1)
    p_good: float | None = Field(None, ge=0, lt=1)
    confidence: float = Field(0.95, gt=0.5, lt=1)
    max_trials: int = Field(2000, ge=1)
    bad_end_trials: int = Field(10, ge=0)
    direction: Literal["regression", "fix"] = "regression"
    priors: list[CommitPrior] = Field(default_factory=list)
    end_runs: int = Field(30, ge=1)  # runs at each end before an undecided range check goes on
    retry_timeouts: int = Field(0, ge=0)  # timeouts at a commit beyond the first; then untestable
    verify: bool = True  # rerun a found culprit beside its predecessor before blaming it
    verify_rounds: int = Field(150, ge=1)  # rounds of verification before "not verified"


class Knob(Frozen):
    """A stress setting `bisect amplify` may move: an integer, a float or a choice.

    ``env`` knobs set the variable ``var`` (default: the name); ``arg`` knobs append
    ``flag VALUE`` to the command. Unset, the target runs with its current settings.
    """

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*$")
    type: Literal["int", "float", "choice"]
    kind: Literal["env", "arg"] = "env"
    var: str | None = None
    flag: str | None = None
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: list[str | int | float] | None = None
    description: str = ""

    @model_validator(mode="after")
    def _check(self) -> Knob:
        if self.type == "choice":
            if not self.choices or len(self.choices) < 2:
                raise ValueError("a choice knob needs 'choices' with at least two values")
            if self.low is not None or self.high is not None or self.log:
                raise ValueError("a choice knob takes 'choices', not 'low', 'high' or 'log'")
            if len({str(c) for c in self.choices}) != len(self.choices):
                raise ValueError(f"choices must be distinct, got {self.choices}")
        else:
            if self.low is None or self.high is None or not self.low < self.high:
                raise ValueError(
                    f"an {self.type} knob needs 'low' < 'high', got {self.low}, {self.high}"
                )
            if self.choices is not None:
                raise ValueError(f"an {self.type} knob takes 'low' and 'high', not 'choices'")
            if not (math.isfinite(self.low) and math.isfinite(self.high)):
                raise ValueError(
                    f"an {self.type} knob needs finite bounds, got {self.low}, {self.high}"
                )
            if self.log and self.low <= 0:
                raise ValueError(f"a log knob needs 'low' > 0, got {self.low}")
            if self.type == "int" and (self.low != int(self.low) or self.high != int(self.high)):
                raise ValueError(f"an int knob needs integer bounds, got {self.low}, {self.high}")
            if self.type == "int" and not INT64_MIN <= self.low < self.high <= INT64_MAX:
                raise ValueError(
                    f"an int knob's bounds must fit in 64 bits, got {self.low:g}, {self.high:g}"
                )
        if self.kind == "env":
            check_env_name(self.env_var)
        if self.kind == "arg" and not self.flag:
            raise ValueError("an arg knob needs 'flag' (the option its value follows)")
        if self.kind == "env" and self.flag is not None:
            raise ValueError("'flag' applies to arg knobs only")
        if self.kind == "arg" and self.var is not None:
            raise ValueError("'var' applies to env knobs only")
        return self

    @property
    def env_var(self) -> str:
        return self.name if self.var is None else self.var

    def label(self, value: str | int | float) -> str:
        """The text a trial gets for ``value``: ints as ints, floats to 4 significant digits."""
        if self.type == "int":
            return str(int(round(float(value))))
        if self.type == "float":
            return f"{float(value):.4g}"
        return str(value)


# (first_runs, max_candidate_runs) by sampler: the Gaussian process pools neighbours' runs, so
# its candidates need fewer of their own (benchmarks/amplify.py, docs/amplify.md)
CANDIDATE_RUNS = {"gp": (1, 8), "tpe": (2, 24), "random": (2, 24)}


class Amplify(Frozen):
    """`bisect amplify`: the knobs to search and the budget of the search and its confirmation."""

    knobs: list[Knob] = Field(min_length=1)
    max_runs: int = Field(300, ge=10)  # runs of the search, the current settings' included
    sampler: Literal["gp", "tpe", "random"] = "gp"  # who proposes candidates (docs/amplify.md)
    first_runs: int = Field(1, ge=1)  # runs a new candidate gets (default: CANDIDATE_RUNS)
    max_candidate_runs: int = Field(8, ge=1)  # most runs one candidate gets in the search
    confirm_runs: int = Field(200, ge=2)  # most runs per arm when confirming the best
    first_look: int = Field(10, ge=2)
    confidence: float = Field(0.95, gt=0.5, lt=1)
    seed: int = 0  # the sampler's seed

    @model_validator(mode="before")
    @classmethod
    def _candidate_runs(cls, data: object) -> object:
        """Unset candidate runs take the sampler's defaults."""
        if isinstance(data, dict):
            first, most = CANDIDATE_RUNS.get(data.get("sampler", "gp"), CANDIDATE_RUNS["gp"])
            data = {"first_runs": first, "max_candidate_runs": most, **data}
        return data

    @model_validator(mode="after")
    def _check(self) -> Amplify:
        names = [k.name for k in self.knobs]
        if len(set(names)) != len(names):
            raise ValueError(f"knob names must be distinct, got {names}")
        if not self.first_runs <= self.max_candidate_runs <= self.max_runs:
            raise ValueError("need first_runs <= max_candidate_runs <= max_runs")
        return self

    def knob(self, name: str) -> Knob:
        return next(k for k in self.knobs if k.name == name)

    def environment(self, config: Config) -> dict[str, str]:
        """The env vars a config's knob settings add (knobs it leaves out stay as they are)."""
        return {self.knob(n).env_var: v for n, v in config.changes if self.knob(n).kind == "env"}

    def arguments(self, config: Config) -> list[str]:
        args: list[str] = []
        for name, value in config.changes:
            if self.knob(name).kind == "arg":
                args += [self.knob(name).flag or "", value]
        return args


class Spec(Frozen):
    """A whole hypotheses file."""

    study: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", max_length=MAX_STUDY_NAME)
    question: str = ""
    target: Target
    factors: list[Factor] = Field(default_factory=list)
    statistics: Statistics = Field(default_factory=Statistics)
    execution: Execution = Field(default_factory=Execution)
    commits: Commits | None = None
    amplify: Amplify | None = None
    output: str = "reports"
    secrets: list[str] = Field(default_factory=list)
    """More names (env variables, flags) whose values are secrets, beside those that look it
    (`redaction.looks_secret`): replaced by ``<redacted:NAME>`` in every output."""

    @field_validator("study")
    @classmethod
    def _one_folder(cls, study: str) -> str:
        if study in (".", ".."):
            raise ValueError("the study name is a folder of its own: not '.' or '..'")
        return study

    @field_validator("factors")
    @classmethod
    def _unique_names(cls, factors: list[Factor]) -> list[Factor]:
        seen: set[str] = set()
        for factor in factors:
            if factor.name in seen:
                raise ValueError(f"factor name {factor.name!r} is used twice")
            seen.add(factor.name)
        return factors

    @model_validator(mode="after")
    def _knobs_apart_from_factors(self) -> Spec:
        if self.amplify is None:
            return self
        factor_vars = {f.env_var for f in self.factors if f.kind == "env"}
        for knob in self.amplify.knobs:
            if any(f.name == knob.name for f in self.factors):
                raise ValueError(
                    f"amplify knob {knob.name!r} has the name of a factor; screening moves factors"
                )
            if knob.kind == "env" and knob.env_var in factor_vars:
                raise ValueError(
                    f"amplify knob {knob.name!r} sets {knob.env_var}, which a factor sets"
                )
            if knob.kind == "arg" and self.target.kind not in ("command", "server"):
                raise ValueError(
                    f"amplify knob {knob.name!r} is an arg knob; only a command or server target "
                    "takes arguments"
                )
        return self

    def factor(self, name: str) -> Factor:
        for factor in self.factors:
            if factor.name == name:
                return factor
        raise KeyError(name)

    @property
    def baseline(self) -> Config:
        return Config()

    def arms(self) -> list[Config]:
        """One config per factor level that differs from the baseline, in spec order."""
        return [
            Config(changes=((factor.name, label),))
            for factor in self.factors
            for label in factor.labels[1:]
        ]

    @property
    def uses_groups(self) -> bool:
        """Whether `bisect run` screens by group testing: asked for, or ``auto`` with many changes."""
        if self.statistics.strategy == "auto":
            return len(self.arms()) > GROUP_STRATEGY_ABOVE
        return self.statistics.strategy == "group"

    def config_from_assignments(self, assignments: dict[str, str]) -> Config:
        """A config from ``factor=label`` pairs (labels as shown in reports); raises KeyError/ValueError."""
        changes = []
        for name, label in assignments.items():
            factor = self.factor(name)
            if label not in factor.labels:
                raise ValueError(f"factor {name!r} has no level {label!r}; levels: {factor.labels}")
            if label != factor.baseline_label:
                changes.append((name, label))
        return Config(changes=tuple(sorted(changes)))

    def environment(self, config: Config) -> dict[str, str | None]:
        """The env vars a trial of ``config`` gets beyond the target's fixed env (None = unset)."""
        env: dict[str, str | None] = dict(self.target.env)
        for factor in self.factors:
            if factor.kind != "env":
                continue
            label = config.level_of(factor.name) or factor.baseline_label
            env[factor.env_var] = env_value(factor.value_of(label))
        return env

    def arguments(self, config: Config) -> list[str]:
        args: list[str] = []
        for factor in self.factors:
            if factor.kind != "arg":
                continue
            label = config.level_of(factor.name) or factor.baseline_label
            args.extend(arg_values(factor.value_of(label)))
        return args


STUDY_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def study_name_from(stem: str) -> str:
    """A study name from a file name: safe characters, no leading dots, at most `MAX_STUDY_NAME`."""
    return STUDY_NAME.sub("-", stem).strip("-.")[:MAX_STUDY_NAME].strip("-.") or "study"
