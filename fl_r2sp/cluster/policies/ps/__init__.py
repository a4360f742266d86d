"""The parameter-server schemes BSP, ASP, SSP, R²SP (with batch tuning) and SAFA: one module each,
holding the policy and its record.

The package only namespaces its modules (import each by its own path); it exports no
names itself.
"""

__all__: list[str] = []
