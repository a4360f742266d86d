"""Stacked training (torch.func) replays train_local: same batches, same SGD, float tolerance."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from fl_r2sp.models import build_model
from fl_r2sp.models.weights import get_flat_weights, set_flat_weights
from fl_r2sp.training import set_torch_threads, train_local
from fl_r2sp.training.augment import apply_crop_flip
from fl_r2sp.training.schedule import draw_schedule
from fl_r2sp.training.stacked import train_stacked

#: Measured on this project's CPUs: LeNet, 8 iterations with momentum and
#: augmentation, stacked vs one at a time: max |difference| 3e-8 (the weights'
#: scale is ~0.2). The bound allows for other kernels' summation orders.
CNN_TOL = 1e-6
HP = dict(lr=0.05, momentum=0.9, weight_decay=1e-3)


class Recorder(nn.Module):
    """Wraps a model and keeps a copy of every input batch it sees."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.seen: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.append(x.detach().clone())
        return self.inner(x)


def images(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 3, 32, 32), dtype=np.float32), rng.integers(0, 10, n)


def test_schedule_gives_exactly_the_batches_train_local_sees() -> None:
    x, y = images(40, 0)  # 40 // 16 = 2 batches per epoch: 5 iterations span 3 epochs
    rec = Recorder(build_model("cnn"))
    train_local(rec, x, y, iterations=5, batch_size=16, seed=7, augment=True)
    sched = draw_schedule(40, 16, 5, seed=7, augment=True)
    assert sched.offsets is not None and sched.flips is not None
    for s, seen in enumerate(rec.seen):
        batch = apply_crop_flip(
            torch.from_numpy(x)[sched.indices[s]], sched.offsets[s], sched.flips[s]
        )
        assert torch.equal(batch, seen)


def test_schedule_uses_all_samples_when_a_client_has_fewer_than_a_batch() -> None:
    sched = draw_schedule(5, 32, 3, seed=1)
    assert sched.batch == 5
    assert all(sorted(row.tolist()) == [0, 1, 2, 3, 4] for row in sched.indices)


def serial_and_stacked(
    name: str, x: np.ndarray, y: np.ndarray, parts: list[np.ndarray], iterations: int, augment: bool
) -> tuple[list[np.ndarray], np.ndarray]:
    set_torch_threads(1)
    starts = [get_flat_weights(build_model(name, seed=k)) for k in range(len(parts))]
    serial = []
    for k, part in enumerate(parts):
        model = build_model(name)
        set_flat_weights(model, starts[k])
        train_local(
            model, x[part], y[part], iterations, batch_size=8, seed=100 + k, augment=augment, **HP
        )
        serial.append(get_flat_weights(model))
    scheds = [draw_schedule(len(p), 8, iterations, 100 + k, augment) for k, p in enumerate(parts)]
    rows = torch.stack([torch.from_numpy(p)[s.indices] for p, s in zip(parts, scheds, strict=True)])
    crops = None
    if augment:
        crops = (torch.stack([s.offsets for s in scheds]), torch.stack([s.flips for s in scheds]))
    res = train_stacked(
        build_model(name), starts, torch.from_numpy(x), torch.from_numpy(y), rows, crops, **HP
    )
    return serial, res.weights


def test_stacked_cnn_matches_one_at_a_time_within_tolerance() -> None:
    x, y = images(60, 1)
    parts = [np.arange(0, 20), np.arange(20, 44), np.arange(44, 60)]
    serial, stacked = serial_and_stacked("cnn", x, y, parts, iterations=8, augment=True)
    for k in range(3):
        assert not np.array_equal(serial[k], get_flat_weights(build_model("cnn", seed=k)))
        assert np.abs(stacked[k] - serial[k]).max() <= CNN_TOL


def test_stacked_batchnorm_buffers_follow_the_serial_run() -> None:
    # ResNet20 has BatchNorm: running statistics and the batch counter must be
    # updated per stacked model as in train_local. One step: trajectories of
    # BN nets on noise diverge fast, so later steps would test chaos, not code.
    x, y = images(16, 2)
    parts = [np.arange(0, 8), np.arange(8, 16)]
    serial, stacked = serial_and_stacked("resnet20", x, y, parts, iterations=1, augment=False)
    counter = list(build_model("resnet20").state_dict()).index("bn1.num_batches_tracked")
    offset = sum(t.numel() for t in list(build_model("resnet20").state_dict().values())[:counter])
    for k in range(2):
        assert stacked[k][offset] == serial[k][offset] == 1.0
        assert np.abs(stacked[k] - serial[k]).max() <= CNN_TOL
