"""Client-job executors behind the in-process transport.

The run-config key ``executor`` picks how released jobs are computed:

* ``serial`` (:class:`SerialExecutor`): one job at a time in the loop's
  thread, the reference;
* ``processes`` (:class:`~.processes.ProcessExecutor`): a pool of
  single-threaded worker processes (``executor-workers``, 0 = one per core),
  bit-identical to serial;
* ``batched`` (:class:`~.batched.BatchedExecutor`): outstanding jobs train as
  one stacked model with ``torch.func`` on ``compute-device``, equal to
  serial within float tolerance.

Only *how* jobs are computed changes: the virtual-time loop still decides
which jobs exist and in which order their results take effect.
"""

from fl_r2sp.fl.server.executor.base import Executor, ExecutorError, resolve_workers
from fl_r2sp.fl.server.executor.serial import SerialExecutor
from fl_r2sp.fl.server.executor.transport import ExecutorTransport, make_executor, make_transport

__all__ = [
    "Executor",
    "ExecutorError",
    "ExecutorTransport",
    "SerialExecutor",
    "make_executor",
    "make_transport",
    "resolve_workers",
]
