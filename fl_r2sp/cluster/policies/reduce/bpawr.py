"""BPAWR, bandwidth- and progress-aware waiting and replacement (Algorithm 2 of the paper).

For a group ``g`` of ready workers with bottleneck bandwidth b̂:

1. PREDICTWORKERS: every training worker with bandwidth > b̂ is a candidate, with probability
   p_i of being ready within Δt (:mod:`.progress`). Candidates are *claimed*: the caller removes
   them from the training set so that no later group counts on them again.
2. k = ⌊Σ p_i⌋ virtual workers of bandwidth b̄ = Σ p_i b_i / Σ p_i join g; BAG re-groups them;
   the first group g* is the improved alternative of g and g_Δ = g \\ g* the slow members it
   would replace.
3. t_X = T(g) − T(g*) (ring all-reduce times, :func:`.ring.ring_time`): the sync time saved.

Decision under the **consistent reading** (three-way, ``docs/paper-notes.md`` §5.4):

* ``len(g) < p`` → ``HOLD`` (not enough members; nothing is claimed);
* ``t_X > θ·Δt``, g_Δ non-empty and g* holds at least one virtual worker → ``WAIT`` (do not
  launch g now; its slow members move to the next group). The last condition is ours: with no
  predicted arrival in g*, waiting could bring nobody, so the group launches;
* otherwise → ``LAUNCH``.

Under the **literal reading** the printed boolean F = (t_X > θ·Δt) is returned as ``LAUNCH``
with ``replace = g_Δ`` (the caller launches g \\ g_Δ at once, as Algorithm 3 does), and F = False
as ``HOLD`` (so a group with nothing to replace never launches: the deadlock of the printed
pseudo-code, which the controller's stall guard breaks).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from fl_r2sp.cluster.policies.reduce.bag import bag
from fl_r2sp.cluster.policies.reduce.progress import FloatArray, ProgressModel
from fl_r2sp.cluster.policies.reduce.ring import ring_time

HOLD, WAIT, LAUNCH = "hold", "wait", "launch"
_NO_IDS: NDArray[np.int64] = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class BpawrConfig:
    """Fixed inputs of BPAWR: p, η, Δt, θ, the model size and latency, the reading."""

    p: int
    eta: float
    delta_t: float
    theta: float
    model_bytes: float
    alpha: float
    literal: bool = False
    approx_time: bool = False


@dataclass(frozen=True)
class BpawrResult:
    """One BPAWR decision.

    Attributes
    ----------
    decision : str
        ``"hold"``, ``"wait"`` or ``"launch"`` (see the module docstring).
    replace : tuple of int
        g_Δ: members of g that g* leaves out (empty unless the decision uses them).
    claimed : ndarray of int
        Candidate workers to remove from the training set.
    saved_s : float
        t_X = T(g) − T(g*) in seconds (0 when g is held for size).
    expected : int
        k, the number of virtual workers.
    expected_bandwidth : float
        b̄ (NaN without candidates).
    virtual_in_best : int
        Virtual workers in g*.
    """

    decision: str
    replace: tuple[int, ...]
    claimed: NDArray[np.int64]
    saved_s: float
    expected: int
    expected_bandwidth: float
    virtual_in_best: int


def predict_workers(
    training: NDArray[np.int64],
    elapsed: FloatArray,
    bandwidth: FloatArray,
    bottleneck: float,
    delta_t: float,
    progress: ProgressModel,
) -> tuple[NDArray[np.int64], FloatArray]:
    """PREDICTWORKERS: training workers faster than ``bottleneck`` and their probabilities.

    ``training`` and ``elapsed`` are parallel arrays (worker ids, seconds into their round);
    ``bandwidth`` is indexed by worker id.
    """
    faster = bandwidth[training] > bottleneck
    ids = training[faster]
    if ids.size == 0:
        return _NO_IDS, np.zeros(0)
    return ids, np.asarray(progress.probabilities(ids, elapsed[faster], delta_t), dtype=float)


def bpawr(
    group: Sequence[int],
    bandwidth: FloatArray,
    training: NDArray[np.int64],
    elapsed: FloatArray,
    cfg: BpawrConfig,
    progress: ProgressModel,
) -> BpawrResult:
    """Decide for ``group`` (see the module docstring); ``bandwidth`` is indexed by worker id."""
    if len(group) < cfg.p:
        return BpawrResult(HOLD, (), _NO_IDS, 0.0, 0, math.nan, 0)
    b_group = bandwidth[np.asarray(group, dtype=np.int64)]
    bottleneck = float(b_group.min())
    ids, probs = predict_workers(training, elapsed, bandwidth, bottleneck, cfg.delta_t, progress)
    total = float(probs.sum())
    k = math.floor(total + 1e-9)  # 0.9999999 from float sums of exact probabilities counts as 1
    b_bar = float(probs @ bandwidth[ids]) / total if total > 0 else math.nan
    strict = not cfg.literal
    if k == 0:  # g* = BAG(g)[0]: no arrival to wait for
        best = np.asarray(bag(group, b_group.tolist(), cfg.p, cfg.eta, strict, strict)[0])
    else:
        keys = list(group) + [-(j + 1) for j in range(k)]
        bws = b_group.tolist() + [b_bar] * k
        best = np.asarray(bag(keys, bws, cfg.p, cfg.eta, strict, strict)[0])
    real = best[best >= 0]
    virtual = int(best.size - real.size)
    b_best = min(
        float(bandwidth[real].min()) if real.size else math.inf, b_bar if virtual else math.inf
    )
    in_best = np.zeros(bandwidth.size, dtype=bool)
    in_best[real] = True
    g = np.asarray(group, dtype=np.int64)
    replace = tuple(g[~in_best[g]].tolist())
    saved = _time(len(group), bottleneck, cfg) - _time(int(best.size), b_best, cfg)
    worth = saved > cfg.theta * cfg.delta_t
    if cfg.literal:
        decision, out = (LAUNCH, replace) if worth else (HOLD, ())
    elif worth and replace and virtual > 0:
        decision, out = WAIT, replace
    else:
        decision, out = LAUNCH, ()
    return BpawrResult(decision, out, ids, saved, k, b_bar, virtual)


def _time(members: int, min_bw: float, cfg: BpawrConfig) -> float:
    return ring_time(members, cfg.model_bytes, min_bw, cfg.alpha, cfg.approx_time)
