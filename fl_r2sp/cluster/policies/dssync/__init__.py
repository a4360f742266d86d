"""DS-Sync: group patterns, the baselines' patterns and schedules, pattern checks, regrouping.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []
