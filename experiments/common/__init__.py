"""Plumbing shared by every study: the run cache and CLI, per-scale settings, execution flags,
provenance, verdict rules and Markdown cells."""
