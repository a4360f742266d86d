"""The parameter-server schemes BSP, ASP, SSP, R²SP (with batch tuning) and SAFA: one module each,
holding the policy and its record.
"""
