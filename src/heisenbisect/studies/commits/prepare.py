"""A commit bisection before its first trial: the resolved range, the config, the prior.

The deciding is `decide.commits.CommitStrategy`; git lives in `git.py`. `prepare` resolves
the spec's range once (any problem with it is bad input, exit 2), with the worktree folder,
the priors' weights and, when the spec leaves ``p_bad`` to be learned, the runs other studies
of the same folder already stored at the bad commit (`studies.commits.stored`); every later
phase reads them from `CommitStudy`. `open_commits_store` binds the bisection's own store to
all of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from heisenbisect.decide.commits import CommitStrategy, Settings
from heisenbisect.decide.priors import Weights, prior_weights
from heisenbisect.decide.range_check import Wording
from heisenbisect.errors import HeisenbisectError, SpecError
from heisenbisect.git import CommitRange, commit_messages, commit_range, touched_paths
from heisenbisect.hypotheses.loader import position
from heisenbisect.hypotheses.model import Commits, Spec
from heisenbisect.layout import CommitsPaths, StudyPaths, commits_repo, target_folder
from heisenbisect.records import Config
from heisenbisect.store import Store
from heisenbisect.studies.commits.direction import strategy_order, strategy_weights
from heisenbisect.studies.commits.marks import search_runs
from heisenbisect.studies.commits.stored import StoredRuns, stored_bad_end_runs
from heisenbisect.studies.common import open_store
from heisenbisect.studies.identity import canonical, spec_identity
from heisenbisect.studies.options import Options, loaded
from heisenbisect.targets.preflight import Problem, lines_of, probed_folder

PRIORS = "commits.priors"  # the spec's section, named when git fails to read the commits


@dataclass(frozen=True)
class CommitStudy:
    """Everything fixed before the first trial: the spec, the resolved range, the config."""

    spec: Spec
    spec_path: Path
    range: CommitRange
    base: Config
    folder: (
        Path  # <output>/<study>/, shared with the screening's study.sqlite, report.md, results.json
    )
    workdir: str = "."  # target.cwd as a folder of each worktree (layout.worktree_folder)
    stored: StoredRuns | None = (
        None  # runs earlier studies left at the failing end, when p is learned
    )
    weights: Weights | None = None  # commits.priors' weight of each candidate (range order)
    identity: dict = field(default_factory=dict)  # what the store is bound to (`_identity`)

    @property
    def commits(self) -> Commits:
        assert self.spec.commits is not None
        return self.spec.commits

    @property
    def fix(self) -> bool:
        """Whether the search is for the commit where the failure rate went down (``direction: fix``)."""
        return self.commits.direction == "fix"

    @property
    def words(self) -> Wording:
        """How refusals and the ends' progress row name this bisection's ends."""
        if self.fix:
            return Wording("good (failing) end", reversed_advice="rerun without --fix")
        return Wording("bad end", reversed_advice="rerun with --fix")

    @property
    def paths(self) -> CommitsPaths:
        return StudyPaths(self.folder).commits

    def settings(self) -> Settings:
        c = self.commits
        return Settings(
            p_bad=c.p_bad,
            p_good=c.p_good,
            confidence=c.confidence,
            max_trials=c.max_trials,
            bad_end_trials=c.bad_end_trials,
            stored_bad_runs=self.stored.runs if self.stored else 0,
            stored_bad_failures=self.stored.failed if self.stored else 0,
        )

    def strategy(self) -> CommitStrategy:
        """The deciding, in its own order: a fix's range reversed (`studies.commits.direction`)."""
        shas, good = strategy_order(self.range, self.fix)
        prior = strategy_weights(self.weights.weights if self.weights else None, self.fix)
        return CommitStrategy(shas, good, self.settings(), self.base, prior)


def from_options(
    options: Options, assignments: list[str], label: Callable[[str], str] | None = None
) -> CommitStudy:
    """The bisection ``options`` name, probed under ``--config`` ``assignments`` (`prepare`):
    what `bisect commits` runs and what its actions (`start`, `mark` ...) record into."""
    spec, _ = loaded(options)
    return prepare(spec, Path(options.spec), parse_config(spec, assignments), options.out, label)


def parse_config(spec: Spec, assignments: list[str]) -> Config:
    """``--config FACTOR=LEVEL ...`` as the config every commit is probed under."""
    pairs: dict[str, str] = {}
    for text in assignments:
        name, sep, label = text.partition("=")
        if not sep or not name:
            raise HeisenbisectError(f"--config: expected FACTOR=LEVEL, got {text!r}")
        pairs[name] = label
    try:
        return spec.config_from_assignments(pairs)
    except KeyError as exc:
        names = ", ".join(f.name for f in spec.factors) or "none"
        raise HeisenbisectError(
            f"--config: no factor named {exc.args[0]!r}; factors: {names}"
        ) from None
    except ValueError as exc:
        raise HeisenbisectError(f"--config: {exc}") from None


def prepare(
    spec: Spec,
    spec_path: Path,
    base: Config,
    out: str | None = None,
    label: Callable[[str], str] | None = None,
) -> CommitStudy:
    """Resolve the spec's commit range, once, into what every later phase reads; any problem
    with it is a `HeisenbisectError` (exit 2).

    ``label(field)`` names a field of ``commits:`` in messages (default: the spec's file:line:col)."""
    if spec.commits is None:
        raise HeisenbisectError(
            f"{spec_path}: no 'commits:' section; add one with repo, good and bad"
        )
    c = spec.commits
    spec_dir = spec_path.parent
    label = label or spec_labeller(spec_path)
    repo, target_dir = commits_repo(spec, spec_dir), target_folder(spec, spec_dir)
    folder = StudyPaths.of(spec, out, spec_path).root
    resolved = commit_range(
        repo, c.good, c.bad, first_parent=c.first_parent, paths=tuple(c.paths), label=label
    )
    identity = _identity(spec, base, resolved)
    workdir = probed_folder(spec, spec_dir, resolved.repo)
    if isinstance(workdir, Problem):
        raise SpecError(lines_of([workdir], spec_path))
    # p_bad learned: runs other stores hold of the same target (a command) count
    wanted = identity["target"] if c.p_bad is None and spec.target.command is not None else None
    failing_end = resolved.good.sha if c.direction == "fix" else resolved.bad.sha
    stored = stored_bad_end_runs(wanted, repo, target_dir, failing_end, base, folder)
    weights = None
    if c.priors:  # what each candidate touched and says, read once; `decide.priors` weighs it
        shas = [info.sha for info in resolved.candidates]
        asks_paths = any(p.paths for p in c.priors)
        asks_messages = any(p.message is not None for p in c.priors)
        touched = touched_paths(resolved.repo, shas, PRIORS) if asks_paths else {}
        messages = commit_messages(resolved.repo, shas, PRIORS) if asks_messages else {}
        weights = prior_weights(c.priors, shas, touched, messages)
    return CommitStudy(spec, spec_path, resolved, base, folder, workdir, stored, weights, identity)


def _identity(spec: Spec, base: Config, resolved: CommitRange) -> dict:
    """What makes stored trials comparable; confidence and budget may change between runs."""
    assert spec.commits is not None
    c = spec.commits
    return {
        **spec_identity(spec),
        "kind": "commits",
        "config": base.key,
        "good": resolved.good.sha,
        "bad": resolved.bad.sha,
        "first_parent": c.first_parent,
        "paths": list(c.paths),
        "build": c.build,
        "pythonpath": c.pythonpath,
        # only when set, so that stores made before these keys existed keep resuming
        **({"direction": c.direction} if c.direction == "fix" else {}),
        **({"priors": [canonical(p) for p in c.priors]} if c.priors else {}),
    }


def spec_labeller(spec_path: Path) -> Callable[[str], str]:
    """``field -> "file:line:col: commits.field"``, the position of that key's value in the spec."""
    try:
        root = yaml.compose(spec_path.read_text(), Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError):
        root = None
    section = _value_of(root, "commits")

    def label(field: str) -> str:
        node = _value_of(section, field) or section
        where = position(node, spec_path)
        return f"{where}: commits.{field}"

    return label


def _value_of(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value in node.value:
            if key_node.value == key:
                return value
    return None


def open_commits_store(study: CommitStudy, fresh: bool) -> Store:
    """The bisection's own store beside the screening's, bound to the resolved range."""
    return open_store(
        study.paths.store, study.identity, fresh, "commit bisection", study.paths.companions()
    )


def replayed(study: CommitStudy, store: Store) -> CommitStrategy:
    """The strategy as the stored trials leave it (marks undone by `bisect commits undo` left out)."""
    runs = search_runs(store)
    strategy = study.strategy()
    for config, outcome in runs:
        strategy.observe(config, outcome)
    return strategy
