"""Data sets, train/test splits and federated partitions.

Public entry points:

- :func:`load_dataset` / :func:`dataset_info`: ``digits``, ``cifar10``, ``kws``, ``kws-audio``;
- :func:`make_partition` and the partitioners in :mod:`.partition`;
- :func:`federated_data`: train/test sets plus a partition, memoized per process;
- :func:`resolve_data_dir`, :func:`cache_dir`, :func:`shared_data_dir`.
"""

from .base import ArrayDataset
from .federated import FederatedData, federated_data
from .partition import (
    PARTITIONERS,
    Partition,
    dirichlet_partition,
    iid_partition,
    make_partition,
    paper_partition,
    speaker_partition,
)
from .paths import cache_dir, resolve_data_dir, shared_data_dir
from .registry import DATASETS, dataset_info, load_dataset

__all__ = [
    "DATASETS",
    "PARTITIONERS",
    "ArrayDataset",
    "FederatedData",
    "Partition",
    "cache_dir",
    "dataset_info",
    "dirichlet_partition",
    "federated_data",
    "iid_partition",
    "load_dataset",
    "make_partition",
    "paper_partition",
    "resolve_data_dir",
    "shared_data_dir",
    "speaker_partition",
]
