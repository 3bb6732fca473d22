"""Tests of paimon_fast.io: filesystems and object stores, sources, the worker pool, memory."""
