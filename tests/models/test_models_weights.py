"""Flat weights exchange: round trips (float and integer buffers) and clear errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fl_r2sp.models import (
    arrays_to_state,
    build_model,
    flatten,
    get_flat_weights,
    set_flat_weights,
    state_to_arrays,
    unflatten,
)


def test_state_to_arrays_copies_in_state_dict_order() -> None:
    model = build_model("mlp")
    arrays = state_to_arrays(model)
    keys = list(model.state_dict())
    assert [a.shape for a in arrays] == [tuple(model.state_dict()[k].shape) for k in keys]
    arrays[0][...] = 0.0  # a copy: the model must not change
    assert model.state_dict()[keys[0]].abs().sum() > 0


def test_flatten_unflatten_round_trip_hand_values() -> None:
    like = [np.zeros((2, 2), np.float32), np.zeros((), np.int64), np.zeros(3, np.float64)]
    vec = np.array([1, 2, 3, 4, 6.6, 0.5, -1, 2], dtype=np.float32)
    out = unflatten(vec, like)
    assert out[0].tolist() == [[1, 2], [3, 4]] and out[0].dtype == np.float32
    assert out[1] == 7 and out[1].dtype == np.int64  # 6.6 rounds to 7
    assert out[2].dtype == np.float64 and out[2].tolist() == [0.5, -1, 2]
    assert np.array_equal(flatten(out), np.array([1, 2, 3, 4, 7, 0.5, -1, 2], np.float32))
    assert flatten([]).shape == (0,)


def test_resnet_round_trip_restores_integer_buffers() -> None:
    model = build_model("resnet20")
    model.train()
    with torch.no_grad():
        model(torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(0)))
    arrays = state_to_arrays(model)
    back = unflatten(flatten(arrays), arrays)
    assert all(
        a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(arrays, back, strict=True)
    )
    tracked = [
        a
        for k, a in zip(model.state_dict(), back, strict=True)
        if k.endswith("num_batches_tracked")
    ]
    assert len(tracked) == 21 and all(int(t) == 1 for t in tracked)

    fresh = build_model("resnet20", seed=1)
    set_flat_weights(fresh, get_flat_weights(model))
    for (k, a), b in zip(model.state_dict().items(), fresh.state_dict().values(), strict=True):
        assert a.dtype == b.dtype and torch.equal(a, b), k


def test_arrays_to_state_loads_and_rounds_float_ints() -> None:
    model = build_model("resnet20")
    arrays = [a.astype(np.float32) for a in state_to_arrays(build_model("resnet20", seed=3))]
    key = "bn1.num_batches_tracked"
    idx = list(model.state_dict()).index(key)
    arrays[idx] = np.array(4.7, dtype=np.float32)
    arrays_to_state(model, arrays)
    assert model.state_dict()[key].dtype == torch.int64 and int(model.state_dict()[key]) == 5
    assert np.array_equal(state_to_arrays(model)[0], arrays[0])


def test_arrays_to_state_errors() -> None:
    model = build_model("mlp")
    arrays = state_to_arrays(model)
    with pytest.raises(ValueError, match="got 3 arrays but the model's state dict has 4"):
        arrays_to_state(model, arrays[:3])
    bad = arrays[:-1] + [np.zeros(5, np.float32)]
    with pytest.raises(ValueError, match=r"'net.3.bias' has shape \(5,\), model expects \(10,\)"):
        arrays_to_state(model, bad)


def test_unflatten_rejects_wrong_length() -> None:
    like = [np.zeros(3, np.float32)]
    with pytest.raises(ValueError, match=r"expected \(3,\)"):
        unflatten(np.zeros(4, np.float32), like)
    with pytest.raises(ValueError, match=r"expected \(3,\)"):
        unflatten(np.zeros((1, 3), np.float32), like)
