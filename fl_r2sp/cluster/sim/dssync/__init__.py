"""DS-Sync's flow-level twin: communication time per iteration in racks."""
