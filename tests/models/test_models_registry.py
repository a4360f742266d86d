"""Registry: names, dataset compatibility, sizes (hand-counted), deterministic construction."""

from __future__ import annotations

import pytest
import torch

from fl_r2sp.models import (
    MODELS,
    build_model,
    count_parameters,
    get_flat_weights,
    model_input_shape,
    resolve_model_name,
    serialized_size,
)
from fl_r2sp.models.resnet import resnet20

# Hand counts (weights + biases per layer), see each model's docstring.
LENET = (3 * 6 * 25 + 6) + (6 * 16 * 25 + 16) + (400 * 120 + 120) + (120 * 84 + 84) + (84 * 10 + 10)
FEDAVG = (3 * 32 * 25 + 32) + (32 * 64 * 25 + 64) + (4096 * 512 + 512) + (512 * 10 + 10)
LSTM = 4 * 64 * (40 + 64 + 2) + 4 * 64 * (64 + 64 + 2) + (64 * 10 + 10)
MLP = (64 * 64 + 64) + (64 * 10 + 10)
# ResNet-20 BN channels: stem 16 + 6 BN per stage x (16, 32, 64) = 688.
RESNET_BN_A = 16 + 6 * (16 + 32 + 64)
RESNET_A = (
    (
        3 * 16 * 9
        + 6 * 16 * 16 * 9
        + (16 * 32 * 9 + 5 * 32 * 32 * 9)
        + (32 * 64 * 9 + 5 * 64 * 64 * 9)
    )
    + 2 * RESNET_BN_A
    + (64 * 10 + 10)
)
RESNET_B = RESNET_A + (16 * 32 + 32 * 64) + 2 * (32 + 64)


def test_parameter_counts_match_hand_counts() -> None:
    assert LENET == 62_006 and RESNET_B == 272_474 and RESNET_A == 269_722
    expected = {
        "mlp": MLP,
        "cnn": LENET,
        "cnn-fedavg": FEDAVG,
        "resnet20": RESNET_B,
        "resnet20-a": RESNET_A,
        "lstm": LSTM,
    }
    assert set(expected) == set(MODELS)
    for name, count in expected.items():
        assert count_parameters(build_model(name)) == count, name
    assert count_parameters(resnet20(shortcut="A")) == RESNET_A


def test_serialized_size_is_four_bytes_per_state_value() -> None:
    for name in ("mlp", "cnn", "cnn-fedavg", "lstm"):  # no buffers: 4 x params
        model = build_model(name)
        assert serialized_size(model) == 4 * count_parameters(model)
    # ResNet-20 (option B): + running mean and var of 688 + 96 BN channels,
    # + one num_batches_tracked per BN layer (19 + 2 shortcut BNs).
    model = build_model("resnet20")
    assert serialized_size(model) == 4 * (272_474 + 2 * (688 + 96) + 21) == 1_096_252
    assert serialized_size(model) == 4 * get_flat_weights(model).size


def test_resolve_auto_and_explicit_names() -> None:
    assert resolve_model_name("auto", "digits") == "mlp"
    assert resolve_model_name("auto", "cifar10") == "cnn"
    assert resolve_model_name("auto", "kws") == "lstm"
    assert resolve_model_name("auto", "kws-audio") == "lstm"
    assert resolve_model_name("resnet20", "cifar10") == "resnet20"
    assert resolve_model_name("cnn-fedavg", "cifar10") == "cnn-fedavg"


@pytest.mark.parametrize(
    ("model", "dataset", "match"),
    [
        ("lstm", "cifar10", "does not produce"),
        ("cnn", "kws", "does not produce"),
        ("resnet20", "digits", "does not produce"),
        ("vgg16", "cifar10", "unknown model 'vgg16'"),
        ("auto", "mnist", "unknown dataset 'mnist'"),
    ],
)
def test_resolve_rejects_bad_pairs(model: str, dataset: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        resolve_model_name(model, dataset)


def test_build_rejects_auto_and_unknown_names() -> None:
    with pytest.raises(ValueError, match="resolve_model_name"):
        build_model("auto")
    with pytest.raises(ValueError, match="unknown model"):
        build_model("nope")
    with pytest.raises(ValueError, match="num_classes"):
        build_model("mlp", num_classes=0)


def test_build_is_seeded_and_leaves_global_rng_alone() -> None:
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    a = get_flat_weights(build_model("cnn", seed=7))
    after = torch.rand(3)
    b = get_flat_weights(build_model("cnn", seed=7))
    c = get_flat_weights(build_model("cnn", seed=8))
    assert (a == b).all()
    assert not (a == c).all()
    assert torch.equal(before, after)  # the caller's global stream is untouched


def test_input_shapes() -> None:
    assert model_input_shape("mlp") == (64,)
    assert model_input_shape("cnn") == (3, 32, 32)
    assert model_input_shape("resnet20") == (3, 32, 32)
    assert model_input_shape("lstm") == (98, 40)
    with pytest.raises(ValueError, match="unknown model"):
        model_input_shape("gru")
