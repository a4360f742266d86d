"""Train/test sets plus a partition: what a simulated client and the server need.

:func:`federated_data` is memoized per process (``functools.lru_cache`` on its
hashable arguments) because every simulated client hosted by one Ray actor
calls it with the same arguments; the data are decoded (or read from the
array cache) and partitioned once per process.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .base import ArrayDataset
from .partition import Partition, make_partition
from .registry import load_dataset
from .split import stratified_subsample


@dataclass(frozen=True, eq=False)
class FederatedData:
    """A partitioned training set and the central test set.

    Attributes
    ----------
    train : ArrayDataset
        Training pool (after ``max_train_samples`` subsampling).
    test : ArrayDataset
        Central test split.
    partition : Partition
        Indices into ``train`` per client.
    """

    train: ArrayDataset
    test: ArrayDataset
    partition: Partition

    @property
    def num_partitions(self) -> int:
        """Number of clients."""
        return self.partition.num_clients

    def client(self, pid: int) -> ArrayDataset:
        """Local training data of partition ``pid`` (``0 <= pid < num_partitions``)."""
        if not 0 <= pid < self.num_partitions:
            raise ValueError(f"partition id {pid} out of range 0..{self.num_partitions - 1}")
        return self.train.subset(
            self.partition.indices[pid], name=f"{self.train.name}[client {pid}]"
        )

    def label_histograms(self) -> np.ndarray:
        """``(clients, classes)`` label counts of the partition."""
        return self.partition.label_histograms(self.train.y, self.train.num_classes)


@lru_cache(maxsize=4)
def federated_data(
    dataset: str = "digits",
    num_partitions: int = 32,
    partitioner: str = "paper",
    alpha: float = 10.0,
    outlier_alpha: float = 0.1,
    outlier_fraction: float = 0.25,
    samples_per_client: int = 0,
    max_train_samples: int = 0,
    seed: int = 0,
    data_dir: str | None = None,
    download: bool = False,
) -> FederatedData:
    """Load ``dataset``, optionally subsample it, and partition it (memoized).

    Parameters
    ----------
    dataset : str, default "digits"
        Name accepted by :func:`~fl_r2sp.datasets.load_dataset`.
    num_partitions : int, default 32
        N, number of clients.
    partitioner : str, default "paper"
        ``paper``, ``paper-strict``, ``dirichlet``, ``iid`` or ``speaker`` (see
        :func:`make_partition`).
    alpha, outlier_alpha, outlier_fraction : float, defaults 10.0, 0.1, 0.25
        Partition parameters.
    samples_per_client : int, default 0
        0 = equal share of the training pool.
    max_train_samples : int, default 0
        If > 0 and smaller than the pool, keep this many training samples,
        chosen stratified by class with ``seed`` before partitioning.
    seed : int, default 0
        Seed of the subsample and the partition.
    data_dir : str or None, default None
        Data directory (``None``/``""``: ``$FL_R2SP_DATA``, then the user cache).
    download : bool, default False
        CIFAR-10 only: allow a torchvision download.

    Returns
    -------
    FederatedData
        Shared by all callers with equal arguments in this process: treat as read-only.
    """
    train = load_dataset(dataset, "train", data_dir, download)
    test = load_dataset(dataset, "test", data_dir, download)
    if max_train_samples < 0:
        raise ValueError(f"max_train_samples must be >= 0, got {max_train_samples}")
    if 0 < max_train_samples < len(train):
        train = train.subset(stratified_subsample(train.y, max_train_samples, seed))
    part = make_partition(
        partitioner,
        train.y,
        train.groups,
        num_partitions,
        alpha,
        outlier_alpha,
        outlier_fraction,
        samples_per_client,
        seed,
        num_classes=train.num_classes,
    )
    return FederatedData(train=train, test=test, partition=part)
