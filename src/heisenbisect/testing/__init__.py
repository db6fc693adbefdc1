"""Conformance kits, shipped so that the author of a new strategy, runner or target runs one function
over it and learns whether it keeps the contract the engine relies on.

`strategy_kit`: any `decide.strategy.Strategy`, driven as the engine drives it.
"""
