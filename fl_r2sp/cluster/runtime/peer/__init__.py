"""Shared steps of the families without a parameter server (every rank a worker): config helpers,
rank entry, local step, dynamic subgroups.
"""
