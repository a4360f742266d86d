"""A local round's random choices drawn up front: batch indices and augmentation.

:func:`train_local` draws, from one generator seeded with the job's seed, a
permutation at the start of every epoch and (with augmentation) each batch's
crop offsets and flips right after that batch is cut. :func:`draw_schedule`
replays exactly that sequence of draws without touching any data, so a
trainer that computes many clients at once (the batched executor) feeds each
client the very batches it would have seen alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .augment import draw_crop_flip
from .local import batch_schedule


@dataclass(frozen=True)
class Schedule:
    """Every random choice of one local round.

    Attributes
    ----------
    indices : torch.Tensor
        (iterations, b) int64 row indices into the client's own data, where
        ``b = min(batch_size, n)``.
    offsets : torch.Tensor or None
        (iterations, b, 2) int64 crop offsets; ``None`` without augmentation.
    flips : torch.Tensor or None
        (iterations, b) bool horizontal flips; ``None`` without augmentation.
    """

    indices: torch.Tensor
    offsets: torch.Tensor | None
    flips: torch.Tensor | None

    @property
    def batch(self) -> int:
        """Examples per iteration (b)."""
        return int(self.indices.shape[1])


def draw_schedule(
    n: int, batch_size: int, iterations: int, seed: int, augment: bool = False, pad: int = 4
) -> Schedule:
    """Draw the batches (and augmentation) ``train_local`` would use with ``seed``.

    Parameters
    ----------
    n : int
        Number of local examples (>= 1).
    batch_size : int
        Mini-batch size; clients with ``n < batch_size`` use batches of ``n``.
    iterations : int
        tau (>= 1).
    seed : int
        The job's SGD seed (``train_local``'s ``seed``).
    augment : bool, default False
        Also draw crop offsets and flips, interleaved as ``train_local`` does.
    pad : int, default 4
        Crop padding (``random_crop_flip``'s).

    Returns
    -------
    Schedule
        CPU tensors; the draws come from a CPU generator, so they are the
        same whatever device later trains on them.
    """
    if n < 1 or batch_size < 1 or iterations < 1:
        raise ValueError(
            f"need n, batch_size, iterations >= 1, got {n}, {batch_size}, {iterations}"
        )
    gen = torch.Generator().manual_seed(seed)
    rows: list[torch.Tensor] = []
    offs: list[torch.Tensor] = []
    flips: list[torch.Tensor] = []
    # The generator interleaves permutations and augmentation draws: draw the
    # augmentation of each batch before asking the schedule for the next one.
    for idx in batch_schedule(n, batch_size, iterations, gen):
        rows.append(idx)
        if augment:
            o, f = draw_crop_flip(len(idx), gen, pad)
            offs.append(o)
            flips.append(f)
    return Schedule(
        indices=torch.stack(rows),
        offsets=torch.stack(offs) if augment else None,
        flips=torch.stack(flips) if augment else None,
    )
