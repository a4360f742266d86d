"""dssync."""
