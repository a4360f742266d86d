"""A worker's batches from a user's dataset: map-style (resizable) or an iterator (as is).

* A **map-style** dataset (``__len__`` and ``__getitem__`` returning ``(x, y)``) is sampled as
  the built-in sets are (:class:`~fl_r2sp.cluster.data.BatchStream`: successive seeded
  permutations, any batch size per iteration); the samples of a batch are stacked with
  ``torch.utils.data.default_collate``. A :class:`~fl_r2sp.cluster.data.TensorSplit` is indexed
  directly, which gives the same tensors faster.
* An **iterable** (a ``DataLoader``, a generator, ...) yields whole ``(x, y)`` batches of its
  own size; once it is exhausted it is iterated again (a new epoch) if it can be, so a
  ``DataLoader`` runs forever. A scheme that resizes batches cannot use it (the job refuses it
  before the run starts).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import torch

from fl_r2sp.cluster.data import BatchStream, TensorSplit, subset

__all__ = ["CollatedStream", "IterableStream", "is_map_style", "stream_of"]


def is_map_style(data: object) -> bool:
    """Whether ``data`` has ``__len__`` and ``__getitem__`` (a map-style dataset)."""
    return hasattr(data, "__len__") and hasattr(data, "__getitem__")


class CollatedStream(BatchStream):
    """A :class:`BatchStream` over any map-style dataset: its samples, collated."""

    def take(self, batch_size: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The next batch ``(x, y)`` of ``batch_size`` examples (default: ``self.batch_size``)."""
        return _collate(self.split, self.next_indices(batch_size).tolist())

    def first(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The dataset's first ``batch_size`` examples, without advancing the stream."""
        return _collate(self.split, list(range(min(batch_size, len(self.split)))))


def _collate(data: Any, idx: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    from torch.utils.data import default_collate

    x, y = default_collate([data[i] for i in idx])
    return x, y


class IterableStream:
    """Batches ``(x, y)`` of an iterable as it yields them; ``take`` ignores the size asked.

    Raises
    ------
    ValueError
        From :meth:`take`, if a one-shot iterator is exhausted (it cannot start a new epoch).
    """

    def __init__(self, data: Iterable[Any], batch_size: int) -> None:
        self.data, self.batch_size = data, batch_size
        self._it: Iterator[Any] = iter(data)
        self._taken = 0
        self._peeked: tuple[torch.Tensor, torch.Tensor] | None = None

    def first(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The next batch, which :meth:`take` then returns again (``batch_size`` ignored)."""
        if self._peeked is None:
            self._peeked = self.take()
        return self._peeked

    def take(self, batch_size: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The next batch of the iterable (a new pass when one ends, if it can restart)."""
        if self._peeked is not None:
            batch, self._peeked = self._peeked, None
            return batch
        try:
            batch = next(self._it)
        except StopIteration:
            self._it = iter(self.data)
            if self._it is self.data:  # a one-shot iterator: it cannot restart
                msg = f"the iterator ended after {self._taken} batches; return an endless one"
                raise ValueError(msg + ", a DataLoader or a map-style dataset") from None
            batch = next(self._it)
        self._taken += 1
        x, y = batch
        return x, y


def stream_of(data: object, batch_size: int, stream_seed: int, max_train: int = 0,
              seed: int = 0) -> BatchStream | IterableStream:  # fmt: skip
    """The batch stream of a dataset factory's result, its permutations drawn from
    ``stream_seed``; ``max_train > 0`` keeps that many examples of a map-style dataset, drawn
    with ``seed`` (class-stratified for a TensorSplit, as the built-in sets; a random subset
    otherwise).

    Raises
    ------
    TypeError
        If ``data`` is neither map-style nor iterable.
    """
    gen = torch.Generator().manual_seed(stream_seed)
    if isinstance(data, TensorSplit):
        return BatchStream(subset(data, max_train, seed) if max_train else data, batch_size, gen)
    if is_map_style(data):
        if max_train and max_train < len(data):  # type: ignore[arg-type]
            from torch.utils.data import Subset

            keep = torch.randperm(len(data), generator=torch.Generator().manual_seed(seed))  # type: ignore[arg-type]
            data = Subset(data, keep[:max_train].tolist())  # type: ignore[arg-type]
        return CollatedStream(data, batch_size, gen)  # type: ignore[arg-type]
    if isinstance(data, Iterable):
        return IterableStream(data, batch_size)
    raise TypeError(f"returned a {type(data).__name__}, which is neither a map-style dataset "
                    "(__len__ and __getitem__) nor an iterable of (x, y) batches")  # fmt: skip
