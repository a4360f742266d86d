"""flower-app: the model, the data and the train/test loops (as Flower's PyTorch template).

The data is scikit-learn's bundled digits set (1797 8x8 images, no download): a fixed
shuffle holds out 20 % as the central test set, and the rest is split IID into
``num_partitions`` shards, each 80 % train / 20 % local test.
"""

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    """A small MLP: 64 pixels -> 64 -> 10 classes."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def _digits() -> tuple[np.ndarray, np.ndarray]:
    bunch = load_digits()
    x = (bunch.data / 16.0).astype(np.float32)
    order = np.random.default_rng(0).permutation(len(x))
    return x[order], bunch.target[order].astype(np.int64)


def _loader(x: np.ndarray, y: np.ndarray, batch_size: int, shuffle: bool) -> DataLoader:
    data = TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    return DataLoader(data, batch_size=batch_size, shuffle=shuffle)


def load_data(partition_id: int, num_partitions: int, batch_size: int = 32):
    """Train and test loaders of one partition."""
    x, y = _digits()
    cut = int(0.8 * len(x))
    shard = np.array_split(np.arange(cut), num_partitions)[partition_id]
    split = int(0.8 * len(shard))
    train, test = shard[:split], shard[split:]
    return (
        _loader(x[train], y[train], batch_size, shuffle=True),
        _loader(x[test], y[test], batch_size, shuffle=False),
    )


def load_centralized_dataset(batch_size: int = 128) -> DataLoader:
    """The held-out central test set."""
    x, y = _digits()
    cut = int(0.8 * len(x))
    return _loader(x[cut:], y[cut:], batch_size, shuffle=False)


def train(net: Net, trainloader: DataLoader, epochs: int, lr: float, device: str) -> float:
    """Train the model on the training set; the mean loss."""
    net.to(device)
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    net.train()
    running_loss = 0.0
    for _ in range(epochs):
        for images, labels in trainloader:
            optimizer.zero_grad()
            loss = criterion(net(images.to(device)), labels.to(device))
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
    return running_loss / (epochs * len(trainloader))


def test(net: Net, testloader: DataLoader, device: str) -> tuple[float, float]:
    """Validate the model on the test set; (loss, accuracy)."""
    net.to(device)
    criterion = nn.CrossEntropyLoss()
    correct, loss = 0, 0.0
    net.eval()
    with torch.no_grad():
        for images, labels in testloader:
            outputs = net(images.to(device))
            loss += criterion(outputs, labels.to(device)).item()
            correct += (torch.max(outputs.data, 1)[1] == labels.to(device)).sum().item()
    return loss / len(testloader), correct / len(testloader.dataset)
