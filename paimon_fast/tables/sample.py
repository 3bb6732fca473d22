"""A sample Parquet dataset: the demo's, the examples' ``events/`` and the benchmarks' (the
Parquet kind's counterpart of :mod:`paimon_fast.hudi.sample`).  ``paimon-fast sample parquet``
(:mod:`paimon_fast.samples`) and ``paimon-fast demo`` (:mod:`paimon_fast.spark.demo`) write it."""

from __future__ import annotations

import os

COUNTRIES = {
    "eu": ["DE", "FR", "IT", "ES", "NL", "PL", "SE", "NO"],
    "us": ["US", "CA", "MX", "BR", "AR", "CL", "CO", "PE"],
    "asia": ["JP", "CN", "IN", "KR", "SG", "TH", "VN", "ID"],
}
STATUSES = ["new", "paid", "shipped", "returned"]


def generate_sample(out: str, rows: int, files: int, seed: int = 42, progress=None) -> list:
    """A realistic sample dataset: ``region=`` partitions, ``files`` Parquet files,
    ``id`` (BIGINT, unique), ``user_id`` (STRING, ~rows/4 distinct), ``country``
    (STRING, 3 of 8 per file), ``status`` (STRING, 4 values), ``amount`` (DOUBLE),
    ``qty`` (INT, 1..50).  ``progress(done, total)`` is called after each file.  Returns the
    written paths."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    regions = list(COUNTRIES)
    per_file = max(1, rows // files)
    users = max(1, rows // 4)
    paths = []
    for i in range(files):
        region = regions[i % len(regions)]
        d = os.path.join(out, f"region={region}")
        os.makedirs(d, exist_ok=True)
        own = np.array(COUNTRIES[region])[rng.choice(8, 3, replace=False)]
        n = per_file if i < files - 1 else rows - per_file * (files - 1)
        ids = np.arange(i * per_file, i * per_file + n, dtype=np.int64)
        uid = rng.integers(0, users, n)
        t = pa.table(
            {
                "id": ids,
                "user_id": pa.array(np.char.add("u", np.char.zfill(uid.astype(str), 8))),
                "country": pa.array(own[rng.integers(0, 3, n)]),
                "status": pa.array(np.array(STATUSES)[rng.integers(0, 4, n)]),
                "amount": np.round(rng.gamma(2.0, 30.0, n), 2),
                "qty": pa.array(rng.integers(1, 51, n).astype(np.int32)),
            }
        )
        p = os.path.join(d, f"part-{i:05d}.parquet")
        pq.write_table(t, p, row_group_size=1 << 20)
        paths.append(p)
        if progress is not None:
            progress(i + 1, files)
    return paths
