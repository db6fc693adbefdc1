"""Conformance kits, shipped so that the author of a new strategy, runner or target runs one function
over it and learns whether it keeps the contract the engine relies on.

`runner_contract`: any `runners.base.Runner`, on real processes (`run_runner_contract`).
`target_kit`: any `targets.base.TrialTarget`, against programs that misbehave as real ones do.
`strategy_kit`: any `decide.strategy.Strategy`, driven as the engine drives it.
"""
