"""Central evaluation (hand-computed loss/accuracy) and the seeded crop+flip augmentation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from fl_r2sp.training import evaluate, random_crop_flip


def identity_logits() -> nn.Module:
    """A 2-class model whose logits are its inputs."""
    model = nn.Linear(2, 2)
    with torch.no_grad():
        model.weight.copy_(torch.eye(2))
        model.bias.zero_()
    return model


X = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0]], dtype=np.float32)
Y = np.array([0, 1, 1])
# Cross-entropy = log(1 + exp(other - own)): predictions 0, 1, 0 -> 2 of 3 right.
LOSS = (math.log1p(math.exp(-2)) + math.log1p(math.exp(-1)) + math.log1p(math.exp(3))) / 3


@pytest.mark.parametrize("batch_size", [1, 2, 512])
def test_evaluate_hand_values(batch_size: int) -> None:
    result = evaluate(identity_logits(), X, Y, batch_size=batch_size)
    assert result.num_examples == 3
    assert result.accuracy == pytest.approx(2 / 3)
    assert result.loss == pytest.approx(LOSS, rel=1e-6)


def test_evaluate_restores_training_mode() -> None:
    model = identity_logits()
    model.train()
    evaluate(model, X, Y)
    assert model.training
    model.eval()
    evaluate(model, X, Y)
    assert not model.training


def test_evaluate_errors() -> None:
    with pytest.raises(ValueError, match="no examples"):
        evaluate(identity_logits(), X[:0], Y[:0])
    with pytest.raises(ValueError, match="label 2 but the model has only 2 outputs"):
        evaluate(identity_logits(), X, np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="batch_size"):
        evaluate(identity_logits(), X, Y, batch_size=0)


def test_crop_flip_moves_pixels_by_offsets() -> None:
    # One 1x1x3x3 image with distinct values; every output pixel must be an
    # input pixel or padding (0), and the multiset of values is a crop.
    img = torch.arange(1, 10, dtype=torch.float32).reshape(1, 1, 3, 3)
    imgs = img.repeat(64, 1, 1, 1)
    out = random_crop_flip(imgs, torch.Generator().manual_seed(0), pad=1)
    assert out.shape == imgs.shape
    assert set(out.unique().tolist()) <= set(range(10))
    # Centre offset and no flip must reproduce the image; flip only mirrors columns.
    assert any(torch.equal(o, img[0]) for o in out)
    assert any(torch.equal(o, img[0].flip(-1)) for o in out)
    assert not all(torch.equal(o, img[0]) for o in out)


def test_crop_flip_is_seeded() -> None:
    imgs = torch.randn(8, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    a = random_crop_flip(imgs, torch.Generator().manual_seed(5))
    b = random_crop_flip(imgs, torch.Generator().manual_seed(5))
    c = random_crop_flip(imgs, torch.Generator().manual_seed(6))
    assert torch.equal(a, b) and not torch.equal(a, c)
    with pytest.raises(ValueError, match="batch, C, H, W"):
        random_crop_flip(imgs[0], torch.Generator())
