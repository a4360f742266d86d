"""``python -m fl_r2sp.cluster --scheme r2sp --workers 8 --servers 2 --model resnet32 ...``

or ``python -m fl_r2sp.cluster --scheme allreduce|partial|selective --workers 8 --link-max 40
...`` (decentralised workers, no parameter server; ``--help`` lists every family's flags).

Validates the flags, starts the ranks (S parameter servers and N workers, or N workers) on
this machine through torch's elastic launcher (as ``torchrun --standalone``), prints the
coordinator's progress lines and the run summary, and exits 0 on success, 1 if the run failed,
2 on bad flags. Across machines, run ``torchrun ... -m fl_r2sp.cluster.runtime.rank`` with the
same flags instead (README, "Cluster mode").
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the cluster mode from the command line; return the exit status."""
    from fl_r2sp.cluster.runtime.cli import describe, parse
    from fl_r2sp.cluster.runtime.launcher import ClusterRunError, launch

    cfg, ns = parse(argv)
    print(f"[cluster] {describe(cfg, ns.scheme)}", flush=True)
    try:
        summary = launch(cfg, start_method=ns.launch_method)
    except ClusterRunError as exc:
        if exc.summary is not None:
            print(json.dumps(exc.summary, indent=2, default=str))
        print(f"[cluster] FAILED: {exc}", file=sys.stderr, flush=True)
        return 1
    except (RuntimeError, FileNotFoundError) as exc:
        print(f"[cluster] cannot start: {exc}", file=sys.stderr, flush=True)
        return 2
    print(json.dumps(summary, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
