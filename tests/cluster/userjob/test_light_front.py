"""``import fl_r2sp.cluster``, ``python -m fl_r2sp.cluster --help`` and every refusal of a bad
flag answer without importing torch, Flower or matplotlib (checked in a fresh interpreter's
``sys.modules``; their seconds are in ``benchmarks/bench_startup.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

HEAVY = ("torch", "flwr", "matplotlib")
PROBE = """
import json, runpy, sys
argv = json.loads(sys.argv[1])
code = None
if argv is None:
    import fl_r2sp.cluster
else:
    sys.argv = ["python -m fl_r2sp.cluster", *argv]
    try:
        runpy.run_module("fl_r2sp.cluster", run_name="__main__")
    except SystemExit as exc:
        code = exc.code
heavy = [m for m in HEAVY if m in sys.modules]
print(json.dumps({"code": code, "heavy": heavy}))
""".replace("HEAVY", repr(HEAVY))


def _probe(argv: list[str] | None) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (None, None),  # import fl_r2sp.cluster
        (["--help"], 0),
        (["--scheme", "nosuch"], 2),
        (["--workers", "0"], 2),
        (["--model", "nosuchnet"], 2),
        (["--model", "mlp", "--dataset", "cifar10"], 2),
        (["--loss", "not-a-path"], 2),
        (["--scheme", "r2sp", "--ready-timeout", "5"], 2),  # another family's flag
        (["--scheme", "r2sp", "--worker-gap-factor", "1.5"], 2),
    ],
)
def test_the_front_answers_without_torch(argv: list[str] | None, code: int | None) -> None:
    got = _probe(argv)
    assert got["code"] == code
    assert got["heavy"] == []


def test_the_probe_sees_torch_where_a_refusal_needs_the_model() -> None:
    # The control: counting the mlp's parameters (more servers than parameters) builds it.
    got = _probe(["--model", "mlp", "--dataset", "synthetic", "--servers", "99999"])
    assert got["code"] == 2
    assert "torch" in got["heavy"]
