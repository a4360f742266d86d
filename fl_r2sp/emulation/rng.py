"""Per-(seed, client, round) random streams.

Every random draw of the emulation comes from ``rng_for(seed, stream, client,
job)``: a fresh :class:`numpy.random.Generator` seeded by
``SeedSequence([seed, *keys])``. A client's delay in round 7 is thus the same
whatever order the events were processed in, how many clients exist, or which
other draws happened before.
"""

from __future__ import annotations

import numpy as np

#: Stream ids, used as the first key so that different models never share draws.
STREAM_DELAY = 1
STREAM_DEVICE = 2
STREAM_DROPOUT = 3
STREAM_SELECTION = 4
STREAM_DATA = 5
STREAM_JITTER = 6


def rng_for(seed: int, *keys: int) -> np.random.Generator:
    """Return a generator determined only by ``seed`` and ``keys``.

    Parameters
    ----------
    seed : int
        Run seed (non-negative).
    *keys : int
        Non-negative integers, conventionally ``(stream, client, job)``.

    Raises
    ------
    ValueError
        If the seed or a key is negative.
    """
    entropy = [int(seed), *(int(k) for k in keys)]
    if any(v < 0 for v in entropy):
        raise ValueError(f"seed and keys must be non-negative integers, got {entropy}")
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))
