"""Forward passes: every registered model maps a batch of its inputs to (batch, classes)."""

from __future__ import annotations

import pytest
import torch

from fl_r2sp.models import MODELS, build_model, model_input_shape
from fl_r2sp.models.lstm import KwsLSTM
from fl_r2sp.models.resnet import resnet20


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("num_classes", [10, 5])
def test_forward_shape(name: str, num_classes: int) -> None:
    model = build_model(name, num_classes=num_classes)
    x = torch.randn((3, *model_input_shape(name)), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        out = model(x)
    assert out.shape == (3, num_classes)
    assert torch.isfinite(out).all()


def test_resnet_option_a_forward_shape() -> None:
    out = resnet20(num_classes=10, shortcut="A")(torch.zeros(2, 3, 32, 32))
    assert out.shape == (2, 10)


def test_resnet_rejects_unknown_shortcut() -> None:
    with pytest.raises(ValueError, match="shortcut"):
        resnet20(shortcut="C")  # type: ignore[arg-type]


def test_lstm_rejects_flat_input() -> None:
    with pytest.raises(ValueError, match="batch, frames, features"):
        KwsLSTM()(torch.zeros(2, 98 * 40))


def test_mlp_accepts_8x8_images() -> None:
    model = build_model("mlp")
    x = torch.arange(2 * 64, dtype=torch.float32).reshape(2, 64) / 128
    with torch.no_grad():
        assert torch.equal(model(x), model(x.reshape(2, 8, 8)))
