"""Bytes in and out: where tables live and how their files are read.

* :mod:`.fs`: paths, URIs and filesystems (local, pyarrow, fsspec), listings, atomic writes and
  exclusive commits per store;
* :mod:`.fsutil`: local atomic writes;
* :mod:`.source`: bounded reads from bytes or files;
* :mod:`.serde`: Java's big-endian, modified-UTF-8 and var-int framing;
* :mod:`.checksum`: block and whole-file checksums, sealed JSON;
* :mod:`.pool`: the process's worker threads and the one thread setting;
* :mod:`.memory`: returning freed memory to the system;
* :mod:`.parquet`: the native Parquet reader (footers, page locations, rows at known positions).

Modules here import :mod:`paimon_fast.core`, :mod:`paimon_fast.errors` and the kernels, nothing
above them.
"""
