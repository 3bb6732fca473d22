"""The dataset of the global index read tests (test_globalindex_pruning.py in this process,
test_globalindex_spark_read.py on Spark): 2,400 rows in four files at different depths (``a/``,
``b.parquet``, ``c/d/``: directories that are not partitions) with a ``tag`` string and a ``num``
int to index globally (a few nulls each), an ``id`` and a ``status``, and the file index options
built beside the global index."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

FILE_OPTIONS = {
    "file-index.bloom-filter.columns": "id",
    "file-index.bloom-filter.id.items": "1000",
    "file-index.bitmap.columns": "status",
}


def write_dataset(root, seed=5):
    rng = np.random.default_rng(seed)
    layout = [("a/part-0.parquet", 700), ("a/part-1.parquet", 500), ("b.parquet", 900), ("c/d/e.parquet", 300)]
    start = 0
    for rel, n in layout:
        tags = [None if rng.random() < 0.04 else f"t{int(rng.integers(0, 60)):02d}" for _ in range(n)]
        nums = [None if rng.random() < 0.04 else int(rng.integers(-500, 500)) for _ in range(n)]
        t = pa.table(
            {
                "id": np.arange(start, start + n, dtype=np.int64),
                "tag": pa.array(tags, pa.string()),
                "num": pa.array(nums, pa.int32()),
                "status": pa.array([["new", "paid", "sent"][int(x)] for x in rng.integers(0, 3, n)]),
            }
        )
        start += n
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(t, str(p), row_group_size=256)
    return str(root)
