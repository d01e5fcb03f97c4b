"""The offline digital wallet built on virtual counters (paper Table I, with the ordering fixed)."""
