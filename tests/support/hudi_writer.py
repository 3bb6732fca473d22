"""Test support: the copy-on-write Hudi writer, which moved into the package
(:mod:`paimon_fast.hudi.sample`, also behind ``paimon-fast sample hudi``); its names are handed
on here for the tests and benchmarks that import them from this module."""

from paimon_fast.hudi.sample import META, CowTable, avro_schema  # noqa: F401
