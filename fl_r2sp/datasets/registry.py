"""Dataset names, their shapes, and the dispatching loader."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from fl_r2sp.importpath import is_import_path

from . import cifar, digits, kws
from .base import ArrayDataset
from .user import load_user_dataset, user_dataset_info

Split = Literal["train", "test"]

#: name -> (input shape of one sample, number of classes)
_INFO: dict[str, tuple[tuple[int, ...], int]] = {
    "digits": (digits.INPUT_SHAPE, digits.NUM_CLASSES),
    "cifar10": (cifar.INPUT_SHAPE, cifar.NUM_CLASSES),
    "kws": (kws.INPUT_SHAPE, kws.NUM_CLASSES),
    "kws-audio": (kws.INPUT_SHAPE, kws.NUM_CLASSES),
}
DATASETS: tuple[str, ...] = tuple(_INFO)


def _check_name(name: str) -> None:
    if name not in _INFO:
        raise ValueError(
            f"unknown dataset {name!r}; known datasets: {', '.join(DATASETS)}, or an import "
            "path 'package.module:factory' (docs/user-code.md)"
        )


def dataset_info(name: str) -> tuple[tuple[int, ...], int]:
    """``(input_shape, num_classes)`` of dataset ``name``, without loading it.

    A user's dataset (an import path, :mod:`fl_r2sp.datasets.user`) is loaded
    (memoised) to find out.

    Raises
    ------
    ValueError
        If ``name`` is neither one of :data:`DATASETS` nor a usable import path.
    """
    if is_import_path(name):
        return user_dataset_info(name)
    _check_name(name)
    return _INFO[name]


def load_dataset(
    name: str,
    split: Split,
    data_dir: str | Path | None = None,
    download: bool = False,
) -> ArrayDataset:
    """Load ``split`` of dataset ``name`` as a model-ready :class:`ArrayDataset`.

    Parameters
    ----------
    name : str
        ``"digits"``, ``"cifar10"``, ``"kws"``, ``"kws-audio"``, or a user's import
        path ``"package.module:factory"`` (contract: :mod:`fl_r2sp.datasets.user`).
    split : {"train", "test"}
        Which split; every dataset has a fixed central test split.
    data_dir : str or Path or None, default None
        Data directory; ``None``/``""`` -> ``$FL_R2SP_DATA`` -> per-user cache
        (see :func:`~fl_r2sp.datasets.paths.resolve_data_dir`). Unused by digits.
    download : bool, default False
        CIFAR-10 only: let torchvision download the data if no local copy exists.

    Raises
    ------
    ValueError
        Unknown name or split, a corrupt data file, or a user's dataset that breaks the
        contract (:class:`~fl_r2sp.importpath.ImportPathError`).
    FileNotFoundError
        Data files missing; the message lists the paths searched.
    """
    if split not in ("train", "test"):
        raise ValueError(f"unknown split {split!r}; use 'train' or 'test'")
    if is_import_path(name):
        return load_user_dataset(name, split)
    _check_name(name)
    if name == "digits":
        return digits.load_digits_split(split)
    if name == "cifar10":
        return cifar.load_cifar10(split, data_dir, download)
    if name == "kws":
        return kws.load_kws(split, data_dir)
    from .kws_audio import load_kws_audio  # deferred: imports torchaudio

    return load_kws_audio(split, data_dir)
