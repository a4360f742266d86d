"""Keyword spotting from raw one-second clips (``kws-audio``).

Sources under the data directory ``D`` (first found wins):

1. a torchaudio ``SPEECHCOMMANDS`` folder tree ``D/SpeechCommands/speech_commands_v0.02/``
   or ``D/speech_commands_v0.02/`` (``<word>/<speaker>_nohash_<n>.wav``),
2. the FLAC test-set archive ``D/sc_v002_testset_flac.npz`` or
   ``D/speech_commands/sc_v002_testset_flac.npz`` (4,074 keyword clips, 239 speakers).

Audio is read with ``soundfile`` (``torchaudio.load`` needs FFmpeg), mixed to
mono, resampled to 16 kHz if needed, zero-padded or cropped to 16,000
samples, and turned into 98 frames of 40 log-mel bins with
``torchaudio.transforms.MelSpectrogram`` (25 ms window, 10 ms hop,
``center=False``: ``1 + (16000 - 400) // 160 = 98`` frames) and
``log(mel + 1e-6)``. Features are cached as float16 and standardized with
the training split's scalar mean and standard deviation. Split by speaker as
for ``kws`` (:mod:`fl_r2sp.datasets.kws`). Only the 10 keywords are used.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import soundfile as sf

from .archive import corrupt_error, open_archive, record
from .base import ArrayDataset
from .cache import cached_arrays
from .kws import KEYWORDS, NUM_FRAMES, NUM_MELS, archive_candidates, finish, train_stats
from .paths import missing_files_error, resolve_data_dir
from .split import KWS_SPLIT_SEED, KWS_TEST_SPEAKER_FRACTION, speaker_split

SAMPLE_RATE = 16_000
WIN_LENGTH, HOP_LENGTH = 400, 160  # 25 ms and 10 ms at 16 kHz
LOG_EPS = 1e-6
ARCHIVE = "sc_v002_testset_flac.npz"
_PARAMS = {
    "sr": SAMPLE_RATE,
    "win": WIN_LENGTH,
    "hop": HOP_LENGTH,
    "mels": NUM_MELS,
    "eps": LOG_EPS,
    "fraction": KWS_TEST_SPEAKER_FRACTION,
    "seed": KWS_SPLIT_SEED,
}


def _tree_candidates(root: Path) -> list[Path]:
    return [root / "SpeechCommands" / "speech_commands_v0.02", root / "speech_commands_v0.02"]


def read_clip(source: str | Path | io.BytesIO, where: str) -> np.ndarray:
    """One clip as float32 mono, 16 kHz, exactly :data:`SAMPLE_RATE` samples."""
    try:
        audio, sr = sf.read(source, dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        raise ValueError(f"cannot decode audio {where}: {exc}; replace the file") from exc
    mono = audio.mean(axis=1)
    if sr != SAMPLE_RATE:
        import torch
        import torchaudio.functional as AF

        mono = AF.resample(torch.from_numpy(mono), sr, SAMPLE_RATE).numpy()
    out = np.zeros(SAMPLE_RATE, dtype=np.float32)
    out[: min(len(mono), SAMPLE_RATE)] = mono[:SAMPLE_RATE]
    return out


def log_mel(audio: np.ndarray, chunk: int = 512) -> np.ndarray:
    """``(N, 16000)`` float32 audio -> ``(N, 98, 40)`` float32 log-mel frames."""
    import torch
    import torchaudio

    mel = torchaudio.transforms.MelSpectrogram(
        sample_rate=SAMPLE_RATE,
        n_fft=WIN_LENGTH,
        win_length=WIN_LENGTH,
        hop_length=HOP_LENGTH,
        n_mels=NUM_MELS,
        center=False,
    )
    out = np.empty((len(audio), NUM_FRAMES, NUM_MELS), dtype=np.float32)
    with torch.no_grad():
        for start in range(0, len(audio), chunk):
            spec = mel(torch.from_numpy(audio[start : start + chunk]))
            out[start : start + chunk] = torch.log(spec + LOG_EPS).transpose(1, 2).numpy()
    return out


def _from_tree(tree: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    clips, labels, speakers = [], [], []
    for label, word in enumerate(KEYWORDS):
        for wav in sorted((tree / word).glob("*.wav")):
            clips.append(read_clip(wav, str(wav)))
            labels.append(label)
            speakers.append(wav.name.split("_nohash_")[0])
    if not clips:
        raise FileNotFoundError(f"no keyword .wav files under {tree}/<word>/ for {KEYWORDS}")
    return np.stack(clips), np.array(labels, dtype=np.uint8), np.array(speakers)


def _from_archive(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    f = open_archive(path, ("data", "offsets", "y", "classes", "speaker"))
    classes = [str(c) for c in f["classes"]]
    if any(k not in classes for k in KEYWORDS):
        raise corrupt_error(path, f"classes {classes} lack some of {KEYWORDS}")
    # Map the archive's class order onto ours by name, not by position.
    remap = np.array([KEYWORDS.index(c) if c in KEYWORDS else -1 for c in classes])
    y = remap[f["y"].astype(np.int64)]
    keep = np.flatnonzero(y >= 0)
    clips = np.stack(
        [
            read_clip(io.BytesIO(record(f["data"], f["offsets"], int(i))), f"record {i} of {path}")
            for i in keep
        ]
    )
    return clips, y[keep].astype(np.uint8), f["speaker"][keep]


def _decode(source: Path) -> dict[str, np.ndarray]:
    clips, y, spk = _from_tree(source) if source.is_dir() else _from_archive(source)
    feats = log_mel(clips)
    test = speaker_split(spk, KWS_TEST_SPEAKER_FRACTION, KWS_SPLIT_SEED)
    return {
        "x": feats.astype(np.float16),
        "y": y,
        "speaker": spk,
        "test": test,
        "stats": train_stats(feats, test),
    }


def load_kws_audio(split: str, data_dir: str | Path | None = None) -> ArrayDataset:
    """The ``kws-audio`` set, ``split`` by speaker (see module doc)."""
    root = resolve_data_dir(data_dir)
    candidates = _tree_candidates(root) + archive_candidates(root, ARCHIVE)
    source = next((p for p in candidates if p.exists()), None)
    if source is None:
        raise missing_files_error("Speech Commands audio (folder tree or FLAC archive)", candidates)
    fingerprint = [source / w for w in KEYWORDS if (source / w).is_dir()] or [source]
    arrays, _ = cached_arrays("kws-audio", fingerprint, _PARAMS, lambda: _decode(source))
    return finish(arrays, split, 1.0, "kws-audio")
