"""OSP's roles on the parameter-server runtime: layer layout, GIB planner, two-stage shards,
servers, links and workers.
"""
