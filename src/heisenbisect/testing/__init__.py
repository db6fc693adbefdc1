"""Conformance kits for runners, targets and strategies."""
