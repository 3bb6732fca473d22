"""Tests of paimon_fast.paimon: Paimon tables (indexes rewritten, the fast path, global indexes,
top-N, deletion vectors)."""
