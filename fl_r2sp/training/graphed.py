"""Repeated training steps replayed from one captured CUDA graph.

A stacked SGD step of small models is launch-bound: hundreds of tiny
kernels, each launched by Python. A CUDA graph records the launches of one
step once and replays them with one call. Replaying needs fixed addresses:
the step reads its per-step inputs from static tensors (copied in before
every replay) and updates its state (weights, momenta, loss sums) in place,
so a replay computes exactly what the eager step would, kernel for kernel.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import torch

#: Steps run eagerly before the capture: the first creates the momentum
#: buffers (SGD's first step differs), the second runs the step as it will be
#: captured, so lazy work (cuBLAS handles, torch.compile) happens outside it.
WARMUP_STEPS = 2


class GraphCapture(Protocol):
    """Records one step for replay (:class:`CudaGraphs` on CUDA; a rerun in CPU tests)."""

    def warmup(self) -> contextlib.AbstractContextManager[None]:
        """Context for the eager warm-up steps."""
        ...

    def capture(self, step: Callable[[], None]) -> Callable[[], None]:
        """Record ``step`` (without running it) and return what replays it."""
        ...


class CudaGraphs:
    """Capture with ``torch.cuda.graph``, warm up on a side stream as its documentation asks."""

    def __init__(self) -> None:
        self._side = torch.cuda.Stream()  # type: ignore[no-untyped-call]

    @contextlib.contextmanager
    def warmup(self) -> Iterator[None]:
        self._side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self._side):
            yield
        torch.cuda.current_stream().wait_stream(self._side)

    def capture(self, step: Callable[[], None]) -> Callable[[], None]:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        return graph.replay


def replay_steps(
    step: Callable[..., None],
    inputs: Sequence[tuple[torch.Tensor, ...]],
    graphs: GraphCapture,
) -> None:
    """Run ``step(*inputs[s])`` for every s: :data:`WARMUP_STEPS` eagerly, the rest replayed.

    Parameters
    ----------
    step : callable
        One training step; it must update its state in place and take every
        per-step value from its tensor arguments.
    inputs : sequence of tuples of torch.Tensor
        The arguments of each step, in order.
    graphs : GraphCapture
        How to record and replay.
    """
    with graphs.warmup():
        for args in inputs[:WARMUP_STEPS]:
            step(*args)
    if len(inputs) <= WARMUP_STEPS:
        return
    static = tuple(a.clone() for a in inputs[WARMUP_STEPS])
    replay = graphs.capture(lambda: step(*static))
    for args in inputs[WARMUP_STEPS:]:
        for slot, value in zip(static, args, strict=True):
            slot.copy_(value)
        replay()
