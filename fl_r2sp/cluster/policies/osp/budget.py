"""OSP's ICS budget S(G^u): U_max (Eq. 5) and the per-epoch schedule (Algorithm 1).

``U_max = b·(1+lr)·T_C / N`` as printed (b bandwidth in bytes/s, lr the loss rate, T_C the
compute time of one iteration, N workers): the ICS traffic of all N workers must fit in one
iteration's computation. The (1+lr) factor looks inverted (loss should shrink the usable rate),
so ``loss_form="divided"`` gives ``b·T_C / (N(1+lr))``. Either is capped at ``cap_fraction``
(the paper's 80%) of the model size. Schedule: epoch 1 has S = 0 and sets L = loss_1; epoch
i > 1 has ``S_i = (1 − loss_i / L)·U_max``, clamped to [0, U_max] (*ours*: the paper assumes the
loss falls towards 0 and never exceeds L).
"""

from __future__ import annotations

import math

#: S(G^u) rules: Algorithm 1's per-epoch schedule, or a fixed byte budget.
BUDGETS: tuple[str, ...] = ("scheduled", "fixed")
#: Eq. 5 as printed, b(1+lr)·T_C/N, or divided, b·T_C/(N(1+lr)).
LOSS_FORMS: tuple[str, ...] = ("printed", "divided")


def u_max(
    bandwidth: float,
    loss_rate: float,
    compute_s: float,
    num_workers: int,
    model_bytes: float,
    cap_fraction: float,
    loss_form: str,
) -> float:
    """U_max in bytes (see the module docstring).

    Parameters
    ----------
    bandwidth : float
        b in bytes/s (> 0).
    loss_rate : float
        lr in [0, 1).
    compute_s : float
        T_C in seconds (>= 0).
    num_workers : int
        N >= 1.
    model_bytes : float
        Model size in bytes (> 0).
    cap_fraction : float
        Cap as a fraction of ``model_bytes``, in (0, 1] (the record's default: the paper's 0.8).
    loss_form : str
        "printed" (multiply by 1 + lr) or "divided" (divide by it).

    Raises
    ------
    ValueError
        On an out-of-range argument.
    """
    if not (math.isfinite(bandwidth) and bandwidth > 0):
        raise ValueError(f"bandwidth must be > 0 bytes/s, got {bandwidth!r}")
    if not 0.0 <= loss_rate < 1.0:
        raise ValueError(f"loss_rate must be in [0, 1), got {loss_rate!r}")
    if not (math.isfinite(compute_s) and compute_s >= 0):
        raise ValueError(f"compute_s must be >= 0 seconds, got {compute_s!r}")
    if num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    if not (math.isfinite(model_bytes) and model_bytes > 0):
        raise ValueError(f"model_bytes must be > 0, got {model_bytes!r}")
    if not 0.0 < cap_fraction <= 1.0:
        raise ValueError(f"cap_fraction must be in (0, 1], got {cap_fraction!r}")
    if loss_form == "printed":
        rate = bandwidth * (1.0 + loss_rate)
    elif loss_form == "divided":
        rate = bandwidth / (1.0 + loss_rate)
    else:
        raise ValueError(f"loss_form must be 'printed' or 'divided', got {loss_form!r}")
    return min(rate * compute_s / num_workers, cap_fraction * model_bytes)


class BudgetSchedule:
    """Algorithm 1: S(G^u) per epoch from the epoch's loss.

    Parameters
    ----------
    umax : float
        U_max in bytes (>= 0), already capped.
    """

    def __init__(self, umax: float) -> None:
        if not (math.isfinite(umax) and umax >= 0):
            raise ValueError(f"umax must be finite bytes >= 0, got {umax!r}")
        self.umax = umax
        self.first_loss: float | None = None
        self.epoch = 0

    def update(self, epoch: int, loss: float) -> float:
        """S(G^u) for ``epoch`` (1-based, increasing by one) given that epoch's ``loss``.

        Raises
        ------
        ValueError
            On an epoch out of order, a NaN or negative loss, or a first loss of 0.
        """
        if epoch != self.epoch + 1:
            raise ValueError(f"expected epoch {self.epoch + 1}, got {epoch}")
        if not (math.isfinite(loss) and loss >= 0):
            raise ValueError(f"loss must be finite and >= 0, got {loss!r}")
        self.epoch = epoch
        if epoch == 1:
            if loss == 0:
                raise ValueError("the first epoch's loss L must be > 0 (it divides)")
            self.first_loss = loss
            return 0.0
        assert self.first_loss is not None  # set at epoch 1, which must come first
        s = (1.0 - loss / self.first_loss) * self.umax
        return min(max(s, 0.0), self.umax)
