"""The outlier filter's knobs in full in-process runs (digits MLP, virtual clock).

The policy tests pin the rules on scripted scores; these check that a run configuration
carries them through the runner: the known outlier ids come from the partition, the
warm-up reaches the policy.
"""

from __future__ import annotations

from fl_r2sp.fl.clients.runtime import data_for
from fl_r2sp.fl.config import RunConfig
from fl_r2sp.fl.server.runner import run


def digits_cfg(**kw) -> RunConfig:
    """8 clients in 2 groups, 2 local iterations, 8 global updates (4 rounds per group),
    the filter on (explicit: these tests do not depend on the default)."""
    base = dict(
        outlier_filter=True,
        num_partitions=8,
        num_groups=2,
        local_iterations=2,
        max_updates=8,
        eval_every=8,
        plots=False,
    )
    return RunConfig(**{**base, **kw})


def test_warmup_leaves_the_first_group_rounds_unscored_in_a_full_run() -> None:
    def scored_rounds(warmup: int) -> list[int]:
        out = run(digits_cfg(outlier_warmup=warmup), write=False, progress=False)
        assert out.summary["global_updates"] == 8
        return sorted({r["round"] for r in out.events.of_kind("client_score")})

    assert scored_rounds(0) == [0, 1, 2, 3]
    assert scored_rounds(2) == [2, 3]


def test_oracle_excludes_the_partitions_known_outliers_from_the_start() -> None:
    cfg = digits_cfg(outlier_rule="oracle")
    known = sorted(data_for(cfg).partition.outlier_ids)
    assert known  # the paper partition has 25% outliers: 2 of 8
    out = run(cfg, write=False, progress=False)
    banned = out.events.of_kind("blacklist")
    assert [r["cid"] for r in banned] == known and {r["t"] for r in banned} == {0.0}
    trained = {r["cid"] for r in out.events.jobs}
    assert trained == set(range(8)) - set(known)
    assert out.summary["policy_blacklist_recall"] == 1.0
