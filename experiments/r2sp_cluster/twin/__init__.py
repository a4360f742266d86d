"""The R²SP paper's cluster items on the virtual-time twin, one module per item."""
