"""``python -m fl_r2sp.cluster --scheme r2sp --workers 8 --servers 2 --model resnet32 ...``

or ``python -m fl_r2sp.cluster --scheme allreduce|partial|selective --workers 8 --link-max 40
...`` (decentralised workers, no parameter server; ``--help`` lists every family's flags).

Validates the flags (a setting that turns the scheme into another is refused, or warned about
where a user may mean it), starts the ranks (S parameter servers and N workers, or N workers)
on this machine as supervised processes (:mod:`fl_r2sp.cluster.local`), prints the
coordinator's progress lines and the run summary. Exit status: 0 when the run ended well (a
scheme that continues without a lost worker included), 1 if it failed, 2 on bad flags or when
it cannot start, 124 when it reached its time limit (``--run-timeout``; status ``timeout``),
130 when interrupted (Ctrl-C). Across machines, run ``torchrun ... -m
fl_r2sp.cluster.rank`` with the same flags instead (README, "Cluster mode").
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

#: Exit status of an interrupted run (the shell's 128 + SIGINT).
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run the cluster mode from the command line; return the exit status.

    The flags are parsed (and refused) before torch is imported; the run itself is
    :func:`fl_r2sp.cluster.api.run`, the path of the Python API.
    """
    from fl_r2sp.cluster.cli import describe, parse

    cfg, ns = parse(argv)
    for caveat in cfg.caveats():
        print(f"[cluster] warning: {caveat}", file=sys.stderr, flush=True)
    print(f"[cluster] {describe(cfg, ns.scheme)}", flush=True)
    from fl_r2sp.cluster.api import run
    from fl_r2sp.cluster.launcher import ClusterRunError
    from fl_r2sp.cluster.runtime.common.job import EXIT_TIMEOUT

    try:
        result = run(cfg, start_method=ns.launch_method)
    except ClusterRunError as exc:
        if exc.summary is not None:
            print(json.dumps(exc.summary, indent=2, default=str))
        print(f"[cluster] {exc.status.upper()}: {exc}", file=sys.stderr, flush=True)
        return {"interrupted": EXIT_INTERRUPTED, "timeout": EXIT_TIMEOUT}.get(exc.status, 1)
    except (ValueError, RuntimeError, FileNotFoundError) as exc:
        print(f"[cluster] cannot start: {exc}", file=sys.stderr, flush=True)
        return 2
    print(json.dumps(result.summary, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
