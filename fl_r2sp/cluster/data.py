"""Training data of the cluster mode: datasets as tensors and a seeded, resizable batch stream.

Datasets (``make_dataset``):

* ``cifar10``: the local CIFAR-10 files through :func:`fl_r2sp.datasets.cifar.load_cifar10`
  (never downloads; a clear FileNotFoundError when the files are missing).
* ``synthetic``: a seeded Gaussian-cluster classification set shaped for the model (flat
  64-vectors for the MLPs, 3x32x32 images for the CNNs), for tests and CPU demos.
* ``copy`` / ``reverse``: seeded token sequences for the transformer; the target is the
  source, or the source reversed.

Each worker draws its batches from the whole training set with its own generator
(:class:`BatchStream`), as data-parallel workers sample independently in the paper.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from fl_r2sp.cluster.models import BOS, check_model_dataset, model_spec
from fl_r2sp.cluster.userjob.catalog import DATASET_NAMES

#: Defaults of the generated sets: examples, held-out examples, sequence length, vocabulary.
SYNTHETIC_TRAIN, SYNTHETIC_TEST = 2048, 512
SEQ_LENGTH, SEQ_VOCAB = 12, 10


@dataclass(frozen=True, eq=False)
class TensorSplit:
    """Inputs ``x`` and targets ``y`` of one split, CPU tensors with the same first dimension."""

    x: torch.Tensor
    y: torch.Tensor

    def __post_init__(self) -> None:
        if self.x.shape[0] != self.y.shape[0]:
            raise ValueError(f"x has {self.x.shape[0]} rows but y has {self.y.shape[0]}")

    def __len__(self) -> int:
        return int(self.y.shape[0])

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Example ``i`` as ``(x, y)``: a split is a map-style dataset of the user contract."""
        return self.x[i], self.y[i]


@dataclass(frozen=True, eq=False)
class ClusterData:
    """A dataset ready for training: train split, optional test split, number of classes.

    ``num_classes`` is the model's output size (the vocabulary, BOS included, for the
    sequence tasks); pass it to :func:`fl_r2sp.cluster.models.build_cluster_model`.
    """

    train: TensorSplit
    test: TensorSplit | None
    num_classes: int
    name: str


def make_dataset(
    name: str,
    dataset: str,
    data_dir: str | Path | None = None,
    seed: int = 0,
    include_test: bool = True,
    max_train: int = 0,
) -> ClusterData:
    """Load or generate ``dataset`` in the input format of model ``name``.

    Parameters
    ----------
    name : str
        Model name (see :data:`fl_r2sp.cluster.models.MODEL_NAMES`); it fixes the input shape
        of the generated sets and is checked against ``dataset``.
    dataset : str
        One of :data:`DATASET_NAMES`.
    data_dir : str or Path or None, default None
        Folder of the CIFAR-10 files (``None``: ``$FL_R2SP_DATA`` or the user cache, as the
        federated side); unused by generated sets.
    seed : int, default 0
        Seed of the generated sets (CIFAR-10 is read as is).
    include_test : bool, default True
        Also return the test split (CIFAR-10: 123 MB more per process).
    max_train : int, default 0
        Keep only ``max_train`` training examples (0: all; generated sets have 2048
        classification or 4096 sequence examples): a class-stratified subset drawn with
        ``seed`` for labelled sets (the packed CIFAR-10 files are sorted by class, so the first
        examples would hold one or two classes), the first ones for the sequence tasks.

    Returns
    -------
    ClusterData
        float32 inputs with int64 labels, or int64 token ids ``(n, 2, 12)`` with int64
        targets ``(n, 12)`` for the sequence tasks.
    """
    if dataset not in DATASET_NAMES:
        raise ValueError(f"unknown dataset {dataset!r}; choose one of {list(DATASET_NAMES)}")
    check_model_dataset(name, dataset)
    if max_train < 0:
        raise ValueError(f"max_train must be >= 0, got {max_train}")
    if dataset == "cifar10":
        data = _cifar10(data_dir, include_test)
    elif dataset == "synthetic":
        data = _clusters(model_spec(name).input_shape, seed, include_test)
    else:
        data = _sequences(dataset, seed, include_test)
    if max_train:
        data = ClusterData(subset(data.train, max_train, seed), data.test, data.num_classes,
                           data.name)  # fmt: skip
    return data


def subset(train: TensorSplit, n: int, seed: int) -> TensorSplit:
    """``n`` examples of ``train`` (all if ``n >= len``): class-stratified and seeded when the
    labels are one per example, else the first ``n`` (sequence targets)."""
    if n >= len(train):
        return train
    if train.y.dim() != 1:
        return TensorSplit(train.x[:n], train.y[:n])
    from fl_r2sp.datasets.split import stratified_subsample

    idx = torch.from_numpy(stratified_subsample(train.y.numpy(), n, seed))
    return TensorSplit(train.x[idx], train.y[idx])


def _cifar10(data_dir: str | Path | None, include_test: bool) -> ClusterData:
    from fl_r2sp.datasets.cifar import load_cifar10  # deferred: decoding pulls in Pillow

    def split(which: str) -> TensorSplit:
        try:
            arrays = load_cifar10(which, data_dir, download=False)
        except FileNotFoundError as exc:
            # The loader's message ends with a hint to download, which this mode never does.
            where = str(exc).split(" Or pass download=True")[0]
            raise FileNotFoundError(
                f"{where}\nThe cluster mode never downloads; use --dataset synthetic for a "
                "generated set of the same shape."
            ) from exc
        return TensorSplit(torch.from_numpy(arrays.x), torch.from_numpy(arrays.y))

    train = split("train")
    return ClusterData(train, split("test") if include_test else None, 10, "cifar10")


def _clusters(shape: tuple[int, ...], seed: int, include_test: bool) -> ClusterData:
    """Ten Gaussian clusters in ``shape``; class means ~3 noise standard deviations apart."""
    gen = torch.Generator().manual_seed(seed)
    dims = 1
    for d in shape:
        dims *= d
    # Scaling the means by 3/sqrt(dims) keeps their distance (about 4.2) independent of the
    # input size, so the task is equally hard for the MLP and the CNNs.
    means = torch.randn((10, *shape), generator=gen) * (3.0 / dims**0.5)

    def draw(n: int) -> TensorSplit:
        y = torch.randint(0, 10, (n,), generator=gen)
        return TensorSplit(means[y] + torch.randn((n, *shape), generator=gen), y)

    train = draw(SYNTHETIC_TRAIN)
    return ClusterData(train, draw(SYNTHETIC_TEST) if include_test else None, 10, "synthetic")


def _sequences(task: str, seed: int, include_test: bool) -> ClusterData:
    """Source tokens uniform in ``1 .. SEQ_VOCAB-1``; target = source (copy) or reversed."""
    gen = torch.Generator().manual_seed(seed)

    def draw(n: int) -> TensorSplit:
        src = torch.randint(BOS + 1, SEQ_VOCAB, (n, SEQ_LENGTH), generator=gen)
        tgt = src.flip(1) if task == "reverse" else src
        # Teacher forcing: the decoder reads BOS then the target shifted right by one.
        dec = torch.cat([torch.full((n, 1), BOS), tgt[:, :-1]], dim=1)
        return TensorSplit(torch.stack([src, dec], dim=1), tgt.clone())

    train = draw(2 * SYNTHETIC_TRAIN)
    return ClusterData(train, draw(SYNTHETIC_TEST) if include_test else None, SEQ_VOCAB, task)


class BatchStream:
    """Endless seeded mini-batches of a split; the batch size may change every iteration.

    Indices come from successive random permutations of the split drawn from ``generator``,
    so every example is used once per epoch and a batch may straddle two epochs. The stream
    is a pure function of the generator's seed and the sequence of batch sizes asked for.

    Parameters
    ----------
    split : TensorSplit
        The examples (non-empty).
    batch_size : int
        Size of the batches iteration yields (>= 1; :meth:`take` may ask for another).
    generator : torch.Generator
        Source of the permutations (seed it per worker).
    """

    def __init__(self, split: TensorSplit, batch_size: int, generator: torch.Generator) -> None:
        if len(split) == 0:
            raise ValueError("cannot draw batches from an empty split")
        self.split = split
        self._batch_size = _check_size(batch_size)
        self.generator = generator
        self._pending = torch.empty(0, dtype=torch.int64)

    @property
    def batch_size(self) -> int:
        """Size of the batches iteration yields; assign to change it (validated)."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        self._batch_size = _check_size(value)

    def take(self, batch_size: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The next batch ``(x, y)`` of ``batch_size`` examples (default: ``self.batch_size``)."""
        idx = self.next_indices(batch_size)
        return self.split.x[idx], self.split.y[idx]

    def first(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The split's first ``batch_size`` examples, without advancing the stream."""
        return self.split.x[:batch_size], self.split.y[:batch_size]

    def next_indices(self, batch_size: int | None = None) -> torch.Tensor:
        """The indices of the next batch of ``batch_size`` examples (default:
        ``self.batch_size``), from the stream's permutations."""
        size = self.batch_size if batch_size is None else _check_size(batch_size)
        while self._pending.numel() < size:
            perm = torch.randperm(len(self.split), generator=self.generator)
            self._pending = torch.cat([self._pending, perm])
        idx, self._pending = self._pending[:size], self._pending[size:]
        return idx

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.take()


def batches(train: TensorSplit, batch_size: int, generator: torch.Generator) -> BatchStream:
    """A :class:`BatchStream` over ``train``; set its ``batch_size`` (or call ``take(b)``)
    to change the size of the following batches, as batch-size tuning does."""
    return BatchStream(train, batch_size, generator)


def _check_size(batch_size: int) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch size must be an int >= 1, got {batch_size!r}")
    return batch_size
