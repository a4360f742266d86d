"""CIFAR-sized AlexNet- and VGG16-style image classifiers (3x32x32 inputs).

The paper (Table I) trains TensorFlow's ImageNet-shaped AlexNet (240 MB) and VGG16 (552 MB)
on CIFAR-10; their size comes almost entirely from the 4096-wide fully connected layers. The
nets here are the CIFAR adaptations common in PyTorch code (the convolutional trunks scaled to
32x32 inputs, one linear classifier), so that they train on a CPU. Their communication share
is therefore smaller than the paper's; the virtual twin uses Table I's byte sizes instead when
it reproduces the paper's figures.
"""

from __future__ import annotations

import torch
from torch import nn

#: VGG16's convolution widths; "M" is a 2x2 max-pool (five of them: 32 -> 1 pixel).
# fmt: off
VGG16_LAYERS: tuple[int | str, ...] = (
    64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M",
)
# fmt: on


class CifarAlexNet(nn.Module):
    """AlexNet's five-conv trunk for 32x32 images, then one linear classifier.

    conv11/4(64) - pool - conv5(192) - pool - conv3(384) - conv3(256) - conv3(256) - pool -
    linear(256 -> classes), ReLU after every conv: 2,472,266 parameters (9.9 MB of float32)
    for 10 classes. No dropout, so that a forward pass uses no random numbers.

    Parameters
    ----------
    num_classes : int, default 10
        Number of output logits.
    """

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=5),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(256, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map (batch, 3, 32, 32) images to (batch, num_classes) logits."""
        return self.classifier(self.features(x).flatten(1))


class CifarVGG16(nn.Module):
    """VGG16's thirteen 3x3 convolutions for 32x32 images, then one linear classifier.

    With ``batch_norm=True`` (the default, as in the usual CIFAR VGG code) every conv is
    followed by BatchNorm: 14,728,266 parameters (58.9 MB) for 10 classes; without it
    14,719,818. BatchNorm makes the net train at the paper's learning rate 0.01 without
    warm-up; its running statistics are buffers, not parameters, so they stay local to
    each worker and are not exchanged with the parameter servers.

    Parameters
    ----------
    num_classes : int, default 10
        Number of output logits.
    batch_norm : bool, default True
        Insert BatchNorm after each convolution.
    """

    def __init__(self, num_classes: int = 10, batch_norm: bool = True) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        in_ch = 3
        for width in VGG16_LAYERS:
            if width == "M":
                layers.append(nn.MaxPool2d(2))
                continue
            assert isinstance(width, int)
            layers.append(nn.Conv2d(in_ch, width, kernel_size=3, padding=1))
            if batch_norm:
                layers.append(nn.BatchNorm2d(width))
            layers.append(nn.ReLU(inplace=True))
            in_ch = width
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(512, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map (batch, 3, 32, 32) images to (batch, num_classes) logits."""
        return self.classifier(self.features(x).flatten(1))
