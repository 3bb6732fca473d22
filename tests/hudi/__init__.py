"""Tests of paimon_fast.hudi: the Hudi RFC-92 bitmap index."""
