"""Tests of paimon_fast.io.parquet: the native Parquet reader and the readers of chosen rows and
pages."""
