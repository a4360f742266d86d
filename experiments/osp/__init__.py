"""The OSP paper: small real CPU runs of OSP against BSP and R²SP."""
