"""CNNs for 3x32x32 CIFAR-10 images.

``LeNetCNN`` is the default CIFAR-10 model: 62,006 parameters (0.25 MB as
float32), the size implied by the paper's 0.03 s uncontended CNN transfer
(see ``docs/paper-notes.md`` §4). ``FedAvgCNN`` is the
larger two-conv CNN of McMahan et al. (2017), 2,156,490 parameters on 3x32x32
inputs, kept as an option.
"""

from __future__ import annotations

import torch
from torch import nn


class LeNetCNN(nn.Module):
    """LeNet-5-sized CNN: conv(3->6, 5x5), pool, conv(6->16, 5x5), pool, fc 400->120->84->C.

    Parameters
    ----------
    num_classes : int, default 10
        Number of output logits. With 10 classes the net has
        456 + 2,416 + 48,120 + 10,164 + 850 = 62,006 parameters.
    """

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 6, kernel_size=5),  # 32 -> 28
            nn.ReLU(),
            nn.MaxPool2d(2),  # 28 -> 14
            nn.Conv2d(6, 16, kernel_size=5),  # 14 -> 10
            nn.ReLU(),
            nn.MaxPool2d(2),  # 10 -> 5, so 16 * 5 * 5 = 400 features
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(16 * 5 * 5, 120),
            nn.ReLU(),
            nn.Linear(120, 84),
            nn.ReLU(),
            nn.Linear(84, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map (batch, 3, 32, 32) images to (batch, num_classes) logits."""
        logits: torch.Tensor = self.classifier(self.features(x))  # nn.Module calls are typed Any
        return logits


class FedAvgCNN(nn.Module):
    """Two-conv CNN of McMahan et al.: conv 5x5x32, pool, conv 5x5x64, pool, fc 512, fc C.

    Convolutions use 'same' padding (as in the FedAvg paper), so 32x32 inputs
    give 64 x 8 x 8 = 4,096 features and 2,156,490 parameters with 10
    classes (≈ 8.6 MB as float32).

    Parameters
    ----------
    num_classes : int, default 10
        Number of output logits.
    """

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, kernel_size=5, padding=2),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 32 -> 16
            nn.Conv2d(32, 64, kernel_size=5, padding=2),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 16 -> 8
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(64 * 8 * 8, 512),
            nn.ReLU(),
            nn.Linear(512, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map (batch, 3, 32, 32) images to (batch, num_classes) logits."""
        logits: torch.Tensor = self.classifier(self.features(x))  # nn.Module calls are typed Any
        return logits
