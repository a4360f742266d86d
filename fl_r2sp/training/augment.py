"""Standard CIFAR augmentation (random crop with 4-pixel padding + horizontal flip), seeded."""

from __future__ import annotations

import torch
import torch.nn.functional as F


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
    b, c, h, w = x.shape
    padded = F.pad(x, (pad, pad, pad, pad))
    offsets = torch.randint(0, 2 * pad + 1, (b, 2), generator=generator)
    flips = torch.rand(b, generator=generator) < 0.5
    rows = offsets[:, 0:1] + torch.arange(h)  # (b, h)
    cols = offsets[:, 1:2] + torch.arange(w)  # (b, w)
    # Flip by reversing the column indices: one gather instead of two passes.
    cols = torch.where(flips[:, None], cols.flip(1), cols)
    bi = torch.arange(b)[:, None, None, None]
    ci = torch.arange(c)[None, :, None, None]
    return padded[bi, ci, rows[:, None, :, None], cols[:, None, None, :]]
