"""What every family's runtime shares: wire protocol, store helpers, throttling, the convergence
rule, joining and leaving a job, the run-config protocol.
"""
