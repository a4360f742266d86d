"""Cluster-mode data: generated sets, CIFAR-10 through the project's loader, batch streams."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from fl_r2sp.cluster.data import BatchStream, TensorSplit, batches, make_dataset
from fl_r2sp.cluster.models import BOS, batch_loss, build_cluster_model
from fl_r2sp.datasets import synthetic


@pytest.mark.parametrize(("model", "shape"), [("mlp", (64,)), ("resnet32", (3, 32, 32))])
def test_synthetic_matches_model_input_and_is_seeded(model: str, shape: tuple[int, ...]) -> None:
    a = make_dataset(model, "synthetic", seed=3)
    b = make_dataset(model, "synthetic", seed=3)
    c = make_dataset(model, "synthetic", seed=4)
    assert tuple(a.train.x.shape) == (2048, *shape) and a.train.x.dtype == torch.float32
    assert a.test is not None and len(a.test) == 512 and a.num_classes == 10
    assert torch.equal(a.train.x, b.train.x) and torch.equal(a.train.y, b.train.y)
    assert not torch.equal(a.train.x, c.train.x)
    assert set(a.train.y.tolist()) == set(range(10))


@pytest.mark.parametrize("task", ["copy", "reverse"])
def test_sequence_tasks(task: str) -> None:
    data = make_dataset("transformer", task, seed=0, include_test=False, max_train=50)
    assert data.test is None and len(data.train) == 50 and data.num_classes == 10
    src, dec, tgt = data.train.x[:, 0], data.train.x[:, 1], data.train.y
    assert tuple(data.train.x.shape) == (50, 2, 12)
    assert bool((src != BOS).all())
    assert torch.equal(tgt, src if task == "copy" else src.flip(1))
    assert bool((dec[:, 0] == BOS).all()) and torch.equal(dec[:, 1:], tgt[:, :-1])


def test_cifar10_reads_local_files_through_the_project_loader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FL_R2SP_CACHE", str(tmp_path / "cache"))
    synthetic.write_cifar_npz(tmp_path, "train", n=12)
    synthetic.write_cifar_npz(tmp_path, "test", n=5)
    data = make_dataset("alexnet", "cifar10", str(tmp_path))
    assert tuple(data.train.x.shape) == (12, 3, 32, 32) and data.test is not None
    assert len(data.test) == 5 and data.train.y.tolist() == [i % 10 for i in range(12)]
    assert make_dataset("alexnet", "cifar10", str(tmp_path), max_train=4).train.x.shape[0] == 4


def test_max_train_keeps_the_class_shares_of_a_class_sorted_set() -> None:
    from fl_r2sp.cluster.data import subset

    # Sorted like the packed CIFAR-10 files: 10 of class 0, then 10 of class 1, 20 of class 2.
    y = torch.tensor([0] * 10 + [1] * 10 + [2] * 20)
    train = TensorSplit(torch.arange(40.0).reshape(40, 1), y)
    got = subset(train, 8, seed=0)
    assert torch.bincount(got.y).tolist() == [2, 2, 4]  # 8 x (1/4, 1/4, 1/2)
    assert torch.equal(y[got.x[:, 0].long()], got.y)  # inputs stay paired with their labels
    assert torch.equal(subset(train, 8, seed=0).x, got.x)  # seeded
    assert subset(train, 40, seed=0) is train


def test_missing_cifar10_is_a_clear_error_without_download(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="never downloads") as info:
        make_dataset("resnet32", "cifar10", str(tmp_path / "empty"))
    assert "train" in str(info.value) and "download=True" not in str(info.value)


def test_bad_dataset_arguments() -> None:
    with pytest.raises(ValueError, match="unknown dataset 'mnist'"):
        make_dataset("mlp", "mnist")
    with pytest.raises(ValueError, match="does not take dataset 'copy'"):
        make_dataset("mlp", "copy")
    with pytest.raises(ValueError, match="max_train"):
        make_dataset("mlp", "synthetic", max_train=-1)


def _split(n: int) -> TensorSplit:
    return TensorSplit(torch.arange(n, dtype=torch.float32)[:, None], torch.arange(n))


def test_batch_stream_covers_each_epoch_and_follows_size_changes() -> None:
    stream = batches(_split(10), 4, torch.Generator().manual_seed(0))
    sizes = [4, 4, 2, 3, 7]  # 20 indices = two whole epochs
    drawn = []
    for i, b in enumerate(sizes):
        if i >= 2:
            stream.batch_size = b
        x, y = next(stream)
        assert len(y) == b and torch.equal(x[:, 0].long(), y)
        drawn += y.tolist()
    assert sorted(drawn[:10]) == list(range(10)) and sorted(drawn[10:]) == list(range(10))


def test_batch_stream_is_a_function_of_seed_and_sizes() -> None:
    a = BatchStream(_split(7), 3, torch.Generator().manual_seed(5))
    b = BatchStream(_split(7), 3, torch.Generator().manual_seed(5))
    c = BatchStream(_split(7), 3, torch.Generator().manual_seed(6))
    seq_a = [a.take(k)[1].tolist() for k in (3, 5, 1, 9)]
    assert seq_a == [b.take(k)[1].tolist() for k in (3, 5, 1, 9)]
    assert seq_a != [c.take(k)[1].tolist() for k in (3, 5, 1, 9)]
    assert len(seq_a[3]) == 9  # larger than the split: spans two permutations


def test_batch_stream_rejects_bad_sizes() -> None:
    stream = batches(_split(4), 2, torch.Generator())
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="batch size"):
            stream.take(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch size"):
        stream.batch_size = 0
    with pytest.raises(ValueError, match="empty"):
        batches(_split(0), 1, torch.Generator())


def test_synthetic_set_is_learnable_by_the_mlp() -> None:
    data = make_dataset("mlp", "synthetic", seed=0)
    model = build_cluster_model("mlp", seed=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.3)
    stream = batches(data.train, 64, torch.Generator().manual_seed(0))
    for _ in range(40):
        x, y = next(stream)
        opt.zero_grad()
        batch_loss(model, x, y).backward()
        opt.step()
    assert data.test is not None
    with torch.no_grad():
        acc = (model(data.test.x).argmax(1) == data.test.y).float().mean().item()
    assert acc > 0.7  # chance is 0.1; 0.86 measured
