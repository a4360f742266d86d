"""Keyword spotting: the 98x40 log-mel spectrogram set of Speech Commands v0.02.

Only the 10 keywords (:data:`KEYWORDS`) are kept: 38,546 clips from 2,492
speakers in the full archive. The archive's front-end parameters are
unknown; its 8-bit images are mapped to [0, 1] and then standardized with
the scalar mean and standard deviation of the training split, computed once
at decode time and cached with the arrays.

Train/test split: by speaker, :data:`~fl_r2sp.datasets.split.KWS_TEST_SPEAKER_FRACTION`
(10 %) of the speakers, chosen with the fixed
:data:`~fl_r2sp.datasets.split.KWS_SPLIT_SEED`, form the test split, so no
speaker is on both sides. ``groups`` holds the speaker ids.

Searched under the data directory ``D``: ``D/sc_v002_logmel98x40_jpeg.npz`` or
``D/speech_commands/sc_v002_logmel98x40_jpeg.npz``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .archive import corrupt_error, decode_jpegs, open_archive
from .base import ArrayDataset
from .cache import cached_arrays
from .paths import missing_files_error, resolve_data_dir
from .split import KWS_SPLIT_SEED, KWS_TEST_SPEAKER_FRACTION, speaker_split

KEYWORDS = ("yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go")
NUM_FRAMES, NUM_MELS = 98, 40
INPUT_SHAPE = (NUM_FRAMES, NUM_MELS)
NUM_CLASSES = len(KEYWORDS)
ARCHIVE = "sc_v002_logmel98x40_jpeg.npz"
_SPLIT_PARAMS = {"fraction": KWS_TEST_SPEAKER_FRACTION, "seed": KWS_SPLIT_SEED}


def archive_candidates(root: Path, name: str) -> list[Path]:
    """Where a Speech Commands archive ``name`` may sit under ``root``."""
    return [root / name, root / "speech_commands" / name]


def train_stats(features: np.ndarray, test_mask: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """``[mean, std]`` (float64) of ``scale * features`` over the training rows.

    Sums and sums of squares are accumulated over chunks of rows so that no
    float64 copy of the whole set (1 GB for ``kws``) is ever made.
    """
    rows = np.flatnonzero(~test_mask)
    total = total_sq = 0.0
    for start in range(0, len(rows), 1024):
        chunk = features[rows[start : start + 1024]].astype(np.float64) * scale
        total += float(chunk.sum())
        total_sq += float(np.square(chunk).sum())
    count = len(rows) * int(np.prod(features.shape[1:]))
    mean = total / count
    std = float(np.sqrt(max(total_sq / count - mean * mean, 0.0)))
    return np.array([mean, max(std, 1e-8)])


def _decode(path: Path) -> dict[str, np.ndarray]:
    f = open_archive(path, ("data", "offsets", "word", "speaker"))
    words, speakers = f["word"], f["speaker"]
    if len(words) != len(f["offsets"]) - 1 or len(speakers) != len(words):
        raise corrupt_error(path, "metadata length differs from the number of records")
    keep = np.flatnonzero(np.isin(words, KEYWORDS))
    if keep.size == 0:
        raise corrupt_error(path, f"no clips of the keywords {KEYWORDS}")
    x = decode_jpegs(path, f["data"], f["offsets"], keep, INPUT_SHAPE, "L")
    lookup = {w: i for i, w in enumerate(KEYWORDS)}
    y = np.array([lookup[str(w)] for w in words[keep]], dtype=np.uint8)
    spk = speakers[keep]
    test = speaker_split(spk, KWS_TEST_SPEAKER_FRACTION, KWS_SPLIT_SEED)
    stats = train_stats(x, test, scale=1.0 / 255.0)
    return {"x": x, "y": y, "speaker": spk, "test": test, "stats": stats}


def finish(arrays: dict[str, np.ndarray], split: str, scale: float, name: str) -> ArrayDataset:
    """Select ``split`` rows and standardize them into an :class:`ArrayDataset`."""
    rows = np.flatnonzero(arrays["test"] if split == "test" else ~arrays["test"])
    mean, std = (float(v) for v in arrays["stats"])
    x = arrays["x"][rows].astype(np.float32)
    x *= np.float32(scale)
    x -= np.float32(mean)
    x /= np.float32(std)
    return ArrayDataset(
        x=x,
        y=arrays["y"][rows].astype(np.int64),
        num_classes=NUM_CLASSES,
        groups=arrays["speaker"][rows],
        name=f"{name}/{split}",
    )


def load_kws(split: str, data_dir: str | Path | None = None) -> ArrayDataset:
    """The ``kws`` spectrogram set, ``split`` by speaker (see module doc)."""
    root = resolve_data_dir(data_dir)
    candidates = archive_candidates(root, ARCHIVE)
    path = next((p for p in candidates if p.is_file()), None)
    if path is None:
        raise missing_files_error("Speech Commands log-mel archive", candidates)
    arrays, _ = cached_arrays("kws-logmel", [path], _SPLIT_PARAMS, lambda: _decode(path))
    return finish(arrays, split, 1.0 / 255.0, "kws")
