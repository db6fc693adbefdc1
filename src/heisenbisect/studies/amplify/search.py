"""The amplification's search as a `Strategy`: `decide.amplify.Search` decides the runs, Optuna
the candidates.

Optuna proposes the candidates (the spec's sampler over its knobs) and keeps one trial per look
at a candidate in its own RDB storage, ``optuna.db``, which optuna-dashboard opens. Every run
lands in ``amplify.sqlite`` first: that is the record. On resume the Optuna study is reconciled
with it: each Optuna trial carries the number of runs stored when it was asked, so replaying the
store and re-adding the trials at those points rebuilds the search exactly, and a trial a killed
driver left RUNNING is told its value from the stored runs once they complete it.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping

from heisenbisect.decide.amplify import Search, SearchSettings, estimate
from heisenbisect.errors import HeisenbisectError
from heisenbisect.hypotheses.model import Amplify
from heisenbisect.layout import AmplifyPaths
from heisenbisect.records import Config, Outcome
from heisenbisect.store import Store

CURRENT = Config()  # the spec as it is: no knob moved


def _optuna():
    try:
        import optuna
    except ImportError:
        raise HeisenbisectError(
            "bisect amplify needs Optuna: pip install 'heisenbisect[optuna]'"
        ) from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def search_settings(amplify: Amplify) -> SearchSettings:
    return SearchSettings(
        max_runs=amplify.max_runs,
        first_runs=amplify.first_runs,
        max_candidate_runs=amplify.max_candidate_runs,
        confidence=amplify.confidence,
    )


def distributions(amplify: Amplify) -> dict:
    optuna = _optuna()
    dists = {}
    for knob in amplify.knobs:
        if knob.type == "int":
            dists[knob.name] = optuna.distributions.IntDistribution(
                int(knob.low or 0), int(knob.high or 0), log=knob.log
            )
        elif knob.type == "float":
            dists[knob.name] = optuna.distributions.FloatDistribution(
                knob.low, knob.high, log=knob.log
            )
        else:
            dists[knob.name] = optuna.distributions.CategoricalDistribution(
                list(knob.choices or [])
            )
    return dists


def config_of(amplify: Amplify, params: Mapping[str, str | int | float]) -> Config:
    """The config that sets every knob to its (rounded) value from ``params``."""
    return Config(
        changes=tuple(sorted((name, amplify.knob(name).label(v)) for name, v in params.items()))
    )


def open_optuna_study(paths: AmplifyPaths, name: str, amplify: Amplify):
    """The Optuna study in ``optuna.db`` (``--fresh`` moved an old one aside with the search store)."""
    paths.root.mkdir(parents=True, exist_ok=True)
    return new_optuna_study(name, amplify, paths.storage_url)


def new_sampler(amplify: Amplify):
    """The spec's sampler: the Gaussian process (``gp``, docs/amplify.md), Optuna's TPE
    (multivariate, so an interaction between knobs is modelled) or random search."""
    optuna = _optuna()
    if amplify.sampler == "gp":
        from heisenbisect.studies.amplify.sampler import SurrogateSampler

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
        self._finished_trials: set[Hashable] = set()
        attach = getattr(
            study.sampler, "attach", None
        )  # the Gaussian process reads the runs themselves
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
        return self.study._storage.get_trial_id_from_study_id_trial_number(
            self.study._study_id, number
        )


def restored_search(study, amplify: Amplify, store: Store) -> OptunaSearch:
    """The search as the stored runs and the Optuna trials leave it (see the module docstring)."""
    optuna = _optuna()
    strategy = OptunaSearch(study, amplify, Search(CURRENT, search_settings(amplify)))
    stored = []
    for trial in sorted(study.get_trials(deepcopy=False), key=lambda t: t.number):
        changes = trial.user_attrs.get("changes")
        if (
            changes is None or "asked_after_runs" not in trial.user_attrs
        ):  # killed while it was being asked:
            if trial.state == optuna.trial.TrialState.RUNNING:  # no run of it can have started
                study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
            continue
        config = Config(changes=tuple(tuple(pair) for pair in changes))
        stored.append(
            (trial.user_attrs["asked_after_runs"], config, trial.number, trial.state.is_finished())
        )
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
