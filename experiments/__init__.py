"""Experiment scripts regenerating the FL-R²SP paper's FL tables and figures.

One module per item (``python -m experiments.<item> --scale ...``), shared
helpers in :mod:`experiments.common`, per-scale settings in
:mod:`experiments.conf`, the paper's printed numbers in
:mod:`experiments.paper`, and the report builder :mod:`experiments.report`.
"""
