"""The parameter-server runtime: shards, PS ranks, the coordinator thread, Algorithm 1's worker,
rank 0's leader, the PS rank entry and flags.
"""
