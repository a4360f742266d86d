"""A torchvision ResNet-18 on CIFAR-10, trained with R²SP on 4 workers: your own job in cluster
mode.

The three factories below are all the package needs (their contract: ``fl_r2sp.cluster.userjob``);
run them from this folder with the Python API::

    python job.py --iterations 20

or with the command line, naming them by import path::

    PYTHONPATH=. python -m fl_r2sp.cluster --scheme r2sp --workers 4 --servers 1 \\
        --model job:resnet18 --dataset job:cifar10 --evaluate job:test_accuracy \\
        --batch-size 32 --lr 0.05 --iterations 20

CIFAR-10 is read locally (never downloaded) from the project's data folder: ``--data-dir``,
else ``$FL_R2SP_DATA``, else ``data/`` or ``../shared/data`` beside the checkout.
"""

from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.utils.data import TensorDataset
from torchvision.models import resnet18 as tv_resnet18

from fl_r2sp.datasets.cifar import load_cifar10

#: Test images the evaluation reads (a seeded subset: the files are sorted by class).
TEST_IMAGES = 2000


def resnet18() -> nn.Module:
    """torchvision's ResNet-18, untrained, with 10 outputs (the job seeds its initial weights)."""
    net: nn.Module = tv_resnet18(weights=None, num_classes=10)
    return net


def cifar10(data_dir: str | None = None) -> TensorDataset:
    """CIFAR-10's 50,000 training images, normalised, as a map-style dataset of ``(x, y)``."""
    train = load_cifar10("train", data_dir)
    return TensorDataset(torch.from_numpy(train.x), torch.from_numpy(train.y))


def test_accuracy(model: nn.Module, device: torch.device, seed: int,
                  data_dir: str | None = None) -> dict[str, float]:  # fmt: skip
    """Top-1 accuracy of the final model on a seeded subset of the test split."""
    test = load_cifar10("test", data_dir)
    pick = torch.randperm(len(test.y), generator=torch.Generator().manual_seed(seed))
    x, y = (
        torch.from_numpy(test.x)[pick[:TEST_IMAGES]],
        torch.from_numpy(test.y)[pick[:TEST_IMAGES]],
    )
    correct = sum(int((model(x[i : i + 250].to(device)).argmax(1).cpu() == y[i : i + 250]).sum())
                  for i in range(0, len(y), 250))  # fmt: skip
    return {"test_accuracy": correct / len(y), "test_images": float(len(y))}


def main() -> None:
    import fl_r2sp.cluster as cluster

    parser = argparse.ArgumentParser(description="ResNet-18 on CIFAR-10 with R²SP, 4 workers")
    parser.add_argument("--iterations", type=int, default=20, help="iterations per worker [20]")
    parser.add_argument("--devices", default="cpu", help="cpu or cuda [cpu]")
    args = parser.parse_args()
    result = cluster.train(model=resnet18, dataset=cifar10, evaluate=test_accuracy,
                           scheme="r2sp", workers=4, servers=1, batch_size=32, lr=0.05,
                           iterations=args.iterations, devices=(args.devices,),
                           run_dir="runs/cluster", progress=10.0)  # fmt: skip
    net = resnet18()
    net.load_state_dict(result.state_dict)  # the trained weights, in your own module
    summary = result.summary
    print(f"run folder {result.run_dir}: {summary['pushes']} pushes in "
          f"{summary['elapsed_s']:.1f} s, final loss {summary['final_loss']:.3f}, test accuracy "
          f"{summary['test_accuracy']:.3f}")  # fmt: skip


if __name__ == "__main__":  # the rank processes import this file: no training at import
    main()
