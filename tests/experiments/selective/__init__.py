"""Tests of experiments/selective/."""
