"""Loaders on the real data archives (skipped when no data folder holds them).

The archives are looked for in ``$FL_R2SP_DATA``, the project's ``data/`` and
the last-resort fallback folder (``fl_r2sp.datasets.paths``), in that order.

Kept fast: the small splits are decoded in full into a temporary cache
(CIFAR-10 test, the 4,074-clip audio set); the large ones are checked via
their metadata and a slice of decoded records. Set FL_R2SP_SLOW_TESTS=1 to
also decode the full CIFAR-10 train and KWS spectrogram sets.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from fl_r2sp.datasets import cifar, load_dataset, paths
from fl_r2sp.datasets.archive import decode_jpegs, open_archive
from fl_r2sp.datasets.kws import KEYWORDS
from fl_r2sp.datasets.split import KWS_SPLIT_SEED, KWS_TEST_SPEAKER_FRACTION, speaker_split


def _archive_dir() -> Path | None:
    """The first candidate data folder that holds the CIFAR-10 and Speech Commands archives."""
    env = os.environ.get("FL_R2SP_DATA", "")
    for folder in (Path(env) if env else None, paths.project_data_dir(), paths.shared_data_dir()):
        if (
            folder is not None
            and (folder / "cifar10" / "cifar10_train_jpeg.npz").is_file()
            and (folder / "speech_commands").is_dir()
        ):
            return folder
    return None


DATA = _archive_dir()
pytestmark = pytest.mark.skipif(DATA is None, reason="no folder holds the packed data archives")
SLOW = pytest.mark.skipif(
    os.environ.get("FL_R2SP_SLOW_TESTS") != "1", reason="set FL_R2SP_SLOW_TESTS=1 for full decodes"
)


@pytest.fixture(scope="module", autouse=True)
def _temp_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # Module-scoped so each split is decoded once for all tests here; the
    # context undoes the variable before other modules run.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FL_R2SP_CACHE", str(tmp_path_factory.mktemp("array-cache")))
        mp.delenv("FL_R2SP_DATA", raising=False)
        yield


def test_cifar_test_split_matches_published_means() -> None:
    ds = load_dataset("cifar10", "test", data_dir=DATA)
    assert ds.x.shape == (10_000, 3, 32, 32)
    assert (ds.label_counts() == 1000).all()
    # SOURCE.md: test-split channel means 0.4941 / 0.4851 / 0.4504.
    means = ds.x.mean(axis=(0, 2, 3)) * cifar.STD + cifar.MEAN
    np.testing.assert_allclose(means, [0.4941, 0.4851, 0.4504], atol=1e-3)


def test_cifar_train_metadata_and_slice() -> None:
    path = DATA / "cifar10" / "cifar10_train_jpeg.npz"
    f = open_archive(path, ("data", "offsets", "y"))
    assert len(f["y"]) == 50_000 and (np.bincount(f["y"]) == 5000).all()
    imgs = decode_jpegs(path, f["data"], f["offsets"], np.arange(64), (32, 32, 3), "RGB")
    assert imgs.shape == (64, 32, 32, 3) and 0.2 < imgs.mean() / 255 < 0.8


def test_kws_metadata_counts_and_speaker_split() -> None:
    path = DATA / "speech_commands" / "sc_v002_logmel98x40_jpeg.npz"
    f = open_archive(path, ("data", "offsets", "word", "speaker"))
    keep = np.flatnonzero(np.isin(f["word"], KEYWORDS))
    counts = Counter(str(w) for w in f["word"][keep])
    assert len(keep) == 38_546 and counts["yes"] == 4044 and counts["up"] == 3723
    spk = f["speaker"][keep]
    assert len(np.unique(spk)) == 2492
    test = speaker_split(spk, KWS_TEST_SPEAKER_FRACTION, KWS_SPLIT_SEED)
    assert len(np.unique(spk[test])) == 249  # round_half_up(0.1 * 2492)
    assert not set(spk[test]) & set(spk[~test])
    x = decode_jpegs(path, f["data"], f["offsets"], keep[:200], (98, 40), "L")
    assert x.shape == (200, 98, 40)


def test_kws_audio_full_load() -> None:
    train = load_dataset("kws-audio", "train", data_dir=DATA)
    test = load_dataset("kws-audio", "test", data_dir=DATA)
    assert len(train) + len(test) == 4074  # keyword clips of the official test set
    assert train.x.shape[1:] == (98, 40) and np.isfinite(train.x).all()
    assert len(set(train.groups) | set(test.groups)) == 239
    assert len(set(test.groups)) == 24 and not set(train.groups) & set(test.groups)
    assert abs(float(train.x.mean())) < 1e-3 and abs(float(train.x.std()) - 1) < 1e-2


@SLOW
def test_full_decodes_of_large_sets() -> None:
    train = load_dataset("cifar10", "train", data_dir=DATA)
    assert train.x.shape == (50_000, 3, 32, 32)
    kws_train = load_dataset("kws", "train", data_dir=DATA)
    kws_test = load_dataset("kws", "test", data_dir=DATA)
    assert len(kws_train) + len(kws_test) == 38_546
    assert not set(kws_train.groups) & set(kws_test.groups)
