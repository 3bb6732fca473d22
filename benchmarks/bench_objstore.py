"""Selective reads of a dataset on an S3-compatible server (issue 18).

    pytest benchmarks/bench_objstore.py --benchmark-only -s --benchmark-columns=median,min,max,rounds

A moto S3 server runs in this process on 127.0.0.1 (a free port); a Parquet dataset of
``PF_OBJSTORE_BENCH_ROWS`` rows (default 2,000,000) in 20 files (``id`` ascending, so an
``id = X`` lookup has one candidate file; row groups of 50,000 rows), with bloom filters
on ``id`` and a bitmap index on ``code``, is uploaded and indexed there.  Each case
reads through :class:`paimon_fast.tables.ParquetDataset` on the ``s3://`` URI:

* ``lookup``: ``id = X`` with the indexes; ``full``: the same predicate without them
  (every file's columns read, then filtered): the anchor;
* ``bytes``: the bytes fetched from the server (``report.bytes_read``, counted at every
  ranged read), checked against the most the design allows: the catalog, the index
  files, and the footer and column chunks of the candidate files' row groups.

The printed lines give bytes (indexed vs full, ratio) and the medians' ratio; run it a
few times and note ``cat /proc/loadavg``.
"""

import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests.support

from paimon_fast.tables import ParquetDataset  # noqa: E402

ROWS = int(os.environ.get("PF_OBJSTORE_BENCH_ROWS", "2000000"))
FILES = 20
OPTIONS = {
    "file-index.bloom-filter.columns": "id",
    "file-index.bloom-filter.id.items": str(ROWS // FILES),
    "file-index.bloom-filter.id.fpp": "0.01",
    "file-index.bitmap.columns": "code",
}
PROBE = ROWS // 2 + 12345
WHERE = f"id = {PROBE}"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    pytest.importorskip("moto.server")
    from tests.support.s3_support import S3Server

    srv = S3Server()
    local = tmp_path_factory.mktemp("objstore")
    rng = np.random.default_rng(5)
    per = ROWS // FILES
    for i in range(FILES):
        ids = np.arange(i * per, (i + 1) * per, dtype=np.int64)
        pq.write_table(
            pa.table(
                {
                    "id": ids,
                    "code": pa.array([f"c{x:03d}" for x in rng.integers(0, 200, per)]),
                    "amount": rng.uniform(0, 1000, per),
                    "note": pa.array([f"note-{x}" for x in rng.integers(0, 10**6, per)]),
                }
            ),
            local / f"part-{i:03d}.parquet",
            row_group_size=50_000,
        )
    bucket = srv.new_bucket()
    srv.upload_dir(str(local), bucket, "events")
    uri = srv.uri(bucket, "events")
    ParquetDataset(uri).build(OPTIONS)
    yield uri, srv, bucket
    srv.stop()


def _lookup(uri, use_index=True):
    ds = ParquetDataset(uri)
    if use_index:
        t, rep = ds.scan(WHERE)
        return t, rep.bytes_read, rep
    b0 = ds.io.bytes
    plan = ds.plan(None)
    from paimon_fast.core.sqlpredicate import parse_predicate

    pred = parse_predicate(WHERE)
    schema = ds.schema()
    t = pa.concat_tables([ds.read_file(p.file, None, pred, schema=schema) for p in plan.kept])
    return t, ds.io.bytes - b0, None


def _bound(uri, srv, bucket, rep):
    """Catalog + index files + footer and every column chunk of the candidate files."""
    ds = ParquetDataset(uri)
    keys = srv.keys(bucket, "events/")
    size = {k: srv.client.head_object(Bucket=bucket, Key=k)["ContentLength"] for k in keys}
    catalog = size[max(k for k in keys if "/_commits/" in k)]
    index = sum(n for k, n in size.items() if k.endswith(".index"))
    plan = ds.plan(WHERE)
    data = 0
    for p in plan.kept:
        md = pq.ParquetFile(ds.store.open_input(p.file.abs_path)).metadata
        chunks = sum(
            md.row_group(g).column(c).total_compressed_size
            for g in range(md.num_row_groups)
            for c in range(md.num_columns)
        )
        data += 2 * min(p.file.size, 65536) + chunks  # pyarrow's footer read (twice: schema, table) + chunks
    # the dataset's schema comes from the first file's footer
    first = ds.files()[0]
    return catalog + index + data + min(first.size, 65536), len(plan.kept), index, data


@pytest.mark.benchmark(group="objstore-selective-read")
def test_lookup_kernel(benchmark, dataset):
    uri, srv, bucket = dataset
    t, nbytes, rep = benchmark.pedantic(_lookup, args=(uri,), rounds=5, iterations=1)
    assert t.column("id").to_pylist() == [PROBE]
    bound, kept, index, data = _bound(uri, srv, bucket, rep)
    full_bytes = sum(f.size for f in ParquetDataset(uri).files())
    benchmark.extra_info.update(
        impl="kernel",
        bytes_read=nbytes,
        bytes_bound=bound,
        candidate_files=kept,
        dataset_bytes=full_bytes,
        index_bytes=index,
        candidate_bytes=data,
    )
    print(
        f"\nlookup {WHERE}: {nbytes:,} bytes fetched (bound {bound:,}: catalog, index files {index:,}, footers "
        f"and row groups of {kept} candidate file(s) {data:,}); dataset {full_bytes:,} bytes; "
        f"load {os.getloadavg()}"
    )
    assert nbytes <= bound


@pytest.mark.benchmark(group="objstore-selective-read")
def test_lookup_full(benchmark, dataset):
    uri, _, _ = dataset
    t, nbytes, _ = benchmark.pedantic(_lookup, args=(uri, False), rounds=3, iterations=1)
    assert t.column("id").to_pylist() == [PROBE]
    benchmark.extra_info.update(impl="full", bytes_read=nbytes)
    print(f"\nfull read {WHERE}: {nbytes:,} bytes fetched; load {os.getloadavg()}")
