"""An Optuna sampler over `decide.surrogate`: the amplify search's candidates from a Gaussian process.

Optuna keeps the study (its storage, the dashboard, resume); this sampler only chooses the
next candidate's knob values. It reads the runs of every candidate so far from the search
itself (a candidate still running has runs that no Optuna trial has been told yet), maps
them into the unit cube, fits `decide.surrogate` and returns a Thompson draw's best setting.
The first ``startup`` candidates come from a scrambled Sobol sequence, which covers the space
more evenly than random draws. Each proposal is seeded by the seed and the trial's number. A
resumed search never needs the sampler's past: each Optuna trial stores the settings it got.

Imported only when a study is made (it subclasses Optuna's BaseSampler; Optuna is an extra).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from scipy.stats import qmc

from heisenbisect.decide import surrogate
from heisenbisect.decide.amplify import TimedRuns, estimate
from heisenbisect.hypotheses.model import Amplify, Knob
from heisenbisect.records import Config

STARTUP = 8  # space-filling candidates before the model proposes
RETUNE = 1.2  # the hyperparameters are tuned again once the points have grown by this factor
CLOSE = 0.03  # a proposal this near a candidate still waiting for its first run is not made


def _numeric(choices: list) -> list[float] | None:
    try:
        return [float(c) for c in choices]
    except (TypeError, ValueError):
        return None


class KnobScale:
    """A knob's values to and from [0, 1]: log knobs on the log scale, choices by rank."""

    def __init__(self, knob: Knob):
        self.knob = knob
        # the spec model gives a choice knob its choices and a numeric one both bounds
        self.low, self.high = float(knob.low or 0.0), float(knob.high or 0.0)
        if knob.type == "choice":
            choices = knob.choices or []
            numbers = _numeric(choices)
            order = (
                sorted(range(len(choices)), key=lambda i: numbers[i])
                if numbers
                else range(len(choices))
            )
            self.ranked = [choices[i] for i in order]
            self.dimension = surrogate.Dimension(levels=len(choices), categorical=numbers is None)
        else:
            self.dimension = surrogate.Dimension()

    def to_unit(self, label: str) -> float:
        k = self.knob
        if k.type == "choice":
            return [str(c) for c in self.ranked].index(label) / (len(self.ranked) - 1)
        low, high, value = self.low, self.high, float(label)
        if k.log:
            low, high, value = math.log(low), math.log(high), math.log(max(value, self.low))
        return min(max((value - low) / (high - low), 0.0), 1.0)

    def from_unit(self, u: float) -> Any:
        k = self.knob
        if k.type == "choice":
            return self.ranked[int(round(u * (len(self.ranked) - 1)))]
        low, high = self.low, self.high
        value = (
            math.exp(math.log(low) + u * (math.log(high) - math.log(low)))
            if k.log
            else low + u * (high - low)
        )
        value = min(max(value, low), high)
        return int(min(max(round(value), low), high)) if k.type == "int" else value


class SurrogateSampler(optuna.samplers.BaseSampler):
    """Candidates by Thompson draws from a Gaussian process of rate and run time."""

    def __init__(self, amplify: Amplify, seed: int = 0, startup: int = STARTUP):
        self.scales = [KnobScale(k) for k in amplify.knobs]
        self.dims = [s.dimension for s in self.scales]
        self.seed = seed
        self.startup = startup
        self._evidence: Callable[[], Mapping[Config, TimedRuns]] = dict
        self._current: Config | None = None
        self._theta: tuple[np.ndarray, np.ndarray] | None = None  # the latest tuned hyperparameters
        self._tuned_at = 0  # the number of points they were tuned on
        self._cached: tuple[int, np.ndarray] | None = None
        self._sobol = qmc.Sobol(len(self.dims), scramble=True, seed=seed).random(
            max(2, 1 << (startup - 1).bit_length())
        )

    def attach(self, evidence: Callable[[], Mapping[Config, TimedRuns]], current: Config) -> None:
        """Where the runs come from: the search's candidates; ``current`` has no place in the space."""
        self._evidence, self._current = evidence, current

    # -- Optuna's interface ----------------------------------------------------------------

    def infer_relative_search_space(self, study, trial) -> dict[str, BaseDistribution]:
        return {}  # every knob comes through sample_independent, from one proposal per trial

    def sample_relative(self, study, trial, search_space) -> dict[str, Any]:
        return {}

    def sample_independent(
        self, study, trial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        u = self._proposal(trial.number)
        index = [s.knob.name for s in self.scales].index(param_name)
        return self.scales[index].from_unit(float(u[index]))

    # -- proposing -------------------------------------------------------------------------

    def _proposal(self, number: int) -> np.ndarray:
        """The unit-cube point for trial ``number``, computed once for all of its knobs."""
        if self._cached is not None and self._cached[0] == number:
            return self._cached[1]
        _, points, waiting, current_value = self._points()
        if number < self.startup or len(points) < 2:
            u = self._sobol[number % len(self._sobol)]
        else:
            rng = np.random.default_rng([self.seed, number])
            try:
                tune = self._theta is None or len(points) >= RETUNE * self._tuned_at
                model = surrogate.fit(points, self.dims, self._theta, tune)
                if tune:
                    self._theta, self._tuned_at = model.hyperparameters, len(points)
                u = surrogate.next_point(model, points, self.dims, rng, avoid=waiting, close=CLOSE)
            except (np.linalg.LinAlgError, ValueError):
                u = rng.random(len(self.dims))  # a singular fit: explore rather than stop
        self._cached = (number, u)
        return u

    def expected_values(self, evidence: Mapping[Config, TimedRuns]) -> dict[Config, float]:
        """Each candidate's bits per second under the model (the current settings: their own
        estimate); tuned from the default start, so the same runs always rank the same."""
        configs, points, _, current_value = self._points(evidence)
        current = self._current
        values = {current: current_value} if current is not None and current in evidence else {}
        if len(points) < 2:
            return values
        try:
            model = surrogate.fit(points, self.dims)
        except (np.linalg.LinAlgError, ValueError):
            return values
        return {
            **values,
            **dict(zip(configs, model.expected_value(np.array([p.x for p in points])))),
        }

    def _points(
        self, evidence: Mapping[Config, TimedRuns] | None = None
    ) -> tuple[list[Config], list[surrogate.Point], np.ndarray, float]:
        """The candidates with runs, as configs and as model points; the positions of those still
        waiting for a first run; the current settings' own estimated value (they have no place in
        the space)."""
        configs, points, waiting, current_value = [], [], [], 0.0
        for config, ev in (self._evidence() if evidence is None else evidence).items():
            if config == self._current:
                current_value = estimate(ev).value if ev.runs else 0.0
                continue
            x = self.position(config)
            if ev.runs == 0:
                waiting.append(x)
                continue
            configs.append(config)
            points.append(
                surrogate.Point(
                    x, ev.runs, ev.failed_runs, tuple(math.log(max(d, 1e-6)) for d in ev.durations)
                )
            )
        return configs, points, np.array(waiting).reshape(-1, len(self.dims)), current_value

    def position(self, config: Config) -> np.ndarray:
        labels = dict(config.changes)
        return np.array([s.to_unit(labels[s.knob.name]) for s in self.scales])
