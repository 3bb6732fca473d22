"""What the object-store tests share (test_objstore.py, test_objstore_spark.py): a small
partitioned dataset written locally (and uploaded to the test S3 server by the tests), its index
options, the predicates asked of it with an oracle of pyarrow's own, and a pypaimon catalog on S3."""

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.s3_support import KEY, REGION, SECRET

OPTIONS = {
    "file-index.bloom-filter.columns": "id",
    "file-index.bloom-filter.id.items": "800",
    "file-index.bitmap.columns": "status",
    "file-index.in-manifest-threshold": "64",
}


PREDICATES = [
    "id = 1234",
    "status = 'paid' AND id < 900",
    "id IN (5, 4000, 99999)",
    "status IS NULL OR region = 'us'",
    "name = 'eu1-3'",
]


def write_dataset(root, rows=800, seed=7):
    rng = np.random.default_rng(seed)
    i = 0
    for region in ("eu", "us"):
        d = os.path.join(root, f"region={region}")
        os.makedirs(d, exist_ok=True)
        for k in range(3):
            ids = np.arange(i * rows, (i + 1) * rows, dtype=np.int64)
            pq.write_table(
                pa.table(
                    {
                        "id": ids,
                        "name": pa.array([f"{region}{i}-{j % 7}" for j in range(rows)]),
                        "status": pa.array([["new", "paid", "sent", None][int(x)] for x in rng.integers(0, 4, rows)]),
                        "score": np.round(rng.uniform(0, 100, rows), 1),
                    }
                ),
                os.path.join(d, f"part-{k}.parquet"),
                row_group_size=200,
            )
            i += 1
    return root


def oracle(root, where):
    """The rows where ``where`` holds, from a full pyarrow read filtered by pyarrow.compute
    (the SQL text parsed to an Arrow expression by hand, not by the product's filter)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as pads

    paths = sorted(os.path.join(d, f) for d, _, fs_ in os.walk(root) for f in fs_ if f.endswith(".parquet"))
    t = pads.dataset(paths, format="parquet", partitioning="hive", partition_base_dir=root).to_table()
    c = {n: pc.field(n) for n in t.column_names}
    expr = {
        "id = 1234": c["id"] == 1234,
        "status = 'paid' AND id < 900": (c["status"] == "paid") & (c["id"] < 900),
        "id IN (5, 4000, 99999)": c["id"].isin([5, 4000, 99999]),
        "status IS NULL OR region = 'us'": c["status"].is_null() | (c["region"] == "us"),
        "name = 'eu1-3'": c["name"] == "eu1-3",
        "status = 'sent'": c["status"] == "sent",
        "name = 'us4-2'": c["name"] == "us4-2",
    }[where]
    return sorted(t.filter(expr).column("id").to_pylist())


def paimon_catalog(s3_server, bucket):
    """A pypaimon catalog whose warehouse is ``s3://bucket/wh`` on the test S3 server."""
    from pypaimon import CatalogFactory

    return CatalogFactory.create(
        {
            "warehouse": f"s3://{bucket}/wh",
            "fs.s3.endpoint": s3_server.endpoint_url,
            "fs.s3.accessKeyId": KEY,
            "fs.s3.accessKeySecret": SECRET,
            "fs.s3.region": REGION,
            "fs.s3.path-style-access": "true",
        }
    )


@pytest.fixture(autouse=True)
def no_statistics(monkeypatch):
    """Autouse in the modules that import it: local and S3 plans compared there prune alike, by the
    indexes, without the Parquet statistics a local plan also reads (their footers cost a request
    per file on S3, where plans skip them)."""
    import paimon_fast.tables.parquet as dataset

    monkeypatch.setattr(dataset, "STATISTICS", False)
