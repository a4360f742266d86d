"""A user's own model, named by import path (``model = "my_pkg.nets:build"``).

The contract (docs/user-code.md repeats it with an example):

* ``model`` is ``"package.module:factory"`` (resolved by :func:`fl_r2sp.importpath.resolve`).
* ``factory(num_classes=..., seed=...)`` returns a freshly initialised ``torch.nn.Module``
  that maps a float32 batch ``(B, *input_shape)`` of the run's dataset to logits
  ``(B, num_classes)`` (trained with cross-entropy). ``num_classes`` is the dataset's;
  ``seed`` is the run's for the initial global model and 0 for the clients' templates.
* Construction is deterministic: the factory runs with torch's global generator seeded
  by ``seed`` (saved and restored around the call), so a factory that relies on torch's
  default initialisers needs nothing more; one that draws from another generator must
  seed it from ``seed``. Two calls with equal arguments must give equal weights.
* Every floating-point tensor of the ``state_dict`` is float32 (the runner exchanges one
  flat float32 vector); integer buffers (BatchNorm's ``num_batches_tracked``) are fine.

:func:`check_user_model` verifies all of this before a run starts (two builds, one
forward pass on two examples of the dataset). A violation raises
:class:`~fl_r2sp.importpath.ImportPathError`, ``"model '<path>': <what was wrong>"``.

Virtual time needs seconds per local iteration, which the network profiles list only for
the built-in models; a user's model is timed by :func:`macs_per_sample` and the profiles'
affine fit (:func:`fl_r2sp.emulation.profiles.estimated_iteration_seconds`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from fl_r2sp.importpath import ImportPathError, resolve

__all__ = ["build_user_model", "check_user_model", "macs_per_sample"]

_WHAT = "model"


def _bad(spec: str, problem: str) -> ImportPathError:
    return ImportPathError(_WHAT, spec, problem)


def build_user_model(spec: str, num_classes: int, seed: int) -> nn.Module:
    """Build the user's model ``spec`` with torch's generator seeded by ``seed``.

    Raises
    ------
    ImportPathError
        A bad path, a factory that raises, or one that returns no ``nn.Module``.
    """
    factory = resolve(spec, _WHAT)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        try:
            model: Any = factory(num_classes=num_classes, seed=seed)
        except Exception as exc:  # the user's code may raise anything
            raise _bad(
                spec,
                f"factory(num_classes={num_classes}, seed={seed}) raised "
                f"{type(exc).__name__}: {exc}",
            ) from exc
    if not isinstance(model, nn.Module):
        raise _bad(spec, f"factory returned a {type(model).__name__}, not a torch.nn.Module")
    return model


def _check_state(spec: str, model: nn.Module, again: nn.Module) -> None:
    state, other = model.state_dict(), again.state_dict()
    if not state:
        raise _bad(spec, "the model has no parameters or buffers (empty state_dict)")
    for key, value in state.items():
        if value.is_floating_point() and value.dtype != torch.float32:
            raise _bad(spec, f"state '{key}' is {value.dtype}; floating tensors must be float32")
    if list(other) != list(state) or any(not torch.equal(state[k], other[k]) for k in state):
        raise _bad(
            spec,
            "two builds with the same seed differ: seed every generator the factory uses "
            "from its `seed` argument",
        )


def check_user_model(spec: str, num_classes: int, sample: np.ndarray) -> None:
    """Check the user's model against the contract (module docstring), naming ``spec``.

    Parameters
    ----------
    spec : str
        The import path.
    num_classes : int
        The dataset's number of classes.
    sample : np.ndarray
        A few float32 inputs of the dataset, ``(B, *input_shape)``.

    Raises
    ------
    ImportPathError
        The first violation found.
    """
    model = build_user_model(spec, num_classes, seed=0)
    _check_state(spec, model, build_user_model(spec, num_classes, seed=0))
    x = torch.from_numpy(np.ascontiguousarray(sample, dtype=np.float32))
    model.eval()
    try:
        with torch.no_grad():
            out = model(x)
    except Exception as exc:  # a shape mismatch surfaces as anything from inside forward
        raise _bad(
            spec,
            f"forward on a dataset batch of shape {tuple(x.shape)} raised "
            f"{type(exc).__name__}: {exc}",
        ) from exc
    want = (len(x), num_classes)
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != want:
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise _bad(spec, f"forward on {tuple(x.shape)} gave {got}; expected logits {want}")


def macs_per_sample(model: nn.Module, input_shape: tuple[int, ...]) -> float:
    """Multiply-accumulates of one forward pass on one example (torch's FLOP counter / 2).

    Counts what :class:`torch.utils.flop_counter.FlopCounterMode` counts (matrix
    products and convolutions); other operators count as free.
    """
    from torch.utils.flop_counter import FlopCounterMode

    x = torch.zeros((1, *input_shape), dtype=torch.float32)
    was_training = model.training
    model.eval()
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(x)
    model.train(was_training)
    return counter.get_total_flops() / 2.0
