"""Tests of paimon_fast.spark: the Spark pipeline, its reads, deletes, optimize and global index
builds, the session, the demo."""
