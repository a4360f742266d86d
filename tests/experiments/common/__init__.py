"""Tests of experiments/common/."""
