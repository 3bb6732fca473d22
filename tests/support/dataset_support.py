"""The small partitioned Parquet dataset of the dataset-layer tests (test_parquet_dataset.py,
test_dataset_deletes.py): two partitions ``p=a`` / ``p=b`` of files with ``id``, ``name`` (some
nulls), ``score`` and ``status``, and the bloom filter options they are indexed with."""

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from paimon_fast.tables import ParquetDataset

BLOOM = {
    "file-index.bloom-filter.columns": "id,name",
    "file-index.bloom-filter.id.items": "500",
    "file-index.bloom-filter.id.fpp": "0.01",
    "file-index.bloom-filter.name.items": "50",
    "file-index.bloom-filter.name.fpp": "0.01",
}


def make_dataset(root, files_per_part=3, rows=400, seed=0):
    rng = np.random.default_rng(seed)
    i = 0
    for part in ("a", "b"):
        os.makedirs(root / f"p={part}", exist_ok=True)
        for k in range(files_per_part):
            ids = np.arange(i * rows, (i + 1) * rows, dtype=np.int64)
            names = [None if j % 37 == 0 else f"n{(i * 7 + j % 5)}" for j in range(rows)]
            score = rng.normal(50, 20, rows)
            pq.write_table(
                pa.table(
                    {
                        "id": ids,
                        "name": pa.array(names, pa.string()),
                        "score": score,
                        "status": pa.array([["new", "paid", "sent"][j % 3] for j in range(rows)]),
                    }
                ),
                root / f"p={part}" / f"f{k}.parquet",
                row_group_size=100,
            )
            i += 1
    return ParquetDataset(str(root))
