"""Policy: what goes into a context pack."""
