"""Many clients' local rounds as one stacked model (``torch.func``).

``K`` jobs that start from different weights but share an architecture, tau
and batch size train together: their weights are stacked along a new leading
axis, and every SGD step is one ``vmap`` of ``grad_and_value`` over a
``functional_call`` of the model. Each client still sees only its own batch
and its own loss, so its trajectory is the one :func:`train_local` computes,
up to the floating-point summation order of the batched kernels (grouped
convolutions, batched matrix products). The optimizer step replays
``torch.optim.SGD``'s single-tensor update element for element.

:class:`StackKernels` picks how a step is computed, never what: convolutions
as vmap's grouped kernels or as unfold + batched matrix products
(:mod:`.unfold_conv`), the step compiled by ``torch.compile`` or not, and
replayed from a captured CUDA graph (:mod:`.graphed`) or launched kernel by
kernel.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

from .augment import apply_crop_flip
from .graphed import CudaGraphs, GraphCapture, replay_steps
from .unfold_conv import use_unfold_convs

#: Choices of :class:`StackKernels` (the run config's ``StackConv`` and ``StackCompile``,
#: which keep torch out of the config's imports; a test holds them equal).
CONV_KINDS = ("grouped", "bmm")
COMPILE_MODES = ("off", "default", "reduce-overhead", "max-autotune-no-cudagraphs")
Tensors = dict[str, torch.Tensor]


@dataclass(frozen=True)
class StackedResult:
    """Outcome of :func:`train_stacked`.

    Attributes
    ----------
    weights : np.ndarray
        (K, P) float32: row k is job k's flat weights after training, in
        state-dict order (as ``flatten(state_to_arrays(model))``).
    mean_losses : np.ndarray
        (K,) float64 mean training loss of each job over its iterations.
    """

    weights: np.ndarray
    mean_losses: np.ndarray


def _unstack(model: nn.Module, flat: torch.Tensor) -> tuple[Tensors, Tensors]:
    """Split (K, P) flat weights into stacked parameters and buffers by name."""
    state = model.state_dict()
    params = {name for name, _ in model.named_parameters()}
    if set(state) != params | {name for name, _ in model.named_buffers()}:
        raise ValueError("stacked training needs every buffer in the state dict")
    out_p: Tensors = {}
    out_b: Tensors = {}
    start = 0
    for name, ref in state.items():
        size = ref.numel()
        chunk = flat[:, start : start + size].reshape(flat.shape[0], *ref.shape)
        start += size
        if not ref.dtype.is_floating_point:
            chunk = torch.round(chunk)  # as ``unflatten``: integer buffers travel as floats
        (out_p if name in params else out_b)[name] = chunk.to(ref.dtype).contiguous()
    if start != flat.shape[1]:
        raise ValueError(f"flat weights have {flat.shape[1]} entries, the model {start}")
    return out_p, out_b


def _sgd_step(
    params: Tensors, grads: Tensors, bufs: Tensors, lr: float, momentum: float, wd: float
) -> None:
    """``torch.optim.SGD``'s single-tensor update (dampening 0, no Nesterov), stacked."""
    for name, p in params.items():
        g = grads[name]
        if wd != 0:
            g = g.add(p, alpha=wd)
        if momentum != 0:
            buf = bufs.get(name)
            if buf is None:
                buf = bufs[name] = torch.clone(g).detach()
            else:
                buf.mul_(momentum).add_(g, alpha=1.0)
            g = buf
        p.add_(g, alpha=-lr)


@dataclass(frozen=True)
class StackKernels:
    """How a stacked step is computed (the run-config keys ``executor-conv``,
    ``executor-compile``, ``executor-cuda-graphs``); results differ only by
    floating-point summation order.

    Attributes
    ----------
    conv : {"grouped", "bmm"}, default "grouped"
        Convolutions as vmap makes them (one grouped kernel per layer) or as
        unfold + one batched matrix product (:mod:`.unfold_conv`).
    compile : {"off", "default", "reduce-overhead", "max-autotune-no-cudagraphs"}, default "off"
        ``torch.compile`` mode of the gradient-and-update step (off = eager).
    cuda_graphs : bool, default False
        Replay steps from one captured CUDA graph (:mod:`.graphed`); CUDA only.
    """

    conv: str = "grouped"
    compile: str = "off"
    cuda_graphs: bool = False

    def __post_init__(self) -> None:
        if self.conv not in CONV_KINDS:
            raise ValueError(f"executor-conv={self.conv!r} is not one of {CONV_KINDS}")
        if self.compile not in COMPILE_MODES:
            raise ValueError(f"executor-compile={self.compile!r} is not one of {COMPILE_MODES}")
        if self.cuda_graphs and self.compile == "reduce-overhead":
            raise ValueError(
                "executor-compile='reduce-overhead' already replays CUDA graphs; "
                "use it without executor-cuda-graphs=true"
            )

    def check_device(self, device: torch.device) -> None:
        """Refuse CUDA graphs off CUDA (there is nothing to capture on a CPU)."""
        if self.cuda_graphs and device.type != "cuda":
            raise ValueError(
                f"executor-cuda-graphs=true needs compute-device='cuda' (got {device.type}); "
                "set it to false on a CPU"
            )


class StackedStep:
    """The gradient-and-SGD step of a stack of one architecture, built once, reused.

    Built once per process and reused for every stack, so that a compiled
    step is compiled once per shape rather than once per stack.

    Parameters
    ----------
    model : torch.nn.Module
        Architecture template (copied to the meta device; not changed).
    kernels : StackKernels (default: grouped, eager, no graphs)
        How to compute the step.
    graphs : GraphCapture or None (default: None = :class:`.graphed.CudaGraphs`)
        How ``kernels.cuda_graphs`` records and replays (a test double on CPU).
    """

    def __init__(
        self,
        model: nn.Module,
        kernels: StackKernels = StackKernels(),  # noqa: B008  # frozen, so one shared default is safe
        graphs: GraphCapture | None = None,
    ) -> None:
        self.kernels, self._graphs = kernels, graphs
        base = copy.deepcopy(model).to("meta")
        base.train()
        if kernels.conv == "bmm":
            use_unfold_convs(base)

        def loss_fn(p: Tensors, bf: Tensors, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
            return F.cross_entropy(functional_call(base, (p, bf), (xb,)), yb)

        self._grad = vmap(grad_and_value(loss_fn))
        self._fast: Callable[..., torch.Tensor] = self._update
        if kernels.compile != "off":
            self._fast = torch.compile(self._update, mode=kernels.compile)

    def _update(
        self, params: Tensors, bufs: Tensors, momenta: Tensors, xb: torch.Tensor,
        yb: torch.Tensor, hp: tuple[float, float, float],
    ) -> torch.Tensor:  # fmt: skip
        grads, losses = self._grad(params, bufs, xb, yb)
        _sgd_step(params, grads, momenta, *hp)
        out: torch.Tensor = losses  # vmap's outputs are typed Any
        return out

    def update(
        self, params: Tensors, bufs: Tensors, momenta: Tensors, xb: torch.Tensor,
        yb: torch.Tensor, hp: tuple[float, float, float],
    ) -> torch.Tensor:  # fmt: skip
        """One SGD step of every stacked model in place; returns the (K,) losses.

        ``hp`` = (lr, momentum, weight decay). The first momentum step creates
        the buffers (SGD's first step differs), always eagerly, so a compiled
        step sees one dictionary layout only.
        """
        first = hp[1] != 0 and not momenta
        return (self._update if first else self._fast)(params, bufs, momenta, xb, yb, hp)

    def run(self, step: Callable[..., None], inputs: Sequence[tuple[torch.Tensor, ...]]) -> None:
        """Call ``step(*args)`` for each args in ``inputs``, replayed if ``cuda_graphs``."""
        if not self.kernels.cuda_graphs:
            for args in inputs:
                step(*args)
            return
        replay_steps(step, inputs, self._graphs or CudaGraphs())


def train_stacked(
    model: nn.Module,
    starts: Sequence[np.ndarray],
    x: torch.Tensor,
    y: torch.Tensor,
    rows: torch.Tensor,
    crops: tuple[torch.Tensor, torch.Tensor] | None = None,
    lr: float = 0.01,
    momentum: float = 0.0,
    weight_decay: float = 0.0,
    step: StackedStep | None = None,
) -> StackedResult:
    """Train K jobs at once; job k starts from ``starts[k]`` and uses ``rows[k]``.

    Parameters
    ----------
    model : torch.nn.Module
        Architecture template (its own weights are not used; it is not changed).
    starts : Sequence[np.ndarray]
        K flat float32 start weights (state-dict order).
    x : torch.Tensor
        The whole training pool (N, ...) on the device to train on.
    y : torch.Tensor
        Its int64 labels (N,), same device; every label must be a valid logit index.
    rows : torch.Tensor
        (K, iterations, b) int64 rows of ``x`` per job and step, same device.
    crops : tuple of torch.Tensor or None, default None
        Augmentation: offsets (K, iterations, b, 2) and flips (K, iterations, b)
        (see :func:`~fl_r2sp.training.augment.apply_crop_flip`); None = none.
    lr, momentum, weight_decay : float, defaults 0.01, 0.0, 0.0
        SGD hyper-parameters, as ``train_local``'s.
    step : StackedStep or None, default None
        The step to use, built for ``model`` (None = grouped convolutions,
        eager, built here); pass one built once to reuse its compiled code.

    Returns
    -------
    StackedResult
        Final flat weights and mean losses per job.
    """
    k, iterations, b = rows.shape
    if len(starts) != k:
        raise ValueError(f"{len(starts)} start vectors for {k} row schedules")
    flat = torch.from_numpy(np.stack([np.asarray(s, np.float32) for s in starts])).to(x.device)
    params, buffers = _unstack(model, flat)
    stepper = step if step is not None else StackedStep(model)
    momenta: Tensors = {}
    total = torch.zeros(k, dtype=torch.float64, device=x.device)
    hp = (lr, momentum, weight_decay)

    def one_step(idx: torch.Tensor, *crop: torch.Tensor) -> None:
        xb = x[idx]
        if crop:
            flat_x = xb.reshape(k * b, *x.shape[1:])
            xb = apply_crop_flip(flat_x, crop[0].reshape(k * b, 2), crop[1].reshape(k * b))
            xb = xb.reshape(k, b, *x.shape[1:])
        losses = stepper.update(params, buffers, momenta, xb, y[idx], hp)
        total.add_(losses.detach().double())

    per_step = (rows,) if crops is None else (rows, *crops)
    inputs = [tuple(t[:, s] for t in per_step) for s in range(iterations)]
    stepper.run(one_step, inputs)
    state = {**params, **buffers}
    names = list(model.state_dict())
    out = torch.cat([state[n].reshape(k, -1).to(torch.float32) for n in names], dim=1)
    return StackedResult(weights=out.cpu().numpy(), mean_losses=(total / iterations).cpu().numpy())
