"""Loaders on small generated fixtures in every supported on-disk layout."""

from __future__ import annotations

import io
import pickle
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from PIL import Image

from fl_r2sp.datasets import cifar, dataset_info, load_dataset, synthetic
from fl_r2sp.datasets.kws import KEYWORDS
from fl_r2sp.datasets.kws_audio import LOG_EPS, log_mel, read_clip


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FL_R2SP_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("FL_R2SP_DATA", raising=False)


def test_digits_split_is_stratified_and_scaled() -> None:
    train, test = load_dataset("digits", "train"), load_dataset("digits", "test")
    # 1,797 digits; per class round_half_up(0.2 * n_c) go to test -> 359.
    assert (len(train), len(test)) == (1438, 359)
    assert train.x.shape == (1438, 64) and train.x.dtype == np.float32
    assert train.y.dtype == np.int64 and train.x.min() >= 0.0 and train.x.max() <= 1.0
    np.testing.assert_array_equal(test.label_counts(), [36, 36, 35, 37, 36, 36, 36, 36, 35, 36])
    again = load_dataset("digits", "test")
    np.testing.assert_array_equal(again.x, test.x)


def test_cifar_npz_archive_decodes_and_normalizes(tmp_path: Path) -> None:
    path = synthetic.write_cifar_npz(tmp_path, "train", n=12)
    ds = load_dataset("cifar10", "train", data_dir=tmp_path)
    assert ds.x.shape == (12, 3, 32, 32) and ds.x.dtype == np.float32
    np.testing.assert_array_equal(ds.y, np.arange(12) % 10)
    with np.load(path) as z:
        blob = z["data"][z["offsets"][5] : z["offsets"][6]].tobytes()
    img = np.asarray(Image.open(io.BytesIO(blob)).convert("RGB"), dtype=np.float32) / 255
    expected = (img.transpose(2, 0, 1) - cifar.MEAN[:, None, None]) / cifar.STD[:, None, None]
    np.testing.assert_allclose(ds.x[5], expected, atol=1e-5)


def test_cifar_second_load_comes_from_cache(tmp_path: Path, monkeypatch) -> None:
    synthetic.write_cifar_npz(tmp_path, "test", n=5)
    first = load_dataset("cifar10", "test", data_dir=tmp_path)

    def _boom(path):  # a cache hit must not decode again
        raise AssertionError("decoded twice")

    monkeypatch.setattr(cifar, "_read_archive", _boom)
    second = load_dataset("cifar10", "test", data_dir=tmp_path)
    np.testing.assert_array_equal(first.x, second.x)
    assert list((tmp_path / "cache").glob("cifar10-npz-test-*/x.npy"))


def test_cifar_env_var_data_dir(tmp_path: Path, monkeypatch) -> None:
    synthetic.write_cifar_npz(tmp_path, "test", n=3)
    monkeypatch.setenv("FL_R2SP_DATA", str(tmp_path))
    assert len(load_dataset("cifar10", "test")) == 3


def test_cifar_torchvision_pickles(tmp_path: Path) -> None:
    folder = synthetic.write_cifar_pickles(tmp_path, per_batch=4)
    train = load_dataset("cifar10", "train", data_dir=tmp_path)
    test = load_dataset("cifar10", "test", data_dir=tmp_path)
    assert (len(train), len(test)) == (20, 4)
    with (folder / "test_batch").open("rb") as fh:
        entry = pickle.load(fh, encoding="bytes")
    raw = entry[b"data"].reshape(4, 3, 32, 32).astype(np.float32) / 255
    expected = (raw - cifar.MEAN[None, :, None, None]) / cifar.STD[None, :, None, None]
    np.testing.assert_allclose(test.x, expected, atol=1e-5)
    np.testing.assert_array_equal(test.y, entry[b"labels"])


def test_cifar_missing_names_paths_and_flag(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as err:
        load_dataset("cifar10", "train", data_dir=tmp_path)
    msg = str(err.value)
    assert "cifar-10-batches-py" in msg and "cifar10_train_jpeg.npz" in msg
    assert "download=True" in msg and "FL_R2SP_DATA" in msg


def test_cifar_download_failure_says_where_to_put_files(tmp_path: Path, monkeypatch) -> None:
    def offline(*args, **kwargs):
        raise OSError("network unreachable")

    # A stand-in module: the real torchvision import costs seconds and the
    # test only needs CIFAR10(download=True) to fail as it does offline.
    fake = types.SimpleNamespace(datasets=types.SimpleNamespace(CIFAR10=offline))
    monkeypatch.setitem(sys.modules, "torchvision", fake)
    with pytest.raises(FileNotFoundError, match="without network, place cifar-10-batches-py"):
        load_dataset("cifar10", "test", data_dir=tmp_path, download=True)


def test_corrupt_archives_raise_clear_errors(tmp_path: Path) -> None:
    bad = tmp_path / "cifar10" / "cifar10_train_jpeg.npz"
    bad.parent.mkdir()
    bad.write_bytes(b"not a zip file at all")
    with pytest.raises(ValueError, match="corrupt"):
        load_dataset("cifar10", "train", data_dir=tmp_path)
    np.savez(bad, data=np.zeros(3, np.uint8), offsets=np.array([0, 3]))  # no labels
    with pytest.raises(ValueError, match="missing fields"):
        load_dataset("cifar10", "train", data_dir=tmp_path)
    np.savez(bad, data=np.zeros(3, np.uint8), offsets=np.array([0, 3]), y=np.zeros(1, np.uint8))
    with pytest.raises(ValueError, match="record 0 is not a readable JPEG"):
        load_dataset("cifar10", "train", data_dir=tmp_path)
    (tmp_path / "cifar-10-batches-py").mkdir()
    for name in [f"data_batch_{i}" for i in range(1, 6)]:
        (tmp_path / "cifar-10-batches-py" / name).write_bytes(b"\x80garbage")
    with pytest.raises(ValueError, match="corrupt"):
        load_dataset("cifar10", "train", data_dir=tmp_path)


def test_kws_spectrograms_split_by_speaker(tmp_path: Path) -> None:
    synthetic.write_kws_npz(tmp_path, num_speakers=20, per_speaker=3)
    train = load_dataset("kws", "train", data_dir=tmp_path)
    test = load_dataset("kws", "test", data_dir=tmp_path)
    # 60 keyword clips (noise and "zero" dropped); 10 % of 20 speakers = 2 in test.
    assert (len(train), len(test)) == (54, 6)
    assert train.x.shape == (54, 98, 40) and train.num_classes == 10
    assert not set(train.groups) & set(test.groups)
    assert len(set(test.groups)) == 2
    assert abs(float(train.x.mean())) < 1e-4 and abs(float(train.x.std()) - 1) < 1e-3
    # Clip j of speaker s is keyword (3 s + j) % 10 in the fixture.
    spk = synthetic.speakers(20)
    expected = [(spk.index(g) * 3) % 10 for g in train.groups[::3]]
    np.testing.assert_array_equal(train.y[::3], expected)


def test_kws_audio_from_flac_archive(tmp_path: Path) -> None:
    synthetic.write_flac_npz(tmp_path, num_speakers=10, per_speaker=2)
    train = load_dataset("kws-audio", "train", data_dir=tmp_path)
    test = load_dataset("kws-audio", "test", data_dir=tmp_path)
    # 20 keyword clips (silence/unknown dropped); 1 of 10 speakers in test.
    assert (len(train), len(test)) == (18, 2)
    assert train.x.shape == (18, 98, 40) and train.x.dtype == np.float32
    assert not set(train.groups) & set(test.groups)
    assert set(train.y) | set(test.y) <= set(range(10))
    assert abs(float(train.x.mean())) < 1e-3


def test_kws_audio_from_torchaudio_tree(tmp_path: Path) -> None:
    tree = synthetic.write_speech_tree(tmp_path, num_speakers=6)
    # 8 kHz clip in the tree: resampled to 16 kHz on read.
    sf.write(tree / "yes" / "abcdef01_nohash_0.wav", np.zeros(8000, np.float32), 8000)
    train = load_dataset("kws-audio", "train", data_dir=tmp_path)
    test = load_dataset("kws-audio", "test", data_dir=tmp_path)
    assert len(train) + len(test) == 13  # 6 speakers x 2 words + 1; "zero" ignored
    assert len(set(test.groups)) == 1  # round_half_up(0.1 * 7) = 1 speaker


def test_read_clip_pads_crops_and_mixes(tmp_path: Path) -> None:
    short = tmp_path / "short.wav"
    sf.write(short, np.full((100, 2), 0.5, np.float32), 16000)
    clip = read_clip(short, "short")
    assert clip.shape == (16000,) and clip[:100] == pytest.approx(0.5, abs=1e-4)
    assert not clip[100:].any()
    long = tmp_path / "long.wav"
    sf.write(long, np.linspace(-0.5, 0.5, 20000, dtype=np.float32), 16000)
    assert read_clip(long, "long").shape == (16000,)
    (tmp_path / "bad.wav").write_bytes(b"RIFF nonsense")
    with pytest.raises(ValueError, match="cannot decode audio"):
        read_clip(tmp_path / "bad.wav", "bad")


def test_log_mel_frames_and_silence_value() -> None:
    feats = log_mel(np.zeros((2, 16000), np.float32))
    assert feats.shape == (2, 98, 40)  # 1 + (16000 - 400) // 160 frames
    np.testing.assert_allclose(feats, np.log(LOG_EPS), rtol=1e-6)


def test_missing_kws_files_name_paths(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="sc_v002_logmel98x40_jpeg.npz"):
        load_dataset("kws", "train", data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="speech_commands_v0.02"):
        load_dataset("kws-audio", "train", data_dir=tmp_path)


def test_unknown_names_and_info() -> None:
    with pytest.raises(ValueError, match="digits, cifar10, kws, kws-audio"):
        load_dataset("mnist", "train")
    with pytest.raises(ValueError, match="unknown split"):
        load_dataset("digits", "val")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown dataset"):
        dataset_info("imagenet")
    assert dataset_info("cifar10") == ((3, 32, 32), 10)
    assert dataset_info("kws") == ((98, 40), 10) == dataset_info("kws-audio")
    assert dataset_info("digits") == ((64,), 10)
    assert len(KEYWORDS) == 10


def test_damaged_cache_entry_is_rebuilt(tmp_path: Path) -> None:
    synthetic.write_cifar_npz(tmp_path, "test", n=4)
    first = load_dataset("cifar10", "test", data_dir=tmp_path)
    (x_file,) = (tmp_path / "cache").glob("cifar10-npz-test-*/x.npy")
    x_file.write_bytes(b"truncated")
    again = load_dataset("cifar10", "test", data_dir=tmp_path)
    np.testing.assert_array_equal(first.x, again.x)
