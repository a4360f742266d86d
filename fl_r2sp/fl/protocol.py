"""What travels between the server and the clients: jobs out, replies back.

A neutral module below both ``fl_r2sp.fl.server`` (which sends jobs) and
``fl_r2sp.fl.clients`` (which answers them), so neither imports the other for
the message types. Kept free of Flower and torch so that the in-process
transport, the Flower Grid transport and the tests all speak the same two
small types.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Job:
    """One training request for one client.

    Attributes
    ----------
    cid : int
        Partition id of the client.
    index : int
        Per-client job counter (0, 1, 2, ...). Seeds the client's SGD and its
        injected delay, so results do not depend on which real process runs it.
    tag : int
        The policy's tag (group round, version ...), echoed back in the reply.
    weights : np.ndarray
        Flat float32 model the client starts from.
    """

    cid: int
    index: int
    tag: int
    weights: np.ndarray


@dataclass(frozen=True)
class Reply:
    """A client's answer to a :class:`Job` (or the error that replaced it).

    Attributes
    ----------
    cid, index, tag : int
        Copied from the job.
    weights : np.ndarray or None
        Flat weights after local training; ``None`` when ``error`` is set.
    num_examples : int
        Size of the client's local training set.
    loss : float
        Mean local training loss.
    compute_s : float
        Modelled compute duration in seconds (device speed x tau) used by the
        virtual clock; in wall-clock mode the measured training time.
    delay_s : float
        Injected delay in seconds (slept in wall-clock mode).
    error : str or None
        Why the job failed (node lost, TTL expired, ClientApp exception ...).
    """

    cid: int
    index: int
    tag: int
    weights: np.ndarray | None
    num_examples: int = 0
    loss: float = float("nan")
    compute_s: float = 0.0
    delay_s: float = 0.0
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the reply carries weights and no error."""
        return self.error is None and self.weights is not None


def validate_weights(weights: np.ndarray | None, size: int) -> str | None:
    """Return why ``weights`` cannot be aggregated, or ``None`` if they can.

    Parameters
    ----------
    weights : np.ndarray or None
        Flat vector from a client.
    size : int
        Expected number of elements (the global model's).
    """
    if weights is None:
        return "reply carries no weights"
    if weights.ndim != 1 or weights.size != size:
        return f"wrong shape {weights.shape}, expected ({size},)"
    if not np.issubdtype(weights.dtype, np.floating):
        return f"wrong dtype {weights.dtype}, expected a float type"
    if not np.all(np.isfinite(weights)):
        return "non-finite values (NaN or inf) in the update"
    return None
