"""The all-reduce family's simulator: spec, workloads, flow-level rings, event loop, results."""
