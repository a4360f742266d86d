"""federated_data, ArrayDataset, path resolution and the histogram plot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fl_r2sp.datasets import (
    ArrayDataset,
    cache_dir,
    federated_data,
    paths,
    resolve_data_dir,
    shared_data_dir,
)
from fl_r2sp.datasets.plot import plot_label_histograms
from tests.paths import REPO


def test_federated_digits_clients_and_memo() -> None:
    fd = federated_data("digits", 8, "paper", seed=1)
    assert federated_data("digits", 8, "paper", seed=1) is fd  # memoized per process
    assert fd.num_partitions == 8 and len(fd.test) == 359
    assert len(fd.partition.outlier_ids) == 2  # round_half_up(0.25 * 8)
    client = fd.client(3)
    np.testing.assert_array_equal(client.y, fd.train.y[fd.partition.indices[3]])
    assert len(client) == len(fd.train) // 8 and client.x.shape[1:] == (64,)
    assert fd.label_histograms().sum() == 8 * (len(fd.train) // 8)
    with pytest.raises(ValueError, match="out of range 0..7"):
        fd.client(8)


def test_federated_max_train_samples_is_stratified() -> None:
    fd = federated_data("digits", 4, "iid", max_train_samples=400, seed=0)
    assert len(fd.train) == 400
    counts = fd.train.label_counts()
    full = federated_data("digits", 4, "iid", seed=0).train.label_counts()
    # Each class keeps its share of the 1,438 rows to within one sample.
    assert counts.sum() == 400 and np.all(np.abs(counts - 400 * full / full.sum()) < 1)
    other = federated_data("digits", 4, "iid", max_train_samples=400, seed=0)
    assert other is fd


def test_federated_bad_input_raises_before_training() -> None:
    with pytest.raises(ValueError, match="unknown dataset"):
        federated_data("nope", 4)
    with pytest.raises(ValueError, match="alpha must be a positive"):
        federated_data("digits", 4, alpha=0.0)
    with pytest.raises(ValueError, match="clients but only"):
        federated_data("digits", 5000)
    with pytest.raises(ValueError, match="max_train_samples"):
        federated_data("digits", 4, max_train_samples=-1)


def test_array_dataset_subset_and_checks() -> None:
    ds = ArrayDataset(
        x=np.arange(10, dtype=np.float32).reshape(5, 2),
        y=np.arange(5),
        num_classes=5,
        groups=np.array(list("abcde")),
        name="toy",
    )
    sub = ds.subset(np.array([4, 0]))
    assert len(sub) == 2 and sub.x.tolist() == [[8, 9], [0, 1]] and list(sub.groups) == ["e", "a"]
    assert ds.input_shape == (2,)
    with pytest.raises(ValueError, match="x has 5 rows but y has 4"):
        ArrayDataset(x=ds.x, y=ds.y[:4], num_classes=5, groups=None, name="bad")


def test_resolve_data_dir_precedence(tmp_path: Path, monkeypatch) -> None:
    repo = tmp_path / "work" / "repo"  # a checkout with neither data/ nor ../shared/data yet
    monkeypatch.setattr(paths, "checkout_root", lambda: repo)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("FL_R2SP_DATA", raising=False)
    assert resolve_data_dir(None) == tmp_path / "xdg" / "fl_r2sp"
    (tmp_path / "work" / "shared" / "data").mkdir(parents=True)  # last-resort fallback
    assert resolve_data_dir(None) == tmp_path / "work" / "shared" / "data"
    (repo / "data").mkdir(parents=True)  # the project's own folder wins over the fallback
    assert resolve_data_dir("") == repo / "data"
    monkeypatch.setenv("FL_R2SP_DATA", str(tmp_path / "env"))
    assert resolve_data_dir("") == tmp_path / "env"  # empty run-config value falls through
    assert resolve_data_dir(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv("FL_R2SP_CACHE", raising=False)
    assert cache_dir() == tmp_path / "xdg" / "fl_r2sp" / "arrays"
    monkeypatch.setenv("FL_R2SP_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c" and (tmp_path / "c").is_dir()


def test_shared_data_dir_is_beside_the_repo() -> None:
    expected = REPO.parent / "shared" / "data"
    assert shared_data_dir() == (expected if expected.is_dir() else None)


def test_no_checkout_means_no_checkout_folders(monkeypatch) -> None:
    monkeypatch.setattr(paths, "checkout_root", lambda: None)  # an installed wheel
    assert paths.project_data_dir() is None and shared_data_dir() is None


def test_plot_label_histograms_writes_png(tmp_path: Path) -> None:
    fd = federated_data("digits", 8, "paper", seed=1)
    out = plot_label_histograms(
        fd.label_histograms(), fd.partition.outlier_ids, tmp_path / "sub" / "hist.png"
    )
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
