"""``python -m fl_r2sp.cluster --scheme allreduce|partial|selective``: flags, refusals, real runs.

The two whole runs go through the real command (a subprocess: the supervised one-command
launcher, tiny mlp on synthetic data, 3-4 workers); the flag checks call the parser in-process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fl_r2sp.cluster.__main__ import main
from fl_r2sp.cluster.cli import parse
from fl_r2sp.cluster.config import ClusterConfig
from fl_r2sp.cluster.runtime.reduce.config import ReduceRunConfig
from fl_r2sp.cluster.schemes import CLUSTER_SCHEMES, REDUCE_FAMILY, families, names_of

TINY = ["--model", "mlp", "--dataset", "synthetic", "--batch-size", "8", "--timeout", "20",
        "--run-timeout", "60"]  # fmt: skip


def test_selective_flags_reach_the_reduce_run_config() -> None:
    cfg, _ = parse(["--scheme", "selective", "--workers", "5", "--group-min", "2", "--eta",
                    "0.2", "--theta", "inf", "--delta-t", "0.05", "--full-sync-every", "3",
                    "--reading", "literal", "--hazard", "conditional", "--min-samples", "4",
                    "--link-caps", "1,2,3,4,5", "--bw-estimate", "known", "--alpha", "0.002",
                    "--cache-groups", "0", *TINY])  # fmt: skip
    assert isinstance(cfg, ReduceRunConfig) and cfg.world_size == 5
    r = cfg.reduce
    assert (r.scheme, r.p, r.eta, r.theta, r.delta_t, r.full_sync_every) == (
        "selective", 2, 0.2, float("inf"), 0.05, 3)  # fmt: skip
    assert (r.reading, r.hazard, r.min_samples, r.group_min(5)) == ("literal", "conditional", 4, 2)
    assert cfg.link_caps() == (1.0, 2.0, 3.0, 4.0, 5.0) and cfg.bw_estimate == "known"
    assert (cfg.alpha_s, cfg.cache_groups, cfg.base.model, cfg.base.timeout_s) == (
        0.002, 0, "mlp", 20.0)  # fmt: skip
    drawn, _ = parse(["--scheme", "partial", "--workers", "4", "--link-max", "40", *TINY])
    assert isinstance(drawn, ReduceRunConfig) and drawn.reduce.group_min(4) == 2  # max(2, 1)
    assert len(drawn.link_caps()) == 4 and all(2.0 <= c <= 40.0 for c in drawn.link_caps())


def test_ps_schemes_still_give_a_cluster_config_and_every_scheme_has_one_family() -> None:
    cfg, _ = parse(["--scheme", "bsp", "--servers", "2", "--workers", "3", *TINY])
    assert isinstance(cfg, ClusterConfig) and (cfg.scheme.scheme, cfg.servers) == ("bsp", 2)
    assert sorted(s for f in families() for s in names_of(f)) == sorted(CLUSTER_SCHEMES)
    assert CLUSTER_SCHEMES["selective"].family is REDUCE_FAMILY
    assert names_of(REDUCE_FAMILY) == ["allreduce", "partial", "selective"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--scheme", "partial", "--servers", "2"], "--servers applies to the parameter-server"),
        (["--scheme", "r2sp", "--eta", "0.2"], "--eta applies to the all-reduce family"),
        (["--scheme", "partial", "--theta", "2"], "--theta applies to --scheme selective, not"),
        (["--scheme", "allreduce", "--group-min", "2"], "--group-min applies to --scheme partial"),
        (["--scheme", "selective", "--link-max", "9", "--link-caps", "1,2,3,4"], "not both"),
        (["--scheme", "partial", "--link-caps", "1,2"], "link_caps_mb_s needs 4 values"),
        (["--scheme", "selective", "--eta", "1.5"], "eta must lie in [0, 1)"),
        (["--scheme", "partial", "--bw-lambda", "0"], "bw_lambda must lie in (0, 1]"),
    ],
)
def test_bad_flag_combinations_exit_2_with_a_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--workers", "4", *TINY])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def _run_cli(tmp: Path, argv: list[str]) -> tuple[int, dict[str, object], str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "fl_r2sp.cluster", *argv, *TINY, "--run-dir", str(tmp)],
        capture_output=True, text=True, timeout=150, env=env,
    )  # fmt: skip
    out = proc.stdout
    summary = json.loads(out[out.index("{") :]) if "{" in out else {}
    return proc.returncode, summary, out + proc.stderr


@pytest.mark.parametrize(
    "scheme, extra",
    [
        ("partial", ["--workers", "3", "--group-min", "2", "--link-caps", "50,20,80"]),
        ("selective", ["--workers", "4", "--group-min", "2", "--link-caps", "40,5,30,4"]),
    ],
)
def test_the_command_trains_a_reduce_run_end_to_end(
    tmp_path: Path, scheme: str, extra: list[str]
) -> None:
    code, s, text = _run_cli(tmp_path, ["--scheme", scheme, "--iterations", "4", *extra])
    assert code == 0, text
    workers = int(extra[1])
    assert s["status"] == "ok" and s["scheme"] == scheme and s["workers"] == workers, s
    assert s["total_iterations"] == 4 * workers  # the whole ticket budget was reduced
    assert s["lost_workers"] == {} and s["failed_syncs"] == 0
    run_dir = Path(str(s["run_dir"]))
    assert run_dir.parent == tmp_path and (run_dir / "COMPLETE").exists()
    for name in ("summary.json", "final_params.pt", "permissions.csv", "controller_inputs.json"):
        assert (run_dir / name).exists(), name
    assert f"[cluster] {scheme}: {workers} workers (no PS), p = 2" in text
