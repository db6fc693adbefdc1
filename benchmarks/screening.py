"""Calibration and cost of screening, by simulation of many story-like studies.

    python benchmarks/screening.py --studies 200

Story-like study: 15% of baseline runs fail (a failed run corrupts a correlated share of
its 60 sessions); four factors that each eliminate the failure (jointly necessary
conditions); one partial suppressor 15% -> 7%; one decoy. Also a null study (every arm a
decoy) for the family-wise error of the claims. Prints, per scenario: share of studies
with every verdict right, share of non-eliminating arms called ``eliminates``, the
coverage of the printed 95% intervals, and mean trials against the smallest fixed-sample
design with the same error rates: it tests at the level that matches the sequential
design's measured family-wise error, at the smallest n that gets every verdict right as
often.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
from dataclasses import dataclass, replace

import numpy as np

from heisenbisect.decide import stats
from heisenbisect.decide.screening import Screening, ScreeningSettings
from heisenbisect.records import Config, Outcome, TrialStatus, Verdict
from heisenbisect.simulation import FailureModel
from heisenbisect.testing.strategy_kit import drive_in_order

SETTINGS = ScreeningSettings(confidence=0.95, zero_rate=0.03, min_reduction=0.5, max_trials=960, first_look=15)


@dataclass(frozen=True)
class Scenario:
    name: str
    baseline: FailureModel
    arms: tuple[tuple[str, FailureModel, Verdict], ...]


def story() -> Scenario:
    base = FailureModel(0.15)
    zero = FailureModel(0.0)
    return Scenario(
        "story",
        base,
        (
            ("overlap=0", zero, Verdict.ELIMINATES),
            ("precision=fp8", zero, Verdict.ELIMINATES),
            ("graph=0", zero, Verdict.ELIMINATES),
            ("batch=1", zero, Verdict.ELIMINATES),
            ("cache=1", FailureModel(0.07), Verdict.REDUCES),
            ("topk_v2=0", base, Verdict.NO_EFFECT),
        ),
    )


def null() -> Scenario:
    base = FailureModel(0.15)
    return Scenario("null", base, tuple((f"decoy{i}=1", base, Verdict.NO_EFFECT) for i in range(6)))


def simulate_sequential(scenario: Scenario, seed: int) -> tuple[list[Verdict], int, list[bool]]:
    rng = random.Random(seed)
    configs = [Config()] + [Config(((name.split("=")[0], name.split("=")[1]),)) for name, _, _ in scenario.arms]
    models = {configs[0]: scenario.baseline} | {c: m for c, (_, m, _) in zip(configs[1:], scenario.arms)}
    screening = Screening(configs[0], configs[1:], SETTINGS)
    trials = len(
        drive_in_order(screening, lambda c, n: Outcome(f"t{n}", c.key, n, TrialStatus.OK, models[c].draw(rng), 60))
    )
    result = screening.result()
    covered = [_covers(arm.run_interval, models[arm.config].run_rate) for arm in (result.baseline, *result.arms)]
    return [arm.verdict for arm in result.arms], trials, covered


def _covers(interval: tuple[float, float], truth: float) -> bool:
    return interval[0] <= truth <= interval[1]


def fixed_verdicts(scenario: Scenario, n: int, seed: int, alpha: float) -> list[Verdict]:
    """The same tests at a single look with n runs per config, at test level ``alpha``."""
    rng = random.Random(seed)
    s = replace(SETTINGS, confidence=1 - alpha)
    base = np.array(scenario.baseline.draw_runs(rng, n)) / 60
    arms = [np.array(model.draw_runs(rng, n)) / 60 for _, model, _ in scenario.arms]
    pvalues = stats.holm_adjust([stats.difference_pvalue(a, base, seed=i) for i, a in enumerate(arms)])
    verdicts = []
    for arm, p in zip(arms, pvalues):
        failed = int((arm > 0).sum())
        if p <= s.alpha and arm.mean() > base.mean():
            verdicts.append(Verdict.INCREASES)
        elif p <= s.alpha and failed > 0:
            verdicts.append(Verdict.REDUCES)
        elif p <= s.alpha and stats.clopper_pearson_upper(0, n, s.confidence) < s.zero_rate:
            verdicts.append(Verdict.ELIMINATES)
        elif p <= s.alpha:
            verdicts.append(Verdict.REDUCES)
        elif (
            min(failed, int((base > 0).sum())) >= 5
            and stats.not_reduced_pvalue(arm, base, 1 - s.min_reduction) <= s.alpha
            and stats.not_reduced_pvalue(base, arm, 1 - s.min_reduction) <= s.alpha
        ):
            verdicts.append(Verdict.NO_EFFECT)
        else:
            verdicts.append(Verdict.INCONCLUSIVE)
    return verdicts


def _all_right(scenario: Scenario, verdicts: list[Verdict]) -> bool:
    return all(v is truth for v, (_, _, truth) in zip(verdicts, scenario.arms))


def _fixed_share(args: tuple[Scenario, int, int, int, float]) -> float:
    scenario, n, studies, seed, alpha = args
    return float(np.mean([_all_right(scenario, fixed_verdicts(scenario, n, seed + i, alpha)) for i in range(studies)]))


def smallest_fixed_n(scenario: Scenario, share: float, alpha: float, studies: int, pool) -> int:
    """Smallest n (to 5%) whose fixed design, testing at ``alpha``, gets every verdict right
    at least as often as the sequential design."""
    low, high = SETTINGS.first_look, 4 * SETTINGS.max_trials
    while high > low * 1.05:
        mid = int((low + high) / 2)
        chunks = [(scenario, mid, studies // 4, 10_000 * k + mid, alpha) for k in range(4)]
        got = float(np.mean(pool.map(_fixed_share, chunks)))
        low, high = (low, mid) if got >= share else (mid, high)
    return high


def _run_sequential(args: tuple[Scenario, int]) -> tuple[list[Verdict], int, list[bool]]:
    return simulate_sequential(*args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    print(f"settings: {SETTINGS}")
    header = (
        f"{'scenario':<8} {'studies':>7} {'all right':>9} {'false elim':>10} {'any false claim':>15} "
        f"{'CI cover':>8} {'seq trials':>10} {'fixed alpha':>11} {'fixed n':>7} {'fixed trials':>12} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    with multiprocessing.Pool(args.workers) as pool:
        for scenario in (story(), null()):
            runs = pool.map(_run_sequential, [(scenario, args.seed * 100_000 + i) for i in range(args.studies)])
            right = np.mean([_all_right(scenario, v) for v, _, _ in runs])
            wrong_elim = [
                v is Verdict.ELIMINATES
                for verdicts, _, _ in runs
                for v, (_, _, truth) in zip(verdicts, scenario.arms)
                if truth is not Verdict.ELIMINATES
            ]
            false_claim = np.mean(
                [
                    any(
                        v in (Verdict.ELIMINATES, Verdict.REDUCES, Verdict.INCREASES) and v is not truth
                        and not (truth is Verdict.ELIMINATES and v is Verdict.REDUCES)
                        for v, (_, _, truth) in zip(verdicts, scenario.arms)
                    )
                    for verdicts, _, _ in runs
                ]
            )
            cover = np.mean([c for _, _, cov in runs for c in cov])
            trials = np.mean([t for _, t, _ in runs])
            # the same error rates: the fixed design tests at the level whose family-wise error
            # matches the sequential design's measured one (Holm at alpha has FWER ~ alpha)
            alpha_fixed = min(SETTINGS.alpha, max(false_claim, 0.5 / args.studies))
            n_fixed = smallest_fixed_n(scenario, min(right, 1 - alpha_fixed), alpha_fixed, args.studies, pool)
            fixed_trials = n_fixed * (1 + len(scenario.arms))
            print(
                f"{scenario.name:<8} {args.studies:>7} {right:>9.1%} {np.mean(wrong_elim):>10.2%} "
                f"{false_claim:>15.1%} {cover:>8.1%} {trials:>10.0f} {alpha_fixed:>11.4f} {n_fixed:>7} "
                f"{fixed_trials:>12} "
                f"{trials / fixed_trials:>6.2f}"
            )


if __name__ == "__main__":
    main()
