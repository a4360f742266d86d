"""CIFAR-10 from local files; torchvision download only when asked.

Layouts searched under the data directory ``D`` (first found wins):

1. torchvision's ``D/cifar-10-batches-py/`` or ``D/cifar10/cifar-10-batches-py/``
   (pickled ``data_batch_1..5`` and ``test_batch``),
2. the packed JPEG archives ``D/cifar10_<split>_jpeg.npz`` or
   ``D/cifar10/cifar10_<split>_jpeg.npz`` (see :mod:`.archive`),
3. with ``download=True`` only: ``torchvision.datasets.CIFAR10(D, download=True)``,
   which writes layout 1.

Inputs are normalized per channel with the CIFAR-10 training-set statistics.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from .archive import corrupt_error, decode_jpegs, open_archive
from .base import ArrayDataset
from .cache import cached_arrays
from .paths import missing_files_error, resolve_data_dir

INPUT_SHAPE = (3, 32, 32)
NUM_CLASSES = 10
#: Per-channel mean and standard deviation of the CIFAR-10 training images.
MEAN = np.array([0.4914, 0.4822, 0.4465], dtype=np.float32)
STD = np.array([0.2470, 0.2435, 0.2616], dtype=np.float32)
_BATCHES = {"train": [f"data_batch_{i}" for i in range(1, 6)], "test": ["test_batch"]}


def _pickle_dirs(root: Path) -> list[Path]:
    return [root / "cifar-10-batches-py", root / "cifar10" / "cifar-10-batches-py"]


def _archives(root: Path, split: str) -> list[Path]:
    name = f"cifar10_{split}_jpeg.npz"
    return [root / name, root / "cifar10" / name]


def _read_pickles(folder: Path, split: str) -> dict[str, np.ndarray]:
    xs, ys = [], []
    for batch in _BATCHES[split]:
        path = folder / batch
        if not path.exists():
            raise missing_files_error(f"CIFAR-10 batch {batch!r}", [path])
        try:
            with path.open("rb") as fh:
                entry = pickle.load(fh, encoding="bytes")
            data = np.asarray(entry[b"data"], dtype=np.uint8).reshape(-1, *INPUT_SHAPE)
            labels = np.asarray(entry[b"labels"], dtype=np.uint8)
        except (pickle.UnpicklingError, EOFError, KeyError, ValueError, TypeError) as exc:
            raise corrupt_error(path, f"{type(exc).__name__}: {exc}") from exc
        xs.append(data)
        ys.append(labels)
    return {"x": np.concatenate(xs), "y": np.concatenate(ys)}


def _read_archive(path: Path) -> dict[str, np.ndarray]:
    f = open_archive(path, ("data", "offsets", "y"))
    n = len(f["offsets"]) - 1
    if len(f["y"]) != n:
        raise corrupt_error(path, f"{len(f['y'])} labels for {n} images")
    hwc = decode_jpegs(path, f["data"], f["offsets"], np.arange(n), (32, 32, 3), "RGB")
    # Cache in the model's channel-first order so loading is a plain read.
    return {"x": np.ascontiguousarray(hwc.transpose(0, 3, 1, 2)), "y": f["y"].astype(np.uint8)}


def _download(root: Path, split: str) -> Path:
    import torchvision  # deferred: only this path needs it

    try:
        torchvision.datasets.CIFAR10(str(root), train=(split == "train"), download=True)
    except Exception as exc:  # network errors come in many types (URLError, OSError...)
        raise FileNotFoundError(
            f"downloading CIFAR-10 into {root} failed ({type(exc).__name__}: {exc}); "
            f"without network, place cifar-10-batches-py/ (or cifar10_{split}_jpeg.npz) "
            f"in {root} and retry without download"
        ) from exc
    return _pickle_dirs(root)[0]


def load_raw(split: str, data_dir: str | Path | None, download: bool) -> dict[str, np.ndarray]:
    """uint8 images ``(N, 3, 32, 32)`` and labels of ``split``, via the cache."""
    root = resolve_data_dir(data_dir)
    folder = next((d for d in _pickle_dirs(root) if d.is_dir()), None)
    archive = next((p for p in _archives(root, split) if p.is_file()), None)
    if folder is None and archive is None:
        if not download:
            raise missing_files_error(
                f"CIFAR-10 {split} data",
                _pickle_dirs(root) + _archives(root, split),
                "Or pass download=True (run-config download=true) to fetch it with torchvision.",
            )
        folder = _download(root, split)
    if folder is not None:
        sources = [folder / b for b in _BATCHES[split] if (folder / b).exists()]
        arrays, _ = cached_arrays(
            f"cifar10-pickle-{split}", sources or [folder], {}, lambda: _read_pickles(folder, split)
        )
    else:
        assert archive is not None
        arrays, _ = cached_arrays(
            f"cifar10-npz-{split}", [archive], {}, lambda: _read_archive(archive)
        )
    return arrays


def normalize(x_uint8: np.ndarray) -> np.ndarray:
    """uint8 ``(N, 3, 32, 32)`` -> float32 normalized with :data:`MEAN`, :data:`STD`."""
    x = x_uint8.astype(np.float32)
    # In place, to keep peak memory at one float copy (614 MB for the train split).
    x *= np.float32(1.0 / 255.0)
    x -= MEAN[None, :, None, None]
    x /= STD[None, :, None, None]
    return x


def load_cifar10(
    split: str, data_dir: str | Path | None = None, download: bool = False
) -> ArrayDataset:
    """CIFAR-10 ``split`` as a model-ready :class:`ArrayDataset` (see module doc)."""
    raw = load_raw(split, data_dir, download)
    y = raw["y"].astype(np.int64)
    if y.size and (y.min() < 0 or y.max() >= NUM_CLASSES):
        raise ValueError(f"CIFAR-10 labels out of range 0..9 (max {y.max()}); data is corrupt")
    return ArrayDataset(
        x=normalize(raw["x"]), y=y, num_classes=NUM_CLASSES, groups=None, name=f"cifar10/{split}"
    )
