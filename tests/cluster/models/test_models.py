"""Cluster-mode models: sizes, shapes, determinism and the shared loss."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from fl_r2sp.cluster.models import (
    MODEL_NAMES,
    CifarVGG16,
    batch_loss,
    build_cluster_model,
    check_model_dataset,
    model_spec,
    param_count,
)


def _block_params(width: int) -> int:
    """One basic block without downsampling: two 3x3 convs (no bias) + two BN affine pairs."""
    return 2 * (9 * width * width) + 2 * (2 * width)


def test_resnet32_has_he_et_al_parameter_count() -> None:
    # ResNet-20 with option-A shortcuts has 269,722 parameters (fl_r2sp.models.resnet);
    # ResNet-32 adds two plain blocks per stage (widths 16, 32, 64).
    expected = 269_722 + 2 * sum(_block_params(w) for w in (16, 32, 64))
    assert expected == 464_154
    assert param_count(build_cluster_model("resnet32")) == expected
    assert round(expected / 1e6, 2) == 0.46  # He et al.'s "0.46M"


@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("mlp", 64 * 64 + 64 + 64 * 10 + 10),
        ("mlp-wide", 64 * 16384 + 16384 + 16384 * 10 + 10),
        # conv11(3->64) conv5(64->192) conv3(192->384, 384->256, 256->256), all with bias; fc.
        (
            "alexnet",
            3 * 64 * 121
            + 64
            + 64 * 192 * 25
            + 192
            + 192 * 384 * 9
            + 384
            + 384 * 256 * 9
            + 256
            + 256 * 256 * 9
            + 256
            + 256 * 10
            + 10,
        ),
    ],
)
def test_parameter_counts_match_the_layer_arithmetic(name: str, count: int) -> None:
    assert param_count(build_cluster_model(name)) == count


def test_vgg16_batchnorm_adds_two_parameters_per_channel() -> None:
    channels = 2 * 64 + 2 * 128 + 3 * 256 + 6 * 512
    plain = param_count(CifarVGG16(batch_norm=False))
    assert param_count(build_cluster_model("vgg16")) - plain == 2 * channels
    convs = [
        (3, 64),
        (64, 64),
        (64, 128),
        (128, 128),
        (128, 256),
        (256, 256),
        (256, 256),
        (256, 512),
    ] + [(512, 512)] * 5
    assert plain == sum(9 * i * o + o for i, o in convs) + 512 * 10 + 10


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_forward_gives_logits_of_num_classes(name: str) -> None:
    spec = model_spec(name)
    model = build_cluster_model(name, num_classes=7)
    if spec.input_dtype == torch.int64:
        x = torch.randint(0, 7, (2, 2, 5))
        expected = (2, 5, 7)
    else:
        x = torch.zeros((2, *spec.input_shape))
        expected = (2, 7)
    assert tuple(model(x).shape) == expected


def test_build_is_deterministic_per_seed_and_leaves_global_rng_alone() -> None:
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = build_cluster_model("resnet32", seed=4)
    assert torch.equal(torch.rand(1), before)
    b = build_cluster_model("resnet32", seed=4)
    c = build_cluster_model("resnet32", seed=5)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    assert not torch.equal(a.fc.weight, c.fc.weight)  # type: ignore[union-attr]


def test_resnet32_classifier_has_pytorch_default_init_and_fl_resnet_keeps_msra() -> None:
    from fl_r2sp.models.resnet import CifarResNet

    # nn.Linear's default draws weight and bias from U(-1/sqrt(64), 1/sqrt(64)) = U(-1/8, 1/8).
    fc = build_cluster_model("resnet32", seed=0).fc.requires_grad_(False)  # type: ignore[union-attr]
    assert float(fc.weight.abs().max()) <= 1 / 8 and float(fc.bias.abs().max()) <= 1 / 8
    assert float(fc.bias.abs().max()) > 0  # not zeroed
    # The FL side's net keeps the MSRA normal (std sqrt(2/64) ~ 0.18): 640 draws exceed 1/8.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        fl_fc = CifarResNet(10, blocks_per_stage=5, shortcut="A").fc.requires_grad_(False)
    assert float(fl_fc.weight.abs().max()) > 1 / 8
    assert tuple(fl_fc.weight.shape) == tuple(fc.weight.shape) == (10, 64)


def test_unknown_model_and_bad_class_count_raise() -> None:
    with pytest.raises(ValueError, match="unknown cluster model 'resnet18'"):
        build_cluster_model("resnet18")
    with pytest.raises(ValueError, match="num_classes"):
        build_cluster_model("mlp", num_classes=0)


def test_model_dataset_compatibility() -> None:
    check_model_dataset("resnet32", "cifar10")
    check_model_dataset("transformer", "reverse")
    with pytest.raises(ValueError, match="does not take dataset 'cifar10'"):
        check_model_dataset("transformer", "cifar10")
    with pytest.raises(ValueError, match="'copy'"):
        check_model_dataset("alexnet", "copy")


def test_batch_loss_is_cross_entropy_for_classes_and_tokens() -> None:
    mlp = build_cluster_model("mlp")
    x, y = torch.randn(4, 64), torch.tensor([0, 1, 2, 3])
    assert torch.allclose(batch_loss(mlp, x, y), F.cross_entropy(mlp(x), y))
    tr = build_cluster_model("transformer", num_classes=5)
    tokens = torch.randint(1, 5, (3, 2, 4))
    targets = torch.randint(1, 5, (3, 4))
    with torch.no_grad():
        logits = tr(tokens)
        loss = batch_loss(tr, tokens, targets).item()
    manual = (
        sum(
            F.cross_entropy(logits[i, j][None], targets[i, j][None])
            for i in range(3)
            for j in range(4)
        )
        / 12
    )
    assert math.isclose(loss, float(manual), rel_tol=1e-5)


def test_transformer_decoder_is_causal() -> None:
    # Changing a later decoder token must not change the logits of earlier positions.
    model = build_cluster_model("transformer")
    x = torch.randint(1, 10, (1, 2, 6))
    y = x.clone()
    y[0, 1, 4] = (x[0, 1, 4] % 9) + 1
    out_x, out_y = model(x), model(y)
    assert torch.allclose(out_x[0, :4], out_y[0, :4], atol=1e-5)
    assert not torch.allclose(out_x[0, 4], out_y[0, 4])
