"""Tiny fake data folders in every layout the loaders read, for tests.

Each writer fills a directory with random content in the exact on-disk
format of the real files (packed ``.npz`` archives of JPEG/FLAC blobs,
torchvision's CIFAR pickles, a torchaudio ``SPEECHCOMMANDS`` tree), so that
loaders can be tested without the real data. All randomness comes from the
``seed`` argument.
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import numpy as np
import soundfile as sf
from PIL import Image

from .kws import KEYWORDS

CIFAR_CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)


def _pack(blobs: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(b) for b in blobs])
    data = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    return data, offsets


def _jpeg(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="JPEG", quality=95)
    return buf.getvalue()


def _flac(audio: np.ndarray, sr: int) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, audio, sr, format="FLAC", subtype="PCM_16")
    return buf.getvalue()


def write_cifar_npz(root: Path, split: str, n: int = 20, seed: int = 0) -> Path:
    """``root/cifar10/cifar10_<split>_jpeg.npz`` with ``n`` random images, labels ``i % 10``."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 32, 32, 3), dtype=np.uint8)
    data, offsets = _pack([_jpeg(im) for im in images])
    y = (np.arange(n) % 10).astype(np.uint8)
    path = Path(root) / "cifar10" / f"cifar10_{split}_jpeg.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(
        path,
        data=data,
        offsets=offsets,
        y=y,
        classes=np.array(CIFAR_CLASSES),
        paths=np.array([f"{split}/{CIFAR_CLASSES[c]}/{i:04d}.jpg" for i, c in enumerate(y)]),
    )
    return path


def write_cifar_pickles(root: Path, per_batch: int = 4, seed: int = 0) -> Path:
    """torchvision layout ``root/cifar-10-batches-py/`` (5 train batches + test batch)."""
    rng = np.random.default_rng(seed)
    folder = Path(root) / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        entry = {
            b"data": rng.integers(0, 256, size=(per_batch, 3072), dtype=np.uint8),
            b"labels": [int(v) for v in rng.integers(0, 10, size=per_batch)],
        }
        with (folder / name).open("wb") as fh:
            pickle.dump(entry, fh)
    return folder


def speakers(count: int) -> list[str]:
    """``count`` fake 8-hex-digit speaker ids."""
    return [f"{i * 2654435761 % 16**8:08x}" for i in range(1, count + 1)]


def write_kws_npz(root: Path, num_speakers: int = 20, per_speaker: int = 3, seed: int = 0) -> Path:
    """Spectrogram archive: keyword clips cycling through the 10 words, plus noise/unknown."""
    rng = np.random.default_rng(seed)
    words, spk, blobs = [], [], []
    for s_i, s in enumerate(speakers(num_speakers)):
        for j in range(per_speaker):
            words.append(KEYWORDS[(s_i * per_speaker + j) % len(KEYWORDS)])
            spk.append(s)
    words += ["_background_noise_", "zero"]  # must be ignored by the loader
    spk += ["", spk[0]]
    for _ in words:
        blobs.append(_jpeg(rng.integers(0, 256, size=(98, 40), dtype=np.uint8)))
    data, offsets = _pack(blobs)
    path = Path(root) / "speech_commands" / "sc_v002_logmel98x40_jpeg.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = np.array([w if w in KEYWORDS or w.startswith("_") else "unknown" for w in words])
    np.savez(
        path,
        data=data,
        offsets=offsets,
        folder=folder,
        word=np.array(words),
        speaker=np.array(spk),
        names=np.array([f"{i}.jpg" for i in range(len(words))]),
    )
    return path


def _clips(rng: np.random.Generator, n: int, sr: int) -> list[np.ndarray]:
    # Slightly shorter/longer clips exercise the pad/crop path.
    return [
        0.1 * rng.standard_normal(sr + int(rng.integers(-800, 800))).astype(np.float32)
        for _ in range(n)
    ]


def write_flac_npz(root: Path, num_speakers: int = 10, per_speaker: int = 2, seed: int = 0) -> Path:
    """FLAC test-set archive with keyword clips plus ``_silence_``/``_unknown_`` records."""
    rng = np.random.default_rng(seed)
    classes = list(KEYWORDS) + ["_silence_", "_unknown_"]
    y, spk = [10, 11], ["", "ffffffff"]
    for s_i, s in enumerate(speakers(num_speakers)):
        for j in range(per_speaker):
            y.append((s_i * per_speaker + j) % len(KEYWORDS))
            spk.append(s)
    data, offsets = _pack([_flac(c, 16000) for c in _clips(rng, len(y), 16000)])
    path = Path(root) / "speech_commands" / "sc_v002_testset_flac.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(
        path,
        data=data,
        offsets=offsets,
        y=np.array(y, dtype=np.uint8),
        classes=np.array(classes),
        names=np.array([f"{i}.wav" for i in range(len(y))]),
        speaker=np.array(spk),
        sample_rate=np.int64(16000),
    )
    return path


def write_speech_tree(root: Path, num_speakers: int = 6, seed: int = 0) -> Path:
    """torchaudio ``SPEECHCOMMANDS`` tree: one wav per speaker for some keywords."""
    rng = np.random.default_rng(seed)
    tree = Path(root) / "SpeechCommands" / "speech_commands_v0.02"
    for s_i, s in enumerate(speakers(num_speakers)):
        for word in (KEYWORDS[s_i % 10], KEYWORDS[(s_i + 3) % 10]):
            (tree / word).mkdir(parents=True, exist_ok=True)
            sf.write(tree / word / f"{s}_nohash_0.wav", _clips(rng, 1, 16000)[0], 16000)
    (tree / "zero").mkdir(exist_ok=True)  # a non-keyword folder, ignored
    sf.write(tree / "zero" / "00000000_nohash_0.wav", np.zeros(16000, np.float32), 16000)
    return tree
