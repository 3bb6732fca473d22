"""Tests of paimon_fast.globalindex: the bitmap, BTree (SST) and multivalue global indexes and their
registry."""
