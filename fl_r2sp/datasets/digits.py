"""scikit-learn's bundled 8x8 digits: the default data set, no files needed."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits

from .base import ArrayDataset
from .split import DIGITS_SPLIT_SEED, DIGITS_TEST_FRACTION, stratified_split

INPUT_SHAPE = (64,)
NUM_CLASSES = 10


def load_digits_split(split: str) -> ArrayDataset:
    """Train (80 %) or test (20 %) part of the 1,797 digits, stratified.

    Inputs are the 64 pixel intensities scaled from 0..16 to [0, 1]; the
    split is fixed (:data:`~fl_r2sp.datasets.split.DIGITS_SPLIT_SEED`).
    """
    bunch = load_digits()
    x = (bunch.data / 16.0).astype(np.float32)
    y = bunch.target.astype(np.int64)
    train, test = stratified_split(y, DIGITS_TEST_FRACTION, DIGITS_SPLIT_SEED)
    idx = train if split == "train" else test
    return ArrayDataset(
        x=x[idx], y=y[idx], num_classes=NUM_CLASSES, groups=None, name=f"digits/{split}"
    )
