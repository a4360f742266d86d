"""OSP's layer bookkeeping on the flattened parameter vector.

A *layer* is one trainable parameter tensor of the model (a weight or a bias), in
``model.parameters()`` order; it occupies one contiguous range of the flattened vector that
the PS runtime shards (:func:`fl_r2sp.cluster.runtime.common.protocol.shard_bounds`). A Gradient
Importance Bitmap (GIB) marks layers for in-computation synchronisation (ICS); the rest go
through routine synchronisation (RS). A shard's part of a stage is the stage's layer ranges
clipped to the shard's bounds, in layer order: worker and PS derive it from the same GIB, so
both post messages of exactly the same size (gloo needs that).

Messages carry the selected elements back to back (:func:`gather`); updates are added range
by range (:func:`add_ranges`), so no index tensors are built.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

Range = tuple[int, int]


@dataclass(frozen=True)
class LayerLayout:
    """Flat ranges of the model's layers and the shard bounds.

    Parameters
    ----------
    ranges : tuple of (int, int)
        ``[start, end)`` of every layer in the flattened vector, contiguous and in order.
    bounds : tuple of (int, int)
        Shard bounds over the same vector.
    """

    ranges: tuple[Range, ...]
    bounds: tuple[Range, ...]

    @classmethod
    def of_model(cls, model: nn.Module, bounds: Sequence[Range]) -> LayerLayout:
        """The layout of ``model``'s trainable parameters over ``bounds``.

        Raises
        ------
        ValueError
            If the bounds do not cover the flattened parameters exactly.
        """
        ranges, start = [], 0
        for p in model.parameters():
            if p.requires_grad:
                ranges.append((start, start + p.numel()))
                start += p.numel()
        if not bounds or bounds[0][0] != 0 or bounds[-1][1] != start:
            raise ValueError(f"shard bounds {list(bounds)} do not cover {start} parameters")
        return cls(tuple(ranges), tuple((int(a), int(b)) for a, b in bounds))

    @property
    def num_layers(self) -> int:
        """Number of layers."""
        return len(self.ranges)

    @property
    def layer_bytes(self) -> list[float]:
        """Size of every layer in bytes (float32)."""
        return [4.0 * (b - a) for a, b in self.ranges]

    def bitmap(self, ics_layers: Iterable[int]) -> list[bool]:
        """The GIB as one bool per layer (True = ICS).

        Raises
        ------
        ValueError
            On a layer index out of range.
        """
        out = [False] * self.num_layers
        for layer in ics_layers:
            if not 0 <= layer < self.num_layers:
                raise ValueError(f"layer {layer} out of range 0..{self.num_layers - 1}")
            out[layer] = True
        return out

    def shard_ranges(self, shard: int, bitmap: Sequence[bool], ics: bool) -> list[Range]:
        """Global ranges of the layers with ``bitmap == ics`` clipped to shard ``shard``."""
        lo, hi = self.bounds[shard]
        out = []
        for (a, b), flag in zip(self.ranges, bitmap, strict=True):
            a, b = max(a, lo), min(b, hi)
            if flag == ics and a < b:
                out.append((a, b))
        return out

    def shard_sums(self, shard: int, values: torch.Tensor) -> list[float]:
        """Per layer, the sum of ``values`` (the shard's slice) over the layer's part here."""
        lo, hi = self.bounds[shard]
        out = []
        for a, b in self.ranges:
            a, b = max(a, lo), min(b, hi)
            out.append(float(values[a - lo : b - lo].sum()) if a < b else 0.0)
        return out


def count(ranges: Iterable[Range]) -> int:
    """Number of elements in ``ranges``."""
    return sum(b - a for a, b in ranges)


def gather(flat: torch.Tensor, ranges: Sequence[Range], offset: int = 0) -> torch.Tensor:
    """The elements of ``ranges`` (global indices, ``flat`` starting at ``offset``), in order."""
    if not ranges:
        return flat.new_zeros(0)
    return torch.cat([flat[a - offset : b - offset] for a, b in ranges])


def add_ranges(
    flat: torch.Tensor,
    ranges: Sequence[Range],
    values: torch.Tensor,
    alpha: float,
    offset: int = 0,
) -> None:
    """``flat[ranges] += alpha · values`` in place (``values`` as :func:`gather` lays them).

    Raises
    ------
    ValueError
        If ``values`` does not hold exactly the ranges' elements.
    """
    if values.numel() != count(ranges):
        raise ValueError(f"{values.numel()} values for {count(ranges)} elements")
    at = 0
    for a, b in ranges:
        flat[a - offset : b - offset].add_(values[at : at + b - a], alpha=alpha)
        at += b - a
