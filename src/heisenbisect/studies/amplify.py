"""An amplification study: spec -> Optuna study + engine + stores, for `bisect amplify`.

The search's deciding logic is `decide.amplify.Search` (which runs each candidate gets);
Optuna proposes the candidates (TPE over the spec's knobs) and keeps one trial per look at
a candidate in its own RDB storage, ``optuna.db``, which optuna-dashboard opens. Every run
lands in ``amplify.sqlite`` (the search) or ``confirm.sqlite`` (the confirmation) first:
those are the record. On resume the Optuna study is reconciled with them: each Optuna trial
carries the number of runs stored when it was asked, so replaying the store and re-adding
the trials at those points rebuilds the search exactly, and a trial a killed driver left
RUNNING is told its value from the stored runs once they complete it.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Hashable, Mapping

from heisenbisect.decide.amplify import (
    Confirmation,
    ConfirmSettings,
    Search,
    SearchSettings,
    estimate,
)
from heisenbisect.engine import trial_id
from heisenbisect.errors import HeisenbisectError
from heisenbisect.hypotheses.model import Amplify, Spec
from heisenbisect.records import Config, Outcome, Trial
from heisenbisect.store import Store, move_aside, store_files
from heisenbisect.studies.common import StudyPaths, open_store, spec_identity

CURRENT = Config()  # the spec as it is: no knob moved


def _optuna():
    try:
        import optuna
    except ImportError:
        raise HeisenbisectError("bisect amplify needs Optuna: pip install 'heisenbisect[optuna]'") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


@dataclass(frozen=True)
class AmplifyPaths:
    """What an amplification keeps in the study folder, beside the screening's files."""

    root: Path

    @property
    def search_store(self) -> Path:
        return self.root / "amplify.sqlite"

    @property
    def confirm_store(self) -> Path:
        return self.root / "confirm.sqlite"

    @property
    def optuna_db(self) -> Path:
        return self.root / "optuna.db"

    @property
    def storage_url(self) -> str:
        return f"sqlite:///{self.optuna_db}"

    @property
    def logs(self) -> Path:
        return self.root / "logs" / "amplify"

    @property
    def report(self) -> Path:
        return self.root / "amplify.md"

    @property
    def plot(self) -> Path:
        return self.root / "amplify.png"

    @property
    def results(self) -> Path:
        return self.root / "amplify.json"

    @property
    def amplified(self) -> Path:
        return self.root / "amplified.yaml"

    @classmethod
    def of(cls, spec: Spec, out: str | None, spec_path: str | Path) -> "AmplifyPaths":
        return cls(StudyPaths.of(spec, out, spec_path).root)

    def companions(self) -> list[Path]:
        """What ``--fresh`` moves aside with the search store: every other file of this kind."""
        return [
            *store_files(self.confirm_store), self.optuna_db, self.logs, self.report, self.plot, self.results,
            self.amplified,
        ]


def section(spec: Spec, spec_path: Path | str) -> Amplify:
    if spec.amplify is None:
        raise HeisenbisectError(f"{spec_path}: no 'amplify:' section; add one with the knobs to search (docs/amplify.md)")
    return spec.amplify


def search_settings(amplify: Amplify) -> SearchSettings:
    return SearchSettings(
        max_runs=amplify.max_runs,
        first_runs=amplify.first_runs,
        max_candidate_runs=amplify.max_candidate_runs,
        confidence=amplify.confidence,
    )


def confirm_settings(amplify: Amplify) -> ConfirmSettings:
    return ConfirmSettings(
        confidence=amplify.confidence,
        first_look=min(amplify.first_look, amplify.confirm_runs),
        max_runs=amplify.confirm_runs,
    )


def search_identity(spec: Spec) -> dict:
    """What makes stored search runs comparable; the budget may change between runs."""
    assert spec.amplify is not None
    knobs = [k.model_dump(mode="json", exclude={"description"}) for k in spec.amplify.knobs]
    return {**spec_identity(spec), "kind": "amplify", "knobs": knobs}


def trial_factory(spec: Spec):
    """(config, index, seed) -> Trial: the spec's own settings plus the config's knob values."""
    amplify = section(spec, spec.study)

    def make(config: Config, index: int, seed: int) -> Trial:
        return Trial(
            trial_id=trial_id(config.key, index),
            config=config,
            index=index,
            seed=seed,
            env={**spec.environment(CURRENT), **amplify.environment(config)},
            args=(*spec.arguments(CURRENT), *amplify.arguments(config)),
        )

    return make


# -- Optuna ------------------------------------------------------------------------------------


def distributions(amplify: Amplify) -> dict:
    optuna = _optuna()
    dists = {}
    for knob in amplify.knobs:
        if knob.type == "int":
            dists[knob.name] = optuna.distributions.IntDistribution(int(knob.low), int(knob.high), log=knob.log)
        elif knob.type == "float":
            dists[knob.name] = optuna.distributions.FloatDistribution(knob.low, knob.high, log=knob.log)
        else:
            dists[knob.name] = optuna.distributions.CategoricalDistribution(list(knob.choices))
    return dists


def config_of(amplify: Amplify, params: Mapping[str, object]) -> Config:
    """The config that sets every knob to its (rounded) value from ``params``."""
    return Config(changes=tuple(sorted((name, amplify.knob(name).label(v)) for name, v in params.items())))


def open_optuna_study(paths: AmplifyPaths, name: str, amplify: Amplify):
    """The Optuna study in ``optuna.db`` (``--fresh`` moved an old one aside with the search store)."""
    paths.root.mkdir(parents=True, exist_ok=True)
    return new_optuna_study(name, amplify, paths.storage_url)


def new_sampler(amplify: Amplify):
    """The spec's sampler: the Gaussian process (``gp``, docs/amplify.md), Optuna's TPE
    (multivariate, so an interaction between knobs is modelled) or random search."""
    optuna = _optuna()
    if amplify.sampler == "gp":
        from heisenbisect.studies.amplify_sampler import SurrogateSampler

        return SurrogateSampler(amplify, amplify.seed)
    if amplify.sampler == "random":
        return optuna.samplers.RandomSampler(seed=amplify.seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(seed=amplify.seed, multivariate=True, constant_liar=True)


def new_optuna_study(name: str, amplify: Amplify, storage: str | None):
    """An Optuna study maximizing bits per second, with the spec's sampler."""
    optuna = _optuna()
    sampler = new_sampler(amplify)
    return optuna.create_study(
        study_name=name, storage=storage, sampler=sampler, direction="maximize", load_if_exists=True
    )


class OptunaSearch:
    """The search phase as a `Strategy`: `Search` decides the runs, Optuna the candidates.

    Each Optuna trial is one look at a candidate: asked when a slot is free and no
    candidate wants more runs, told the candidate's estimated bits per second when the
    search closes it, with the runs, failed runs and seconds behind that value as user attrs.
    """

    def __init__(self, study, amplify: Amplify, search: Search):
        self.study = study
        self.amplify = amplify
        self.search = search
        self.observed = 0
        self._dists = distributions(amplify)
        self._finished_trials: set[int] = set()
        attach = getattr(study.sampler, "attach", None)  # the Gaussian process reads the runs themselves
        if attach is not None:
            attach(lambda: {c: cand.evidence for c, cand in search.candidates.items()}, CURRENT)
            search.ranker = study.sampler.expected_values

    # -- Strategy --------------------------------------------------------------------------

    def observe(self, config: Config, outcome: Outcome) -> None:
        self.observed += 1
        self.search.observe(config, outcome)
        self._tell_closed()

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        planned = dict(in_flight)
        chosen: list[Config] = []
        while len(chosen) < slots:
            more = self.search.propose(planned, slots - len(chosen))
            if not more:
                if not self.search.wants_candidate(planned):
                    break
                self._ask()
                continue
            for config in more:
                planned[config] = planned.get(config, 0) + 1
            chosen += more
        return chosen

    def obsolete(self, in_flight: Mapping[Config, int]) -> list[Config]:
        return []

    def finished(self) -> bool:
        return self.search.finished()

    # -- Optuna ----------------------------------------------------------------------------

    def _ask(self) -> None:
        trial = self.study.ask(self._dists)
        config = config_of(self.amplify, trial.params)
        # before any run of it: a resumed driver re-adds this trial at this point of the store
        trial.set_user_attr("config", config.key)
        trial.set_user_attr("changes", [list(pair) for pair in config.changes])
        trial.set_user_attr("asked_after_runs", self.observed)
        self.search.add(config, trial.number)
        self._tell_closed()

    def add_stored(self, config: Config, number: int, finished: bool) -> None:
        """Re-add a trial of an earlier driver (resume); a finished one is never told again."""
        if finished:
            self._finished_trials.add(number)
        self.search.add(config, number)
        self._tell_closed()

    def _tell_closed(self) -> None:
        for config, token in self.search.pop_closed():
            if token is None or token in self._finished_trials:
                continue
            est = estimate(self.search.candidates[config].evidence, self.amplify.confidence)
            attrs = {
                "runs": est.runs,
                "failed_runs": est.failed_runs,
                "seconds": round(est.seconds, 3),
                "rate": est.rate,
                "runs_per_s": est.runs_per_s,
            }
            for key, value in attrs.items():
                self.study._storage.set_trial_user_attr(self._trial_id(token), key, value)
            self.study.tell(token, est.value)
            self._finished_trials.add(token)

    def _trial_id(self, number: Hashable) -> int:
        return self.study._storage.get_trial_id_from_study_id_trial_number(self.study._study_id, number)


def restored_search(study, amplify: Amplify, store: Store) -> OptunaSearch:
    """The search as the stored runs and the Optuna trials leave it (see the module docstring)."""
    optuna = _optuna()
    strategy = OptunaSearch(study, amplify, Search(CURRENT, search_settings(amplify)))
    stored = []
    for trial in sorted(study.get_trials(deepcopy=False), key=lambda t: t.number):
        changes = trial.user_attrs.get("changes")
        if changes is None:
            if trial.state == optuna.trial.TrialState.RUNNING:
                study.tell(trial.number, state=optuna.trial.TrialState.FAIL)  # killed before its first run
            continue
        config = Config(changes=tuple(tuple(pair) for pair in changes))
        stored.append((trial.user_attrs["asked_after_runs"], config, trial.number, trial.state.is_finished()))
    pending = iter(stored)
    following = next(pending, None)
    for k, (config, outcome) in enumerate(store.outcomes()):
        while following is not None and following[0] <= k:
            strategy.add_stored(*following[1:])
            following = next(pending, None)
        strategy.observe(config, outcome)
    while following is not None:
        strategy.add_stored(*following[1:])
        following = next(pending, None)
    return strategy


def open_search_store(spec: Spec, paths: AmplifyPaths, fresh: bool) -> Store:
    """The search's store, holding the study folder's lock for the whole command."""
    return open_store(paths.search_store, search_identity(spec), fresh, "amplification", paths.companions())


def open_confirm_store(spec: Spec, paths: AmplifyPaths, best: Config) -> Store:
    """The confirmation's runs, opened under the lock the search store holds. A confirmation of
    other settings (the search went on with a larger budget) is moved aside, not mixed in."""
    identity = {**search_identity(spec), "confirm": best.key}
    if paths.confirm_store.exists():
        with Store(paths.confirm_store) as old:
            bound = json.loads(old.meta("identity") or "{}").get("confirm")
            stale = old.count() > 0 and bound != best.key
        if stale:
            move_aside(paths.root, store_files(paths.confirm_store))
    store = Store(paths.confirm_store)
    try:
        store.bind(identity, "confirmation")
    except BaseException:
        store.close()
        raise
    return store


def replayed_confirmation(spec: Spec, best: Config, store: Store) -> Confirmation:
    amplify = section(spec, spec.study)
    confirmation = Confirmation(best, CURRENT, confirm_settings(amplify))
    for config, outcome in store.outcomes():
        confirmation.observe(config, outcome)
    return confirmation
