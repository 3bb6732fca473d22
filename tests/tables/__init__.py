"""Tests of paimon_fast.tables: Parquet datasets (catalog, build, plans, reads, deletes, optimize,
gc, global indexes)."""
