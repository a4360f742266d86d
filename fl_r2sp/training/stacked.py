"""Many clients' local rounds as one stacked model (``torch.func``).

``K`` jobs that start from different weights but share an architecture, tau
and batch size train together: their weights are stacked along a new leading
axis, and every SGD step is one ``vmap`` of ``grad_and_value`` over a
``functional_call`` of the model. Each client still sees only its own batch
and its own loss, so its trajectory is the one :func:`train_local` computes,
up to the floating-point summation order of the batched kernels (grouped
convolutions, batched matrix products). The optimizer step replays
``torch.optim.SGD``'s single-tensor update element for element.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

from .augment import apply_crop_flip

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
    base = copy.deepcopy(model).to("meta")
    base.train()

    def loss_fn(p: Tensors, bf: Tensors, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(functional_call(base, (p, bf), (xb,)), yb)

    step = vmap(grad_and_value(loss_fn))
    momenta: Tensors = {}
    total = torch.zeros(k, dtype=torch.float64, device=x.device)
    for s in range(iterations):
        idx = rows[:, s]
        xb = x[idx]
        if crops is not None:
            flat_x = xb.reshape(k * b, *x.shape[1:])
            xb = apply_crop_flip(
                flat_x, crops[0][:, s].reshape(k * b, 2), crops[1][:, s].reshape(k * b)
            ).reshape(xb.shape)
        grads, losses = step(params, buffers, xb, y[idx])
        _sgd_step(params, grads, momenta, lr, momentum, weight_decay)
        total += losses.detach().double()
    state = {**params, **buffers}
    names = list(model.state_dict())
    out = torch.cat([state[n].reshape(k, -1).to(torch.float32) for n in names], dim=1)
    return StackedResult(weights=out.cpu().numpy(), mean_losses=(total / iterations).cpu().numpy())
