"""What every cluster policy shares: the coordinator contract, decision tracing, the base of the
parameter-server scheme records.
"""
