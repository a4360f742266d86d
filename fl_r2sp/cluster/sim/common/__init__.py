"""What the cluster twins share: typed events and their dispatch."""
