"""Local SGD: learns, is bit-for-bit deterministic per seed, validates its inputs."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fl_r2sp.models import build_model, get_flat_weights, model_input_shape
from fl_r2sp.training import batch_schedule, set_torch_threads, train_local


@pytest.fixture(autouse=True)
def one_torch_thread():
    """One thread: 2-thread OpenMP collapses when other processes share the 2 cores."""
    previous = set_torch_threads(1)
    yield
    torch.set_num_threads(previous)


def learnable(name: str, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Class k = a fixed random pattern k plus noise: separable, so SGD must lower the loss."""
    rng = np.random.default_rng(seed)
    shape = model_input_shape(name)
    patterns = rng.normal(size=(10, *shape)).astype(np.float32)
    y = np.arange(n, dtype=np.int64) % 10
    x = patterns[y] + 0.5 * rng.normal(size=(n, *shape)).astype(np.float32)
    return x, y


def batch_loss(model: torch.nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    """Loss in training mode (batch statistics), the quantity SGD descends."""
    model.train()
    with torch.no_grad():
        return float(F.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y)))


@pytest.mark.parametrize(
    ("name", "lr"),
    [("mlp", 0.1), ("cnn", 0.05), ("cnn-fedavg", 0.02), ("resnet20", 0.05), ("lstm", 0.3)],
)
def test_twenty_iterations_lower_the_loss_on_a_fixed_batch(name: str, lr: float) -> None:
    x, y = learnable(name, 32)
    model = build_model(name)
    before = batch_loss(model, x, y)
    result = train_local(model, x, y, iterations=20, batch_size=32, lr=lr, momentum=0.9)
    after = batch_loss(model, x, y)
    assert result.iterations == 20 and result.num_examples == 32
    assert math.isfinite(result.mean_loss)
    assert after < 0.8 * before, (name, before, after)


def _train(seed: int, augment: bool = False) -> np.ndarray:
    x, y = learnable("cnn", 40)
    model = build_model("cnn", seed=0)
    train_local(
        model, x, y, iterations=4, batch_size=16, lr=0.05, momentum=0.9, seed=seed, augment=augment
    )
    return get_flat_weights(model)


@pytest.mark.parametrize("augment", [False, True])
def test_same_seed_same_bits_other_seed_other_weights(augment: bool) -> None:
    a, b, c = _train(1, augment), _train(1, augment), _train(2, augment)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_augmentation_changes_the_trajectory() -> None:
    assert not np.array_equal(_train(1, augment=False), _train(1, augment=True))


def test_client_with_fewer_samples_than_batch() -> None:
    x, y = learnable("mlp", 5)
    model = build_model("mlp")
    result = train_local(model, x, y, iterations=3, batch_size=32, lr=0.1)
    assert result.num_examples == 5 and result.iterations == 3


def test_read_only_arrays_train_without_warnings() -> None:
    x, y = learnable("mlp", 8)
    x.setflags(write=False)
    y.setflags(write=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train_local(build_model("mlp"), x, y, iterations=2, batch_size=4)


def test_schedule_reshuffles_per_epoch_and_keeps_batches_full() -> None:
    gen = torch.Generator().manual_seed(0)
    batches = list(batch_schedule(n=10, batch_size=4, iterations=5, generator=gen))
    assert [len(b) for b in batches] == [4] * 5
    # 10 // 4 = 2 batches per epoch: each epoch's pair is disjoint (one permutation).
    for first, second in ((0, 1), (2, 3)):
        assert not set(batches[first].tolist()) & set(batches[second].tolist())
    small = list(batch_schedule(3, 32, 2, torch.Generator().manual_seed(0)))
    assert [sorted(b.tolist()) for b in small] == [[0, 1, 2], [0, 1, 2]]


def test_mean_loss_of_one_step_is_the_initial_batch_loss() -> None:
    x, y = learnable("mlp", 8)
    model = build_model("mlp")
    before = batch_loss(model, x, y)
    result = train_local(model, x, y, iterations=1, batch_size=8)
    assert result.mean_loss == pytest.approx(before, rel=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"iterations": 0}, "iterations"),
        ({"batch_size": 0}, "batch_size"),
        ({"lr": 0.0}, "lr"),
        ({"momentum": 1.0}, "momentum"),
        ({"weight_decay": -1.0}, "weight_decay"),
    ],
)
def test_bad_hyperparameters(kwargs: dict, match: str) -> None:
    x, y = learnable("mlp", 4)
    args = {"iterations": 1} | kwargs
    with pytest.raises(ValueError, match=match):
        train_local(build_model("mlp"), x, y, **args)


def test_bad_data() -> None:
    model = build_model("mlp")
    x, y = learnable("mlp", 4)
    with pytest.raises(ValueError, match="no examples"):
        train_local(model, x[:0], y[:0], iterations=1)
    with pytest.raises(ValueError, match=r"y must have shape \(4,\)"):
        train_local(model, x, y[:3], iterations=1)
    with pytest.raises(ValueError, match="integer class ids"):
        train_local(model, x, y.astype(np.float32), iterations=1)
    with pytest.raises(ValueError, match="x must be float"):
        train_local(model, x.astype(np.int64), y, iterations=1)
    with pytest.raises(ValueError, match="NaN"):
        train_local(model, np.full_like(x, np.nan), y, iterations=1)
    with pytest.raises(ValueError, match="label 12 but the model has only 10 outputs"):
        train_local(model, x, np.array([0, 1, 12, 3]), iterations=1)
    with pytest.raises(ValueError, match="augment=True needs images"):
        train_local(model, x, y, iterations=1, augment=True)


def test_set_torch_threads_returns_previous() -> None:
    original = torch.get_num_threads()
    try:
        assert set_torch_threads(1) == original
        assert torch.get_num_threads() == 1
        with pytest.raises(ValueError, match=">= 1"):
            set_torch_threads(0)
    finally:
        torch.set_num_threads(original)
