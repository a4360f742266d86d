"""reduce."""
