"""Stacked training (torch.func) replays train_local: same batches, same SGD, float tolerance.

Every kernel choice (:class:`StackKernels`) trains the same stacked models:
unfold + bmm convolutions within the float tolerance, CUDA-graph replay (with
a CPU stand-in for the capture) bit for bit, ``torch.compile`` within it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import get_args

import numpy as np
import pytest
import torch
from torch import nn

from fl_r2sp.fl.config import StackCompile, StackConv
from fl_r2sp.models import build_model
from fl_r2sp.models.weights import get_flat_weights, set_flat_weights
from fl_r2sp.training import set_torch_threads, train_local
from fl_r2sp.training.augment import apply_crop_flip
from fl_r2sp.training.graphed import WARMUP_STEPS
from fl_r2sp.training.schedule import draw_schedule
from fl_r2sp.training.stacked import (
    COMPILE_MODES,
    CONV_KINDS,
    StackedStep,
    StackKernels,
    train_stacked,
)
from fl_r2sp.training.unfold_conv import UnfoldConv2d, use_unfold_convs

#: Measured on this project's CPUs: LeNet, 8 iterations with momentum and
#: augmentation, stacked vs one at a time: max |difference| 3e-8 (the weights'
#: scale is ~0.2), with grouped and with unfold + bmm convolutions alike (and
#: 3e-8 between the two); ResNet20, one step: 1.2e-7 with either. The bound
#: allows for other kernels' summation orders (GPUs, compiled kernels).
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


class Rerun:
    """CPU stand-in for CUDA graphs: a "replay" reruns the captured step on its static inputs,
    so everything but the capture itself (static inputs, in-place state) is exercised."""

    def __init__(self) -> None:
        self.captures = 0

    def warmup(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def capture(self, step: Callable[[], None]) -> Callable[[], None]:
        self.captures += 1
        return step


@dataclass(frozen=True)
class Case:
    """Clients trained one at a time and stacked: model, pooled data, partitions, tau."""

    name: str
    x: np.ndarray
    y: np.ndarray
    parts: list[np.ndarray]
    iterations: int
    augment: bool

    def starts(self) -> list[np.ndarray]:
        return [get_flat_weights(build_model(self.name, seed=k)) for k in range(len(self.parts))]


def serial_and_stacked(
    case: Case, step: StackedStep | None = None
) -> tuple[list[np.ndarray], np.ndarray]:
    set_torch_threads(1)
    serial = []
    for k, (part, start) in enumerate(zip(case.parts, case.starts(), strict=True)):
        model = build_model(case.name)
        set_flat_weights(model, start)
        x, y, augment = case.x[part], case.y[part], case.augment
        train_local(model, x, y, case.iterations, 8, seed=100 + k, augment=augment, **HP)
        serial.append(get_flat_weights(model))
    return serial, stacked(case, step)


def stacked(case: Case, step: StackedStep | None = None) -> np.ndarray:
    parts, it, augment = case.parts, case.iterations, case.augment
    scheds = [draw_schedule(len(p), 8, it, 100 + k, augment) for k, p in enumerate(parts)]
    rows = torch.stack([torch.from_numpy(p)[s.indices] for p, s in zip(parts, scheds, strict=True)])
    crops = None
    if augment:
        crops = (torch.stack([s.offsets for s in scheds]), torch.stack([s.flips for s in scheds]))
    x, y = torch.from_numpy(case.x), torch.from_numpy(case.y)
    res = train_stacked(build_model(case.name), case.starts(), x, y, rows, crops, **HP, step=step)
    return res.weights


def cnn_case() -> Case:
    """LeNet, three clients of 20, 24 and 16 images, 8 steps with augmentation."""
    x, y = images(60, 1)
    return Case("cnn", x, y, [np.arange(0, 20), np.arange(20, 44), np.arange(44, 60)], 8, True)


def test_stacked_cnn_matches_one_at_a_time_within_tolerance() -> None:
    serial, stacked = serial_and_stacked(cnn_case())
    for k in range(3):
        assert not np.array_equal(serial[k], get_flat_weights(build_model("cnn", seed=k)))
        assert np.abs(stacked[k] - serial[k]).max() <= CNN_TOL


@pytest.mark.parametrize("conv", CONV_KINDS)
def test_stacked_batchnorm_buffers_follow_the_serial_run(conv: str) -> None:
    # ResNet20 has BatchNorm: running statistics and the batch counter must be
    # updated per stacked model as in train_local. One step: trajectories of
    # BN nets on noise diverge fast, so later steps would test chaos, not code.
    x, y = images(16, 2)
    case = Case("resnet20", x, y, [np.arange(0, 8), np.arange(8, 16)], 1, False)
    step = StackedStep(build_model("resnet20"), StackKernels(conv=conv))
    serial, stacked = serial_and_stacked(case, step)
    counter = list(build_model("resnet20").state_dict()).index("bn1.num_batches_tracked")
    offset = sum(t.numel() for t in list(build_model("resnet20").state_dict().values())[:counter])
    for k in range(2):
        assert stacked[k][offset] == serial[k][offset] == 1.0
        assert np.abs(stacked[k] - serial[k]).max() <= CNN_TOL


@pytest.fixture(scope="module")
def cnn_serial_and_grouped() -> tuple[list[np.ndarray], np.ndarray]:
    return serial_and_stacked(cnn_case())


def other_kernels(kernels: StackKernels, graphs: Rerun | None = None) -> np.ndarray:
    return stacked(cnn_case(), StackedStep(build_model("cnn"), kernels, graphs))


def test_unfold_bmm_convolutions_train_the_same_models_within_tolerance(
    cnn_serial_and_grouped,
) -> None:
    serial, grouped = cnn_serial_and_grouped
    bmm = other_kernels(StackKernels(conv="bmm"))
    assert not np.array_equal(bmm, grouped)  # other kernels really ran
    for k in range(3):
        assert np.abs(bmm[k] - serial[k]).max() <= CNN_TOL
        assert np.abs(bmm[k] - grouped[k]).max() <= CNN_TOL


@pytest.mark.parametrize("conv", ["grouped", "bmm"])
def test_graph_replay_computes_exactly_the_eager_steps(conv: str) -> None:
    # The capture is a CPU stand-in; what is tested is that replays on static
    # inputs, state updated in place, give the eager steps' bits.
    graphs = Rerun()
    eager = other_kernels(StackKernels(conv=conv))
    replayed = other_kernels(StackKernels(conv=conv, cuda_graphs=True), graphs)
    assert graphs.captures == 1 and WARMUP_STEPS < 8
    assert np.array_equal(replayed, eager)


@pytest.mark.slow  # inductor compiles C++ for the CPU: about a minute on 2 cores
def test_compiled_step_trains_the_same_models_within_tolerance(cnn_serial_and_grouped) -> None:
    serial, grouped = cnn_serial_and_grouped
    compiled = other_kernels(StackKernels(compile="default"))
    for k in range(3):
        assert np.abs(compiled[k] - serial[k]).max() <= CNN_TOL
        assert np.abs(compiled[k] - grouped[k]).max() <= CNN_TOL


def test_unfold_convolution_computes_conv2d_and_replaces_plain_convolutions_only() -> None:
    conv = nn.Conv2d(3, 4, 3, stride=2, padding=(1, 2), dilation=2)
    model = nn.Sequential(conv, nn.Conv2d(4, 4, 3, groups=2))
    x = torch.randn(2, 3, 11, 9, generator=torch.Generator().manual_seed(0))
    ref, state = model(x), model.state_dict()
    assert use_unfold_convs(model) == 1
    assert type(model[0]) is UnfoldConv2d and type(model[1]) is nn.Conv2d
    model.load_state_dict(state)  # same names: the new module takes the old weights
    assert torch.allclose(model(x), ref, atol=1e-6)


def test_kernel_choices_are_the_run_configs_and_bad_ones_are_refused() -> None:
    assert get_args(StackConv) == CONV_KINDS and get_args(StackCompile) == COMPILE_MODES
    with pytest.raises(ValueError, match="executor-conv='fft'"):
        StackKernels(conv="fft")
    with pytest.raises(ValueError, match="already replays CUDA graphs"):
        StackKernels(compile="reduce-overhead", cuda_graphs=True)
    with pytest.raises(ValueError, match="executor-cuda-graphs=true needs compute-device='cuda'"):
        StackKernels(cuda_graphs=True).check_device(torch.device("cpu"))
