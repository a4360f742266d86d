"""numpy-app: a least-squares model in float64, its data and its gradient step.

Every partition draws IID samples of the same linear map, so every client's optimum is
the map itself, ``TARGET``: a gradient step of the quadratic loss ``0.5 ||w - TARGET||^2``
moves any model along the line between it and ``TARGET``. The values are not float32
numbers, so a float32 round trip anywhere shows at ~1e-8.
"""

import numpy as np

SHAPES = {"coef": (3, 4), "intercept": (4,)}


def _target() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {k: rng.normal(size=s) / 3.0 for k, s in SHAPES.items()}


TARGET = _target()


def initial_params() -> list[np.ndarray]:
    """The initial model (float64, not float32-representable)."""
    rng = np.random.default_rng(1)
    return [rng.normal(size=s) / 7.0 for s in SHAPES.values()]


def load_data(partition_id: int, num_partitions: int) -> int:
    """The partition's number of examples (the data only matters through its optimum)."""
    return 50 + 10 * (partition_id % num_partitions)


def train(params: list[np.ndarray], lr: float) -> tuple[list[np.ndarray], float]:
    """One gradient step toward the optimum; (new params, loss before the step)."""
    targets = list(TARGET.values())
    loss = sum(0.5 * float(np.sum((p - t) ** 2)) for p, t in zip(params, targets, strict=True))
    return [p - lr * (p - t) for p, t in zip(params, targets, strict=True)], loss


def loss(params: list[np.ndarray]) -> float:
    """0.5 ||w - optimum||^2."""
    return sum(
        0.5 * float(np.sum((p - t) ** 2)) for p, t in zip(params, TARGET.values(), strict=True)
    )
