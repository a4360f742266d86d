"""The fast per-hub engine must reproduce the general water-filling solver.

Random star scenarios (pulls and pushes with overheads, cancellations, fair and
fcfs server links, client caps equal, above or below the fair share, flows
crossing only the server link) are replayed on ``fast_path=True`` and
``fast_path=False`` networks; completion times, order and byte traces must
agree up to :data:`RTOL`. Mixed caps force the fast engine to fall back to the
general one and come back, so the conversions are exercised too.
"""

from __future__ import annotations

import numpy as np
import pytest

from fl_r2sp.emulation import Network

#: Relative agreement of completion times and traced bytes (float rounding only).
RTOL = 1e-9

SCENARIOS = 300


def _build(fast: bool, rng: np.random.Generator, n_clients: int) -> Network:
    net = Network(record=True, fast_path=fast)
    net.add_link(
        "egress", float(rng.choice([4e6, 8.3e6])), "fcfs" if rng.random() < 0.3 else "fair"
    )
    net.add_link(
        "ingress", float(rng.choice([4e6, 8.3e6])), "fcfs" if rng.random() < 0.3 else "fair"
    )
    mode = rng.integers(3)  # equal caps above share / equal caps binding / mixed caps
    for i in range(n_clients):
        cap = {0: 16.8e6, 1: 1e6, 2: float(rng.choice([1e6, 3e6, 16.8e6]))}[int(mode)]
        net.add_link(f"c{i}-down", cap)
        net.add_link(f"c{i}-up", cap)
    return net


def _script(seed: int) -> tuple[int, list[tuple[float, str, int, float, float]]]:
    """Actions (time, kind, client, size, overhead), time-ordered."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 9))
    acts = []
    for _ in range(int(rng.integers(1, 25))):
        t = float(rng.choice([0.0, 0.5, 1.0]) if rng.random() < 0.3 else rng.uniform(0, 3))
        kind = str(rng.choice(["pull", "push", "server", "cancel"], p=[0.4, 0.35, 0.1, 0.15]))
        size = float(rng.choice([0.0, 1e6, 2.5e5]) if rng.random() < 0.3 else rng.uniform(1e4, 4e6))
        over = float(rng.choice([0.0, 0.05])) if rng.random() < 0.5 else 0.0
        acts.append((t, kind, int(rng.integers(n)), size, over))
    acts.sort(key=lambda a: a[0])
    return n, acts


def _replay(seed: int, fast: bool) -> tuple[list[tuple[int, float]], np.ndarray, np.ndarray]:
    n, acts = _script(seed)
    net = _build(fast, np.random.default_rng(seed + 10_000), n)
    done: list[tuple[int, float]] = []
    fids: list[int] = []
    for t, kind, c, size, over in acts:
        while (nc := net.next_completion()) is not None and nc[0] <= t:
            done += net.advance(nc[0])
        done += net.advance(t)
        links = {
            "pull": ("egress", f"c{c}-down"),
            "push": (f"c{c}-up", "ingress"),
            "server": ("egress",),
        }.get(kind)
        if links is None:
            if fids:
                net.cancel_flow(fids[c % len(fids)])
            continue
        fids.append(net.start_flow(t, size, links, over))
    while (nc := net.next_completion()) is not None:
        done += net.advance(nc[0])
    until = max(net.now, 1e-3)
    eg = net.trace("egress", 0.25, until)[1]
    ing = net.trace("ingress", 0.25, until)[1]
    return done, eg, ing


@pytest.mark.parametrize("block", range(6))
def test_fast_engine_matches_general_solver(block: int) -> None:
    for seed in range(block * SCENARIOS // 6, (block + 1) * SCENARIOS // 6):
        fast_done, fe, fi = _replay(seed, True)
        gen_done, ge, gi = _replay(seed, False)
        assert sorted(f for f, _ in fast_done) == sorted(f for f, _ in gen_done), seed
        ends_f, ends_g = dict(fast_done), dict(gen_done)
        for fid, t in ends_g.items():
            assert ends_f[fid] == pytest.approx(t, rel=RTOL, abs=1e-12), (seed, fid)
        np.testing.assert_allclose(fe, ge, rtol=RTOL, atol=1e-3, err_msg=str(seed))
        np.testing.assert_allclose(fi, gi, rtol=RTOL, atol=1e-3, err_msg=str(seed))


def test_ps_star_hand_computed() -> None:
    """Two pulls on an 8 MB/s fair egress (client links 16 MB/s): 4 MB/s each, then 8."""
    net = Network(record=True)
    for name, cap in (("s", 8e6), ("a", 16e6), ("b", 16e6)):
        net.add_link(name, cap)
    f0 = net.start_flow(0.0, 4e6, ("s", "a"))
    f1 = net.start_flow(0.0, 8e6, ("s", "b"))
    # both at 4 MB/s until f0 is done at 1 s; f1 has 4 MB left at 8 MB/s: done at 1.5 s
    assert net.advance(2.0) == [(f0, 1.0), (f1, 1.5)]
    _, per_bin = net.trace("s", 0.5, 2.0)
    np.testing.assert_allclose(per_bin, [4e6, 4e6, 4e6, 0.0])


def test_fallback_and_return_to_fast_state() -> None:
    """Mixed client caps below the fair share: general solver, then back to fast."""
    net = Network()
    for name, cap in (("s", 9e6), ("a", 1e6), ("b", 2e6), ("c", 100e6)):
        net.add_link(name, cap)
    fa = net.start_flow(0.0, 1e6, ("s", "a"))  # capped at 1 MB/s: done at 1 s
    fb = net.start_flow(0.0, 2e6, ("s", "b"))  # capped at 2 MB/s: done at 1 s
    fc = net.start_flow(0.0, 6e6, ("s", "c"))  # 9-1-2 = 6 MB/s: done at 1 s
    assert net._state.fast is None  # mixed binding caps: general solver
    assert net.advance(1.0) == [(fa, 1.0), (fb, 1.0), (fc, 1.0)]
    flows = [net.start_flow(1.0, 9e6, ("s",)) for _ in range(3)]
    done = []
    while (nc := net.next_completion()) is not None:
        done += net.advance(nc[0])
    assert done == [(f, pytest.approx(4.0)) for f in flows]  # 3 x 9 MB at 9 MB/s
