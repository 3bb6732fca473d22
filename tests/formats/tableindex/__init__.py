"""Tests of paimon_fast.tableindex: deletion vectors, deletion files, Puffin, the hash index."""
