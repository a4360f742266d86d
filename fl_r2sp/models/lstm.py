"""LSTM keyword-spotting model over 98 log-mel frames of 40 bins.

Size choice: the paper gives no architecture, only that the LSTM's
uncontended transfer takes 0.03 s like the 0.25 MB CNN (see
``docs/paper-notes.md`` §4). Two layers of 64 hidden
units plus a linear head have 27,136 + 33,280 + 650 = 61,066 parameters
(0.24 MB as float32), the same size class as the LeNet CNN.
"""

from __future__ import annotations

import torch
from torch import nn


class KwsLSTM(nn.Module):
    """Stacked LSTM over (batch, frames, features); classifies from the last step.

    Parameters
    ----------
    num_classes : int, default 10
        Number of keywords (Speech Commands' 10 keywords).
    n_features : int, default 40
        Log-mel / MFCC bins per frame.
    hidden : int, default 64
        LSTM hidden size.
    num_layers : int, default 2
        Number of stacked LSTM layers.
    """

    def __init__(
        self,
        num_classes: int = 10,
        n_features: int = 40,
        hidden: int = 64,
        num_layers: int = 2,
    ) -> None:
        super().__init__()
        self.lstm = nn.LSTM(n_features, hidden, num_layers=num_layers, batch_first=True)
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map (batch, frames, n_features) to (batch, num_classes) logits."""
        if x.dim() != 3:
            raise ValueError(
                f"KwsLSTM expects (batch, frames, features), got shape {tuple(x.shape)}"
            )
        out, _ = self.lstm(x)
        logits: torch.Tensor = self.head(out[:, -1, :])  # nn.Module calls are typed Any
        return logits
