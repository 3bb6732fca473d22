"""Plain-Python twins of every compiled kernel: the oracle in tests and the
baseline in benchmarks.  They favour obviousness over speed."""
