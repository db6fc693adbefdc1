"""Render reports from the store: markdown, PNG plots, JSON."""
