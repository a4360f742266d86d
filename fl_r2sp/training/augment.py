"""Standard CIFAR augmentation (random crop with 4-pixel padding + horizontal flip), seeded.

The random draws (:func:`draw_crop_flip`) and their application
(:func:`apply_crop_flip`) are separate so that the batched executor can draw
each client's choices with that client's own CPU generator, exactly as
:func:`random_crop_flip` does, and apply them to many clients' images at once
on another device.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def draw_crop_flip(
    batch: int, generator: torch.Generator, pad: int = 4
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw the crop offsets and flips of one batch (offsets first, then flips).

    Parameters
    ----------
    batch : int
        Number of images.
    generator : torch.Generator
        Source of the draws.
    pad : int, default 4
        Padding on each side; offsets are uniform in [0, 2 * pad].

    Returns
    -------
    tuple of torch.Tensor
        ``offsets`` (batch, 2) int64 (row, column) and ``flips`` (batch,) bool.
    """
    offsets = torch.randint(0, 2 * pad + 1, (batch, 2), generator=generator)
    flips = torch.rand(batch, generator=generator) < 0.5
    return offsets, flips


def apply_crop_flip(
    x: torch.Tensor, offsets: torch.Tensor, flips: torch.Tensor, pad: int = 4
) -> torch.Tensor:
    """Crop each zero-padded image at ``offsets`` and flip those marked in ``flips``.

    Parameters
    ----------
    x : torch.Tensor
        Images (batch, channels, height, width) on any device.
    offsets : torch.Tensor
        (batch, 2) integer (row, column) offsets in [0, 2 * pad], on ``x``'s device.
    flips : torch.Tensor
        (batch,) bool, on ``x``'s device.
    pad : int, default 4
        Padding on each side.

    Returns
    -------
    torch.Tensor
        New tensor of ``x``'s shape; only data movement, so the result is
        exact on every device.
    """
    if x.dim() != 4:
        raise ValueError(
            f"augment expects images of shape (batch, C, H, W), got {tuple(x.shape)}; "
            "pass augment=False for non-image data"
        )
    b, c, h, w = x.shape
    dev = x.device
    padded = F.pad(x, (pad, pad, pad, pad))
    rows = offsets[:, 0:1] + torch.arange(h, device=dev)  # (b, h)
    cols = offsets[:, 1:2] + torch.arange(w, device=dev)  # (b, w)
    # Flip by reversing the column indices: one gather instead of two passes.
    cols = torch.where(flips[:, None], cols.flip(1), cols)
    bi = torch.arange(b, device=dev)[:, None, None, None]
    ci = torch.arange(c, device=dev)[None, :, None, None]
    return padded[bi, ci, rows[:, None, :, None], cols[:, None, None, :]]


def random_crop_flip(x: torch.Tensor, generator: torch.Generator, pad: int = 4) -> torch.Tensor:
    """Randomly crop each image after zero padding and flip half of them horizontally.

    Parameters
    ----------
    x : torch.Tensor
        Batch of images, shape (batch, channels, height, width), model-ready.
    generator : torch.Generator
        Source of every random choice (offsets, then flips), so a seeded
        generator gives the same batch every time.
    pad : int, default 4
        Padding on each side; offsets are uniform in [0, 2 * pad].

    Returns
    -------
    torch.Tensor
        New tensor of the same shape. Padding is 0 in model-ready
        (normalised) units, i.e. the dataset's mean colour.
    """
    if x.dim() != 4:
        raise ValueError(
            f"augment expects images of shape (batch, C, H, W), got {tuple(x.shape)}; "
            "pass augment=False for non-image data"
        )
    offsets, flips = draw_crop_flip(x.shape[0], generator, pad)
    return apply_crop_flip(x, offsets, flips, pad)
