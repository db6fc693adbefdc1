"""The Gaussian-process surrogate of `bisect amplify` (decide/surrogate.py) and its Optuna sampler.

References are brute force: the likelihood's derivatives against finite differences, the
Laplace mode against a direct maximization of the exact log posterior, the Laplace posterior
mean against numerical integration over a grid, the fitted models against known surfaces, and
the sampler's unit cube against the knobs' own values.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from heisenbisect.decide import surrogate
from heisenbisect.decide.amplify import Search, SearchSettings, TimedRuns, capacity, estimate
from heisenbisect.decide.surrogate import Dimension, Kernel, Point, _likelihood, laplace
from heisenbisect.hypotheses.model import Amplify, Knob
from heisenbisect.records import Config, Outcome, TrialStatus

optuna = pytest.importorskip("optuna")

from heisenbisect.studies.amplify.sampler import KnobScale, SurrogateSampler  # noqa: E402
from heisenbisect.studies.amplify.search import CURRENT, OptunaSearch, new_optuna_study  # noqa: E402
from heisenbisect.testing.strategy_kit import drive_in_order  # noqa: E402

ONE = (Dimension(),)


def kernel(dims=ONE, amplitude=1.5, length=0.4, trend=1.0) -> Kernel:
    return Kernel(tuple(dims), amplitude, np.full(len(dims), length), trend)


def test_likelihood_derivatives_match_finite_differences():
    f = np.array([-6.0, -2.0, -0.3, 0.8, 2.5])
    runs = np.array([5.0, 8.0, 3.0, 10.0, 4.0])
    failed = np.array([0.0, 1.0, 2.0, 9.0, 4.0])
    _, grad, minus_hess = _likelihood(f, runs, failed)
    h = 1e-5
    for i in range(len(f)):
        step = np.zeros_like(f)
        step[i] = h
        up, grad_up, _ = _likelihood(f + step, runs, failed)
        down, grad_down, _ = _likelihood(f - step, runs, failed)
        assert grad[i] == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-7)
        assert -minus_hess[i] == pytest.approx((grad_up[i] - grad_down[i]) / (2 * h), rel=1e-4, abs=1e-6)
    assert np.all(minus_hess > 0)  # the cloglog binomial likelihood is log-concave: Newton is safe


def test_the_likelihood_is_the_binomial_one_under_the_cloglog_link():
    f = np.array([-1.2])
    p = float(surrogate.rate_of(f)[0])
    assert p == pytest.approx(1 - math.exp(-math.exp(-1.2)))
    ll, _, _ = _likelihood(f, np.array([7.0]), np.array([3.0]))
    assert ll == pytest.approx(stats.binom.logpmf(3, 7, p) - math.log(math.comb(7, 3)))


def exact_log_posterior(f, x, runs, failed, k, mean):
    gram = k(x, x) + 1e-8 * np.eye(len(x))
    ll, _, _ = _likelihood(f, runs, failed)
    return ll + stats.multivariate_normal(np.full(len(x), mean), gram).logpdf(f)


def test_the_laplace_mode_is_the_maximum_of_the_exact_posterior():
    x = np.array([[0.1], [0.35], [0.6], [0.9]])
    runs, failed = np.array([4.0, 6.0, 2.0, 9.0]), np.array([0.0, 2.0, 2.0, 8.0])
    k, mean = kernel(), -1.0
    model = laplace(x, runs, failed, k, mean)
    found = optimize.minimize(lambda f: -exact_log_posterior(f, x, runs, failed, k, mean), np.full(4, mean),
                              method="BFGS", options={"gtol": 1e-9})
    assert model.f_hat == pytest.approx(found.x, abs=1e-4)


def test_the_laplace_posterior_matches_numerical_integration_with_many_runs():
    """Two settings with many runs each: the posterior is nearly Gaussian, so the Laplace mean
    and variance at a third position agree with a brute-force grid over (f1, f2), the mean to
    a tenth of the posterior's sd (Laplace's mean is the mode's: a skewed posterior moves it)."""
    x = np.array([[0.2], [0.7]])
    runs, failed = np.array([60.0, 80.0]), np.array([9.0, 50.0])
    k, mean = kernel(trend=0.5), -0.5
    model = laplace(x, runs, failed, k, mean)
    grid = np.linspace(-4.0, 2.5, 701)
    f1, f2 = np.meshgrid(grid, grid, indexing="ij")
    flat = np.stack([f1.ravel(), f2.ravel()], axis=1)
    gram = k(x, x)
    log_post = stats.multivariate_normal(np.full(2, mean), gram).logpdf(flat)
    for i in range(2):
        p = surrogate.rate_of(flat[:, i])
        log_post = log_post + failed[i] * np.log(p) + (runs[i] - failed[i]) * np.log1p(-p)
    weight = np.exp(log_post - log_post.max())
    weight /= weight.sum()
    # f at x* given (f1, f2) is Gaussian under the prior: its mean is linear in (f1, f2)
    star = np.array([[0.45]])
    coef = np.linalg.solve(gram, k(x, star)).ravel()
    cond_mean = mean + (flat - mean) @ coef
    cond_var = float(k(star, star)[0, 0] - (k(star, x) @ np.linalg.solve(gram, k(x, star)))[0, 0])
    exact_mean = float(weight @ cond_mean)
    exact_var = float(weight @ (cond_mean - exact_mean) ** 2) + cond_var
    mu, var = model.predict(star)
    assert abs(mu[0] - exact_mean) < 0.1 * math.sqrt(exact_var)
    assert var[0] == pytest.approx(exact_var, rel=0.1)


def test_the_fitted_rate_model_recovers_a_known_surface():
    """cloglog p = -3 + 4 x0 (x1 irrelevant): 30 settings of 6 runs each, predicted elsewhere."""
    rng = np.random.default_rng(1)
    dims = (Dimension(), Dimension())
    true_f = lambda x: -3.0 + 4.0 * x[:, 0]  # noqa: E731
    x = rng.random((30, 2))
    failed = rng.binomial(6, surrogate.rate_of(true_f(x)))
    points = [Point(xi, 6, int(fi), (0.0,)) for xi, fi in zip(x, failed)]
    model = surrogate.fit_rate(points, dims)
    test = rng.random((200, 2))
    mu, var = model.predict(test)
    error = surrogate.rate_of(mu) - surrogate.rate_of(true_f(test))
    assert float(np.sqrt(np.mean(error**2))) < 0.08
    z = (mu - true_f(test)) / np.sqrt(var)
    assert 0.8 < float(np.mean(np.abs(z) < 1.96))  # intervals not far too narrow
    assert model.kernel.lengths[1] > model.kernel.lengths[0]  # the irrelevant knob varies slower


def test_the_time_model_recovers_a_known_duration_and_a_categorical_cost():
    rng = np.random.default_rng(2)
    dims = (Dimension(), Dimension(levels=2, categorical=True))
    x = np.column_stack([rng.random(40), rng.integers(0, 2, 40).astype(float)])
    log_d = np.log(0.5 + 2.0 * x[:, 0]) + 0.3 * x[:, 1]
    points = [Point(xi, 4, 0, tuple(ld + rng.normal(0, 0.1, 4))) for xi, ld in zip(x, log_d)]
    model = surrogate.fit_time(points, dims)
    test = np.array([[0.25, 0.0], [0.25, 1.0], [0.8, 0.0], [0.8, 1.0]])
    mu, _ = model.predict(test)
    assert mu == pytest.approx(np.log(0.5 + 2.0 * test[:, 0]) + 0.3 * test[:, 1], abs=0.06)


def test_the_expected_value_is_the_quadrature_of_bits_per_second():
    rng = np.random.default_rng(3)
    points = [Point(np.array([u]), 5, int(rng.integers(0, 6)), tuple(rng.normal(0, 0.1, 5))) for u in rng.random(8)]
    model = surrogate.fit(points, ONE)
    star = np.array([[0.33]])
    mu_f, var_f = model.rate.predict(star)
    mu_t, var_t = model.time.predict(star)
    draws_f = rng.normal(mu_f[0], math.sqrt(var_f[0]), 400000)
    draws_t = rng.normal(mu_t[0], math.sqrt(var_t[0]), 400000)
    monte_carlo = float(np.mean(capacity(surrogate.rate_of(draws_f)) * np.exp(-draws_t)))
    assert float(model.expected_value(star)[0]) == pytest.approx(monte_carlo, rel=0.01)


def test_next_point_is_reproducible_snapped_and_avoids_waiting_settings():
    rng = np.random.default_rng(4)
    dims = (Dimension(), Dimension(levels=4))
    points = [Point(np.array([u, rng.integers(0, 4) / 3]), 3, int(rng.integers(0, 4)), (0.0, 0.1, 0.0))
              for u in rng.random(10)]
    model = surrogate.fit(points, dims)
    first = surrogate.next_point(model, points, dims, np.random.default_rng(7))
    assert np.array_equal(first, surrogate.next_point(model, points, dims, np.random.default_rng(7)))
    assert first[1] * 3 == pytest.approx(round(first[1] * 3))  # one of the four levels
    again = surrogate.next_point(model, points, dims, np.random.default_rng(7), avoid=first[None, :])
    assert np.max(np.abs(again - first)) >= 0.03


@pytest.mark.parametrize(
    "knob, labels",
    [
        (Knob(name="n", type="int", low=10, high=600, log=True), ["10", "77", "600"]),
        (Knob(name="w", type="float", low=0.05, high=20), ["0.05", "3.3", "20"]),
        (Knob(name="b", type="choice", choices=[8, 1, 32, 4]), ["1", "4", "8", "32"]),
        (Knob(name="m", type="choice", choices=["live", "replay"]), ["live", "replay"]),
    ],
)
def test_knob_scales_map_values_to_the_unit_cube_and_back(knob, labels):
    scale = KnobScale(knob)
    units = [scale.to_unit(label) for label in labels]
    assert units[0] == 0.0 and units[-1] == 1.0 and units == sorted(units)
    for label, u in zip(labels, units):
        assert knob.label(scale.from_unit(u)) == label
    assert scale.dimension.categorical == (knob.name == "m")


def simulated(config: Config, rng: np.random.Generator) -> Outcome:
    """Fails more often with more load; a run takes longer with more load."""
    load = float(dict(config.changes).get("load", 1))
    failed = rng.random() < 1 - math.exp(-0.02 * load)
    return Outcome("sim", config.key, 0, TrialStatus.OK, int(failed), 1, duration_s=1.0 + 0.01 * load)


def test_a_real_optuna_study_with_the_surrogate_sampler_finds_the_heavy_load():
    amplify = Amplify(knobs=[Knob(name="load", type="int", low=1, high=100),
                             Knob(name="salt", type="float", low=0, high=1)], max_runs=80)
    assert (amplify.sampler, amplify.first_runs, amplify.max_candidate_runs) == ("gp", 1, 8)
    study = new_optuna_study("sim", amplify, None)
    assert isinstance(study.sampler, SurrogateSampler)
    search = Search(CURRENT, SearchSettings(max_runs=80, first_runs=1, max_candidate_runs=8))
    strategy = OptunaSearch(study, amplify, search)
    rng = np.random.default_rng(5)
    drive_in_order(strategy, lambda config, _: simulated(config, rng))
    assert search.used == 80
    told = [t for t in study.get_trials() if t.state == optuna.trial.TrialState.COMPLETE]
    assert told and all({"runs", "failed_runs", "seconds"} <= set(t.user_attrs) for t in told)
    best = dict(search.best().changes)
    assert int(best["load"]) >= 50  # C(p) / d grows with load all the way to 100 here


def test_the_ranker_ranks_by_the_model_and_the_current_settings_by_their_own_runs():
    amplify = Amplify(knobs=[Knob(name="load", type="int", low=1, high=100)], max_runs=50)
    sampler = SurrogateSampler(amplify)
    evidence = {CURRENT: TimedRuns([True, False, False, False], [1.0] * 4, 4)}
    for load, failed in [(10, [False, False]), (50, [True, False]), (90, [True, True])]:
        evidence[Config(changes=(("load", str(load)),))] = TimedRuns(failed, [1.0, 1.0], 2)
    sampler.attach(lambda: evidence, CURRENT)
    values = sampler.expected_values(evidence)
    loads = [Config(changes=(("load", str(n)),)) for n in (10, 50, 90)]
    assert values[loads[0]] < values[loads[1]] < values[loads[2]]
    assert values[CURRENT] == pytest.approx(estimate(evidence[CURRENT]).value)
    assert sampler.expected_values(evidence) == values  # the same runs rank the same: replay is exact
