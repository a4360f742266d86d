"""What a run records and reports: the event log (:mod:`.eventlog`), summaries (:mod:`.summary`),
run folders (:mod:`.rundir`), phases, Gantt charts and plots.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []
