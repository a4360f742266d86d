"""The R²SP paper's cluster items in small real CPU runs of the cluster runtime."""
