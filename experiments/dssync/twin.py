"""DS-Sync on the flow-level twin at the paper's size: communication time per iteration, S1–S3.

Prints, for every data set and scenario of the paper's Tables III–V, the twin's communication
time per iteration of all-reduce (AR), hierarchical AR, gossip and DS-Sync beside the paper's,
and the speed-up of DS-Sync over each baseline (baseline time / DS-Sync time) beside the
paper's. Nothing is trained: the twin gives communication time only (iterations to target and
accuracy need real runs).

Assumptions (fixed before any comparison; nothing here is fitted to the paper):

* 8 workers, 2 racks of 5 hosts (the paper's 10 nodes), 20 Gb/s NICs, oversubscription 1,
  latency 0.1 ms per flow; S1: workers 0–4 in rack 0 and 5–7 in rack 1, one background worker
  on worker 4's host and one on a host of rack 1; S2: 4 + 4, background workers on hosts of
  their own in each rack; S3: 4 + 4, no background. The background job sends continuously in
  both directions (an upper bound on a BERT job that also computes).
* Two uplink models: "aggregate" (each rack's uplink is hosts × 20 Gb/s, the literal
  oversubscription 1) and "one-path" (every inter-rack flow of a rack shares one 20 Gb/s spine
  path, as when ECMP hashes the flows onto the same link).
* Model sizes in fp32: WideResNet-28-10 36.5 M parameters (CIFAR-10/100), WideResNet-50-2
  68.9 M (ImageNet), BERT-large 335 M for SQuAD (the paper does not give the size; its F1 of
  92.7 is above what BERT-base reaches, so large).
* One synchronisation of the whole model per iteration (the paper's per-layer calls only add
  latency terms), all workers starting it together.
* DS-Sync runs the static pattern for one period, regroups from the twin's group times with the
  default slowness threshold (1.5) and reports the adjusted pattern's time.

Verdict rules: the report's (:mod:`experiments.common.verdicts`). A speed-up is read as the
time it saves (1 − 1/x), a reduction: *reproduced* with the paper's sign and ours / paper's in
[2/3, 3/2], *same direction* with the sign outside the band, else *not reproduced*; an absolute
time is *reproduced* when ours / paper lies in the band, else *not reproduced*.

Usage: ``python -m experiments.dssync.twin``.
"""

from __future__ import annotations

from experiments.common import verdicts
from fl_r2sp.cluster.sim.dssync.engine import (
    RackNet,
    dssync_time,
    gossip_time,
    hierarchical_time,
    step_time,
)

MODELS = {"Cifar10": 36.5e6 * 4, "Cifar100": 36.5e6 * 4, "ImageNet": 68.9e6 * 4, "SQuAD": 335e6 * 4}
METHODS = ("AR", "Hier. AR", "Gossip", "DS-Sync")

#: (scenario, data set) -> comm. time in ms for METHODS (Tables III, IV, V).
PAPER = {
    ("S1", "Cifar10"): (540.1, 790.2, 772.8, 338.1),
    ("S1", "Cifar100"): (545.6, 801.5, 778.3, 341.8),
    ("S1", "ImageNet"): (825.7, 1078.2, 834.5, 412.5),
    ("S1", "SQuAD"): (3260.7, 4213.2, 2805.5, 1636.6),
    ("S2", "Cifar10"): (525.1, 515.3, 764.1, 331.7),
    ("S2", "Cifar100"): (531.6, 523.5, 768.3, 336.1),
    ("S2", "ImageNet"): (823.1, 685.2, 812.9, 407.4),
    ("S2", "SQuAD"): (3129.3, 2801.5, 2913.1, 1633.4),
    ("S3", "Cifar10"): (266.1, 390.8, 376.9, 200.1),
    ("S3", "Cifar100"): (271.3, 395.1, 374.8, 198.1),
    ("S3", "ImageNet"): (441.0, 506.6, 405.3, 249.2),
    ("S3", "SQuAD"): (1631.8, 2233.4, 1502.6, 1060.2),
}


def scenario(name: str, uplink: str) -> RackNet:
    """The rack network of S1, S2 or S3 under the "aggregate" or "one-path" uplink model."""
    up = None if uplink == "aggregate" else 20.0
    if name == "S1":
        return RackNet(
            ((0, 1, 2, 3, 4), (5, 6, 7)), (5, 5), uplink_gbps=up, background=((0, 4), (1, -1))
        )
    four = ((0, 1, 2, 3), (4, 5, 6, 7))
    if name == "S2":
        return RackNet(four, (5, 5), uplink_gbps=up, background=((0, -1), (1, -1)))
    if name == "S3":
        return RackNet(four, (5, 5), uplink_gbps=up)
    raise ValueError(f"unknown scenario {name!r}")


def twin_times(rn: RackNet, model_bytes: float) -> tuple[tuple[float, ...], str]:
    """Times in ms for METHODS, and what DS-Sync's regrouping found."""
    n = sum(len(r) for r in rn.racks)
    ar = step_time(rn, [tuple(range(n))], model_bytes)[0]
    ds = dssync_time(rn, model_bytes)
    found = f"slow racks {list(ds.found.slow_racks)}, delayed {list(ds.found.delayed)}"
    times = (ar, hierarchical_time(rn, model_bytes), gossip_time(rn, model_bytes), ds.adjusted_s)
    return tuple(1e3 * t for t in times), found


def verdict(ours: float, paper: float, speedup: bool) -> str:
    """The rules of the module docstring (``speedup``: ``ours`` and ``paper`` are speed-ups,
    else absolute times); words without Markdown emphasis."""
    if speedup:
        words = verdicts.reduction_label(
            verdicts.reduction_of_speedup(ours), verdicts.reduction_of_speedup(paper)
        )
    else:
        words = verdicts.label(ours / paper)
    return verdicts.plain(words)


def main() -> None:
    for uplink in ("aggregate", "one-path"):
        print(f"\n## Uplink model: {uplink}\n")
        print(
            "| scenario | data | method | twin ms | paper ms | ratio | verdict | "
            "DS-Sync speed-up twin | paper | verdict |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for (sc, data), paper in PAPER.items():
            ours, found = twin_times(scenario(sc, uplink), MODELS[data])
            for k, method in enumerate(METHODS):
                row = [
                    sc,
                    data,
                    method,
                    f"{ours[k]:.1f}",
                    f"{paper[k]:.1f}",
                    f"{ours[k] / paper[k]:.2f}",
                    verdict(ours[k], paper[k], False),
                ]
                if method != "DS-Sync":
                    su, sp = ours[k] / ours[3], paper[k] / paper[3]
                    row += [f"{su:.2f}x", f"{sp:.2f}x", verdict(su, sp, True)]
                else:
                    row += [found, "", ""]
                print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
