"""The DS-Sync paper: its Tables III-V on the flow-level twin and in small real CPU runs."""
