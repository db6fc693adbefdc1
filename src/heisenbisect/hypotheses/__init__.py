"""The YAML spec: load, validate with file:line:col errors, the frozen model."""

from heisenbisect.hypotheses.loader import load_spec, parse_spec
from heisenbisect.hypotheses.model import Factor, Spec

__all__ = ["Factor", "Spec", "load_spec", "parse_spec"]
