"""The all-reduce family's runtime (all reduce, partial, selective): config, flags, controller
thread, workers, rank entry.
"""
