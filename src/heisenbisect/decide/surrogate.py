"""A Gaussian-process model of the failure rate and the run time over the knobs, for `bisect amplify`.

Why: a candidate's rate rests on its own 2-24 runs, and near the optimum those cannot tell a
60% rate from an 80% one; TPE only ranks candidates by such noisy values and never
interpolates between them. A Gaussian process pools the runs of neighbouring settings: a
setting halfway between two that failed often is expected to fail often, before it runs.

The model, on knob values mapped to [0, 1] (log knobs on the log scale, numeric choices by
rank; other choices are categories, at distance 0 or 1):

- The rate through the complementary log-log link, f(x) = log(-log(1 - p(x))): the log of the
  expected number of failure events in a run, when a run fails at its first event. Sessions,
  steps and load multiply the events, so f is close to additive in log knobs, and a race's
  timing window is a bump in it. Binomial likelihood of each setting's failed runs, a
  constant mean and a Matern 5/2 kernel with one length scale per knob; the posterior by the
  Laplace approximation (Rasmussen and Williams 2006, algorithms 3.1 and 3.2).
- The run time: a Gaussian process on each setting's mean log duration, with that mean's own
  noise (sample variance / runs) plus a small nugget.
- Hyperparameters: the most probable under log-normal priors (length scales around the
  range of a knob, so an irrelevant knob's grows), by L-BFGS on the log marginal likelihood
  (Laplace's for the rate, the exact one for the time).
- What to run next: a Thompson draw, where one joint posterior draw of C(p) / d is largest
  (expected improvement, measured too, explored less: docs/amplify.md). The expected value that
  ranks settings is by Gauss-Hermite quadrature over the posteriors of f and the log duration.

Pure numpy and scipy; no I/O. ``tests/studies/test_surrogate.py`` checks the Laplace posterior against
numerical integration and the predictions against known surfaces.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg, optimize

from heisenbisect.decide.amplify import capacity

F_RANGE = (-15.0, 6.0)  # latent clip: p from 3e-7 to 1 - 1e-175, far beyond any rate measured
LENGTH_PRIOR = (math.log(0.5), 1.0)  # log length scale ~ N(mean, sd): a knob's range is 1
AMPLITUDE_PRIOR = (math.log(2.0), 0.75)  # log sd of f: rates across a space span a few e-folds
RATE_TREND_PRIOR = (math.log(2.0), 1.0)  # log sd of f's slope across a knob's range
TIME_AMPLITUDE_PRIOR = (math.log(0.5), 1.0)  # log sd of log duration
TIME_TREND_PRIOR = (math.log(0.5), 1.0)
LENGTH_BOUNDS = (math.log(0.03), math.log(30.0))
AMPLITUDE_BOUNDS = (math.log(0.05), math.log(20.0))
TREND_BOUNDS = (math.log(1e-3), math.log(20.0))
NUGGET = 1e-4  # log-duration variance added at every point: keeps the time model well posed
SWITCH = 0.2  # a draw near a leader switches each unordered choice with this probability
HERMITE = np.polynomial.hermite_e.hermegauss(24)  # nodes, weights for E over a standard normal
HERMITE_TIME = np.polynomial.hermite_e.hermegauss(5)


@dataclass(frozen=True)
class Dimension:
    """One knob in the unit cube: a number, or one of ``levels`` evenly spaced positions (the
    choices of a choice knob, ranked or, when ``categorical``, unordered)."""

    levels: int | None = None
    categorical: bool = False

    def snap(self, u: np.ndarray) -> np.ndarray:
        if self.levels is None:
            return u
        return np.round(u * (self.levels - 1)) / (self.levels - 1)


@dataclass(frozen=True)
class Point:
    """The runs of one setting: its position, runs, failed runs, and the logs of their durations."""

    x: np.ndarray
    runs: int
    failed: int
    log_durations: tuple[float, ...]


def cloglog(p: np.ndarray | float) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=float), 1e-9, 1 - 1e-9)
    return np.log(-np.log1p(-p))


def rate_of(f: np.ndarray | float) -> np.ndarray:
    """p = 1 - exp(-exp(f)), the inverse link."""
    return -np.expm1(-np.exp(np.clip(f, *F_RANGE)))


def distances(
    a: np.ndarray, b: np.ndarray, lengths: np.ndarray, dims: Sequence[Dimension]
) -> np.ndarray:
    """Scaled distances between the rows of ``a`` and ``b``."""
    total = np.zeros((len(a), len(b)))
    for k, dim in enumerate(dims):
        delta = a[:, k, None] - b[None, :, k]
        if dim.categorical:
            delta = (np.abs(delta) > 1e-9).astype(float)
        total += (delta / lengths[k]) ** 2
    return np.sqrt(total)


@dataclass(frozen=True)
class Kernel:
    """Matern 5/2 with one length scale per knob, plus a linear trend in the numeric knobs
    (sd ``trend`` of each slope across a knob's range): away from the data a stationary
    kernel reverts to the mean, while a rate that rises with load keeps rising to the bound."""

    dims: tuple[Dimension, ...]
    amplitude: float
    lengths: np.ndarray
    trend: float

    @classmethod
    def of(cls, dims: Sequence[Dimension], theta: np.ndarray) -> Kernel:
        """From log-scale hyperparameters: amplitude, one length per knob, trend."""
        return cls(
            tuple(dims),
            math.exp(theta[0]),
            np.exp(theta[1 : 1 + len(dims)]),
            math.exp(theta[1 + len(dims)]),
        )

    @property
    def theta(self) -> np.ndarray:
        return np.array([math.log(self.amplitude), *np.log(self.lengths), math.log(self.trend)])

    def _centred(self, x: np.ndarray) -> np.ndarray:
        return x[:, [j for j, d in enumerate(self.dims) if not d.categorical]] - 0.5

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        s = math.sqrt(5.0) * distances(a, b, self.lengths, self.dims)
        matern = self.amplitude**2 * (1.0 + s + s * s / 3.0) * np.exp(-s)
        return matern + self.trend**2 * self._centred(a) @ self._centred(b).T

    def diagonal(self, a: np.ndarray) -> np.ndarray:
        return self.amplitude**2 + self.trend**2 * np.sum(self._centred(a) ** 2, axis=1)


def _priors(theta: np.ndarray, amplitude: tuple[float, float], trend: tuple[float, float]) -> float:
    """Log density, up to a constant, of log-normal priors on amplitude, lengths and trend."""

    def log_normal(values: np.ndarray, mean: float, sd: float) -> float:
        return float(-0.5 * np.sum(((values - mean) / sd) ** 2))

    return (
        log_normal(theta[:1], *amplitude)
        + log_normal(theta[1:-1], *LENGTH_PRIOR)
        + log_normal(theta[-1:], *trend)
    )


def _bounds(k: int) -> list[tuple[float, float]]:
    return [AMPLITUDE_BOUNDS, *([LENGTH_BOUNDS] * k), TREND_BOUNDS]


def _tuned(loss, theta: np.ndarray, bounds: list[tuple[float, float]], tune: bool) -> np.ndarray:
    theta = np.clip(theta, [b[0] for b in bounds], [b[1] for b in bounds])
    if not tune:
        return theta
    return optimize.minimize(
        loss, theta, method="L-BFGS-B", bounds=bounds, options={"maxiter": 60}
    ).x


def _root(cov: np.ndarray) -> np.ndarray:
    """A matrix R with R R^T = cov: Cholesky with a little jitter, eigenvectors when that fails."""
    jitter = 1e-8 * float(np.mean(np.diag(cov)))
    try:
        return linalg.cholesky(cov + jitter * np.eye(len(cov)), lower=True, check_finite=False)
    except linalg.LinAlgError:
        w, vecs = np.linalg.eigh(cov)
        return vecs * np.sqrt(np.maximum(w, 0.0))


# -- the rate: binomial likelihood, Laplace posterior --------------------------------------


def _likelihood(
    f: np.ndarray, runs: np.ndarray, failed: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray]:
    """Log likelihood, its gradient and minus its (diagonal) Hessian in f, under the cloglog link."""
    f = np.clip(f, *F_RANGE)
    lam = np.exp(f)
    em1 = np.expm1(lam)
    passed = runs - failed
    log_p = np.log(-np.expm1(-lam))  # log(1 - e^-lam)
    ll = float(np.sum(failed * log_p - passed * lam))
    ratio = lam / em1  # lam / (e^lam - 1), -> 1 as lam -> 0
    grad = failed * ratio - passed * lam
    # d/df of lam / (e^lam - 1) is ratio * (1 - lam e^lam / (e^lam - 1))
    hess = failed * ratio * (1.0 - lam * (1.0 + 1.0 / em1)) - passed * lam
    return ll, grad, -hess


@dataclass
class Posterior:
    """A Gaussian process conditioned on its points, ready to predict elsewhere. One form for
    both models: the mean is ``mean + k* . weights`` and the variance ``k** - v.v`` with
    ``v`` solving ``chol v = scale * k*`` (R&W algorithm 3.2 for the Laplace posterior, where ``weights``
    is the likelihood's gradient at the mode and ``scale`` is W^1/2; algorithm 2.1 for regression,
    where ``weights`` is alpha and ``scale`` is 1)."""

    x: np.ndarray
    kernel: Kernel
    mean: float
    weights: np.ndarray
    chol: np.ndarray
    scale: np.ndarray

    def _solved(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k_star = self.kernel(x, self.x)
        return k_star, linalg.solve_triangular(
            self.chol, self.scale[:, None] * k_star.T, lower=True, check_finite=False
        )

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and variance at the rows of ``x``."""
        k_star, v = self._solved(x)
        return self.mean + k_star @ self.weights, np.maximum(
            self.kernel.diagonal(x) - np.sum(v * v, axis=0), 1e-12
        )

    def joint(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and covariance at the rows of ``x``."""
        k_star, v = self._solved(x)
        return self.mean + k_star @ self.weights, self.kernel(x, x) - v.T @ v


@dataclass
class RateModel(Posterior):
    """The Laplace posterior of f: ``chol`` of B = I + W^1/2 K W^1/2, ``scale`` W^1/2."""

    f_hat: np.ndarray = field(default_factory=lambda: np.zeros(0))
    log_marginal: float = 0.0

    @property
    def theta(self) -> np.ndarray:
        return np.append(self.kernel.theta, self.mean)


def laplace(
    x: np.ndarray,
    runs: np.ndarray,
    failed: np.ndarray,
    kernel: Kernel,
    mean: float,
    f_start: np.ndarray | None = None,
) -> RateModel:
    """Newton's method for the posterior mode (R&W algorithm 3.1), with its log marginal likelihood.

    ``a`` is kept with ``f`` (f = mean + K a), so a halved step's objective is its own and the
    marginal's quadratic term is a . (f - mean), with no second solve."""
    n = len(x)
    gram = kernel(x, x) + 1e-8 * np.eye(n)
    if f_start is None:
        f, a = np.full(n, mean), np.zeros(n)
    else:
        a = linalg.cho_solve(
            linalg.cho_factor(gram, lower=True, check_finite=False),
            f_start - mean,
            check_finite=False,
        )
        f = mean + gram @ a
    objective = -math.inf
    for _ in range(50):
        _, grad, w = _likelihood(f, runs, failed)
        sqrt_w = np.sqrt(np.maximum(w, 1e-12))
        chol = linalg.cholesky(
            np.eye(n) + sqrt_w[:, None] * gram * sqrt_w[None, :], lower=True, check_finite=False
        )
        b = w * (f - mean) + grad
        a_new = b - sqrt_w * linalg.cho_solve((chol, True), sqrt_w * (gram @ b), check_finite=False)
        f_new = mean + gram @ a_new
        new_objective = -0.5 * float(a_new @ (f_new - mean)) + _likelihood(f_new, runs, failed)[0]
        if new_objective < objective:  # a full step overshot: halve it
            a_new, f_new = 0.5 * (a + a_new), 0.5 * (f + f_new)
            new_objective = (
                -0.5 * float(a_new @ (f_new - mean)) + _likelihood(f_new, runs, failed)[0]
            )
        converged = abs(new_objective - objective) < 1e-8
        a, f, objective = a_new, f_new, new_objective
        if converged:
            break
    ll, grad, w = _likelihood(f, runs, failed)
    sqrt_w = np.sqrt(np.maximum(w, 1e-12))
    chol = linalg.cholesky(
        np.eye(n) + sqrt_w[:, None] * gram * sqrt_w[None, :], lower=True, check_finite=False
    )
    log_marginal = -0.5 * float(a @ (f - mean)) + ll - float(np.sum(np.log(np.diag(chol))))
    return RateModel(
        np.asarray(x), kernel, mean, grad, chol, sqrt_w, f_hat=f, log_marginal=log_marginal
    )


def fit_rate(
    points: Sequence[Point],
    dims: Sequence[Dimension],
    start: np.ndarray | None = None,
    tune: bool = True,
) -> RateModel:
    """The rate model with its most probable hyperparameters (the kernel's, then the mean),
    searched from ``start``; with ``tune`` false, at ``start`` itself."""
    x = np.array([p.x for p in points], dtype=float)
    runs = np.array([p.runs for p in points], dtype=float)
    failed = np.array([p.failed for p in points], dtype=float)
    pooled = float(cloglog((failed.sum() + 0.5) / (runs.sum() + 1.0)))
    k = len(dims)
    if start is None:
        start = np.array(
            [AMPLITUDE_PRIOR[0], *([LENGTH_PRIOR[0]] * k), RATE_TREND_PRIOR[0], pooled]
        )
    cache: dict[bytes, RateModel] = {}
    last: list[
        np.ndarray
    ] = []  # the latest mode: nearby hyperparameters start Newton's method there

    def model(theta: np.ndarray) -> RateModel:
        key = theta.tobytes()
        if key not in cache:
            cache[key] = laplace(
                x, runs, failed, Kernel.of(dims, theta[:-1]), theta[-1], last[-1] if last else None
            )
            last[:] = [cache[key].f_hat]
        return cache[key]

    def loss(theta: np.ndarray) -> float:
        prior = (
            _priors(theta[:-1], AMPLITUDE_PRIOR, RATE_TREND_PRIOR)
            - 0.5 * ((theta[-1] - pooled) / 3.0) ** 2
        )
        return -(model(theta).log_marginal + prior)

    return model(_tuned(loss, start, [*_bounds(k), F_RANGE], tune))


# -- the run time: Gaussian regression of mean log durations -------------------------------


def fit_time(
    points: Sequence[Point],
    dims: Sequence[Dimension],
    start: np.ndarray | None = None,
    tune: bool = True,
) -> Posterior:
    """The time model (mean log duration) with its most probable kernel hyperparameters."""
    x = np.array([p.x for p in points], dtype=float)
    y = np.array([np.mean(p.log_durations) for p in points])
    within = [np.var(p.log_durations, ddof=1) for p in points if len(p.log_durations) > 1]
    pooled_var = float(np.mean(within)) if within else 0.01
    noise = np.array([pooled_var / len(p.log_durations) for p in points]) + NUGGET
    mean = float(np.mean(y))
    k = len(dims)

    def parts(theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        chol = linalg.cholesky(
            Kernel.of(dims, theta)(x, x) + np.diag(noise), lower=True, check_finite=False
        )
        alpha = linalg.cho_solve((chol, True), y - mean, check_finite=False)
        return -0.5 * float((y - mean) @ alpha) - float(np.sum(np.log(np.diag(chol)))), alpha, chol

    def loss(theta: np.ndarray) -> float:
        return -(parts(theta)[0] + _priors(theta, TIME_AMPLITUDE_PRIOR, TIME_TREND_PRIOR))

    if start is None:
        start = np.array(
            [math.log(max(float(np.std(y)), 0.05)), *([LENGTH_PRIOR[0]] * k), TIME_TREND_PRIOR[0]]
        )
    theta = _tuned(loss, start, _bounds(k), tune)
    _, alpha, chol = parts(theta)
    return Posterior(x, Kernel.of(dims, theta), mean, alpha, chol, np.ones(len(x)))


# -- the value and what to run next ---------------------------------------------------------


@dataclass
class Surrogate:
    """Both models; the posterior of bits per second C(p) / d anywhere in the space."""

    rate: RateModel
    time: Posterior

    @property
    def hyperparameters(self) -> tuple[np.ndarray, np.ndarray]:
        """Both models' (log-scale) hyperparameters, to start the next fit from."""
        return self.rate.theta, self.time.kernel.theta

    def value_samples(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """C(p) / d at quadrature nodes over both posteriors: values (rows: points) and weights."""
        mu_f, var_f = self.rate.predict(x)
        mu_t, var_t = self.time.predict(x)
        nodes_f, weights_f = HERMITE
        nodes_t, weights_t = HERMITE_TIME
        bits = capacity(
            rate_of(mu_f[:, None] + np.sqrt(var_f)[:, None] * nodes_f[None, :])
        )  # points x nodes
        per_s = np.exp(-(mu_t[:, None] + np.sqrt(var_t)[:, None] * nodes_t[None, :]))
        values = (bits[:, :, None] * per_s[:, None, :]).reshape(len(x), -1)
        weights = (weights_f[:, None] * weights_t[None, :]).ravel()
        return values, weights / weights.sum()

    def expected_value(self, x: np.ndarray) -> np.ndarray:
        values, weights = self.value_samples(x)
        return values @ weights

    def thompson(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One draw of C(p) / d at the rows of ``x`` from the joint posterior of both models."""
        draws = []
        for model in (self.rate, self.time):
            mu, cov = model.joint(x)
            draws.append(mu + _root(cov) @ rng.standard_normal(len(x)))
        return capacity(rate_of(draws[0])) * np.exp(-draws[1])


def fit(
    points: Sequence[Point],
    dims: Sequence[Dimension],
    start: tuple[np.ndarray, np.ndarray] | None = None,
    tune: bool = True,
) -> Surrogate:
    """Both models from the settings run so far (at least two, each with a run); the
    hyperparameters searched from ``start`` (a `Surrogate.hyperparameters`), or kept as they
    are when ``tune`` is false (the caller tunes them as the points grow, not at every one)."""
    rate_start, time_start = start if start is not None else (None, None)
    return Surrogate(
        fit_rate(points, dims, rate_start, tune), fit_time(points, dims, time_start, tune)
    )


def next_point(
    surrogate: Surrogate,
    points: Sequence[Point],
    dims: Sequence[Dimension],
    rng: np.random.Generator,
    avoid: np.ndarray | None = None,
    close: float = 0.03,
    uniform: int = 300,
    near: int = 130,
    scales: tuple[float, ...] = (0.02, 0.05, 0.15),
) -> np.ndarray:
    """A Thompson draw: the position where one joint draw from the posterior of C(p) / d is
    largest, among ``uniform`` positions drawn over the space, ``near`` per scale drawn around
    the five best settings so far (the optimum of a race is narrow: uniform draws rarely land in
    it), and the settings already run (measuring one again is a choice too). Positions within
    ``close`` of a row of ``avoid`` (proposed, not yet run) are left out, so parallel proposals
    spread instead of piling onto one point."""
    k = len(dims)
    x = np.array([p.x for p in points], dtype=float)
    leaders = x[np.argsort(-surrogate.expected_value(x))[:5]]
    drawn = [rng.random((uniform, k))]
    for scale in scales:
        moved = np.clip(
            leaders[rng.integers(len(leaders), size=near)] + rng.normal(0.0, scale, (near, k)),
            0.0,
            1.0,
        )
        for j, dim in enumerate(dims):
            if dim.categorical:  # a category moves by a switch, not a step
                switch = rng.random(near) < SWITCH
                moved[switch, j] = rng.random(int(switch.sum()))
        drawn.append(moved)
    candidates = np.vstack(drawn)
    for j, dim in enumerate(dims):
        candidates[:, j] = dim.snap(candidates[:, j])
    candidates = np.vstack([candidates, x])
    draw = surrogate.thompson(candidates, rng)
    if avoid is not None and len(avoid):
        waiting = (
            np.min(np.abs(candidates[:, None, :] - avoid[None, :, :]).max(axis=2), axis=1) < close
        )
        draw = np.where(waiting, -np.inf, draw)
    return candidates[int(np.argmax(draw))]
