"""CIFAR ResNet-20 of He et al. (2016, §4.2): 3 stages x 3 basic blocks, 16/32/64 channels.

Shortcut choice. He et al.'s CIFAR nets use option A (identity shortcuts,
zero-padded channels, stride-2 subsampling): 269,722 parameters. The count
this project calibrates transfer times on, 272,474 (1.09 MB, see
``docs/paper-notes.md`` §4), is the same net with option B
on the two downsampling blocks (1x1 conv + BatchNorm projection: 16*32 + 32*64
weights + 2*(32+64) BN affine = 2,752 more). The registry's ``resnet20`` uses
option B so that its size matches the calibration; ``shortcut="A"`` gives the
paper-exact option-A net. Both are "0.27M" as He et al. report.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

Shortcut = Literal["A", "B"]


class _PadShortcut(nn.Module):
    """Option A: subsample by ``stride`` and zero-pad the extra channels (no parameters)."""

    def __init__(self, extra_channels: int, stride: int) -> None:
        super().__init__()
        self.extra = extra_channels
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x[:, :, :: self.stride, :: self.stride]
        # Pad the channel dim on both sides, like the reference Torch code.
        half = self.extra // 2
        return F.pad(x, (0, 0, 0, 0, half, self.extra - half))


def _shortcut(in_ch: int, out_ch: int, stride: int, kind: Shortcut) -> nn.Module:
    if stride == 1 and in_ch == out_ch:
        return nn.Identity()
    if kind == "A":
        return _PadShortcut(out_ch - in_ch, stride)
    return nn.Sequential(
        nn.Conv2d(in_ch, out_ch, kernel_size=1, stride=stride, bias=False),
        nn.BatchNorm2d(out_ch),
    )


class BasicBlock(nn.Module):
    """Two 3x3 conv-BN layers with a shortcut: relu(bn(conv(relu(bn(conv(x))))) + s(x))."""

    def __init__(self, in_ch: int, out_ch: int, stride: int, shortcut: Shortcut) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_ch)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_ch)
        self.shortcut = _shortcut(in_ch, out_ch, stride, shortcut)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    """CIFAR ResNet with 6n+2 layers (n = ``blocks_per_stage``; n = 3 is ResNet-20).

    Parameters
    ----------
    num_classes : int, default 10
        Number of output logits.
    blocks_per_stage : int, default 3
        Basic blocks in each of the three stages.
    shortcut : {"B", "A"}, default "B"
        Shortcut of the downsampling blocks: "B" = 1x1 conv + BN projection
        (272,474 parameters for ResNet-20), "A" = zero-padded identity
        (269,722). See the module docstring for why "B" is the default.
    """

    def __init__(
        self, num_classes: int = 10, blocks_per_stage: int = 3, shortcut: Shortcut = "B"
    ) -> None:
        super().__init__()
        if shortcut not in ("A", "B"):
            raise ValueError(f"shortcut must be 'A' or 'B', got {shortcut!r}")
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        layers: list[nn.Module] = []
        in_ch = 16
        for stage, out_ch in enumerate((16, 32, 64)):
            for b in range(blocks_per_stage):
                stride = 2 if stage > 0 and b == 0 else 1
                layers.append(BasicBlock(in_ch, out_ch, stride, shortcut))
                in_ch = out_ch
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(64, num_classes)
        for m in self.modules():
            # He et al. initialise conv (and, in common CIFAR code, linear) weights
            # with the "MSRA" normal; the caller fixes the RNG (build_model).
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map (batch, 3, 32, 32) images to (batch, num_classes) logits."""
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layers(out)
        out = F.adaptive_avg_pool2d(out, 1).flatten(1)
        logits: torch.Tensor = self.fc(out)  # nn.Module calls are typed Any
        return logits


def resnet20(num_classes: int = 10, shortcut: Shortcut = "B") -> CifarResNet:
    """Build ResNet-20 (3 blocks per stage); see ``CifarResNet`` for ``shortcut``."""
    return CifarResNet(num_classes=num_classes, blocks_per_stage=3, shortcut=shortcut)
