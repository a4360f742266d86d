"""Tests of experiments/flr2sp/."""
