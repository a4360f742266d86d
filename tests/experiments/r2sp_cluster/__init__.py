"""Tests of experiments/r2sp_cluster/."""
