"""The DS-Sync family's runtime (DS-Sync, hierarchical all-reduce, gossip): config, flags, rack
network, plans, workers, rank entry.
"""
