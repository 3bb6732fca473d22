"""Tests of paimon_fast.read: the read object (LazyRead), top-N, the exact Arrow filter."""
