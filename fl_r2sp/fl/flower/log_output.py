"""Where the ``fl_r2sp`` logger writes when the app configured nothing.

A user's ServerApp configures Flower's logger, not ours: without a handler, the strategies'
progress lines (one per evaluation, the run summary) would be dropped and only warnings
reach stderr. Flower's own strategies print their progress, so ours do too.
"""

from __future__ import annotations

import logging

__all__ = ["ensure_log_output"]


def ensure_log_output() -> None:
    """Give the ``fl_r2sp`` logger a stderr handler at INFO, unless the app configured one.

    Nothing changes when the logger or the root logger already has a handler (the app's
    logging setup wins).
    """
    logger = logging.getLogger("fl_r2sp")
    if logger.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
