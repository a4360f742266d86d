"""What every family's runtime shares: wire protocol, store helpers, throttling, the convergence
rule, joining and leaving a job, the run-config protocol.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []
