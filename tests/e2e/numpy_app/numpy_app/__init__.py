"""numpy-app: a float64 NumPy model in a stock Flower app (a test fixture)."""
