"""DS-Sync: group patterns, the baselines' patterns and schedules, pattern checks, regrouping."""
