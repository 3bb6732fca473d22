"""Tests of paimon_fast.fileindex: the container, bloom filter, bitmap, range bitmap and BSI
(kernels, twins, Java's golden vectors, fuzzing)."""
