"""End to end: the screening strategy reaches the same verdicts on the Ray runner as on the local one."""

from __future__ import annotations

import pytest

from heisenbisect.decide.screening import Screening, ScreeningSettings
from heisenbisect.engine import Engine
from heisenbisect.hypotheses.model import Execution, Factor, Spec
from heisenbisect.hypotheses.targets import CommandSection as Target
from heisenbisect.records import Config, Trial, Verdict
from heisenbisect.runners.factory import make_runner
from heisenbisect.store import Store
from heisenbisect.targets.command import CommandTarget

pytestmark = pytest.mark.ray

# a seeded flaky target: fails in ~30% of runs unless FIX=1; always with WORSE=1; NOISE changes nothing
FLAKY = (
    'if [ "$FIX" = 1 ]; then exit 0; fi; if [ "$WORSE" = 1 ]; then exit 1; fi; '
    '[ $((HEISENBISECT_SEED % 10)) -ge 3 ]'
)
SPEC = Spec(
    study="flaky",
    target=Target(command=["sh", "-c", FLAKY]),
    factors=[
        Factor(name="FIX", levels=[0, 1]),
        Factor(name="WORSE", levels=[0, 1]),
    ],
    execution=Execution(parallel=2, max_in_flight=2, cpus_per_trial=0.5),
)
SETTINGS = ScreeningSettings(confidence=0.95, zero_rate=0.3, max_trials=60, first_look=10)


def screen(runner_name: str, folder) -> dict[Config, Verdict]:
    strategy = Screening(SPEC.baseline, SPEC.arms(), SETTINGS)

    def make_trial(config: Config, index: int, seed: int) -> Trial:
        return Trial(f"{config.key}-{index:04d}", config, index, seed, env=SPEC.environment(config))

    target = CommandTarget(argv=tuple(SPEC.target.argv), timeout_s=30)
    with Store(folder / f"{runner_name}.sqlite") as store:
        with make_runner(SPEC, target, folder / runner_name, runner_override=runner_name) as runner:
            Engine(strategy, runner, store, SPEC.study, make_trial).run()
    result = strategy.result()
    return {arm.config: arm.verdict for arm in result.arms}


def test_screening_verdicts_on_ray_match_the_local_runner(ray_session, tmp_path):
    local = screen("local", tmp_path)
    on_ray = screen("ray", tmp_path)
    assert on_ray == local
    assert local == {
        Config(changes=(("FIX", "1"),)): Verdict.ELIMINATES,
        Config(changes=(("WORSE", "1"),)): Verdict.INCREASES,
    }
