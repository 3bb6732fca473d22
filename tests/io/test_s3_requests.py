"""How many requests reads of S3 data files make (each one a round trip on a real store), and that
every one of them is still pinned to the listed ETag: a data file's footer is read by one GET of
its tail (:class:`~paimon_fast.tables.identity.PinnedS3File`), the column chunks a native read
needs by one GET per run of chunks closer than the hole limit
(:func:`paimon_fast.io.parquet.native._merge_ranges`)."""

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_fast.errors import DataFileChangedError
from paimon_fast.io.parquet import native
from paimon_fast.io.parquet.native import _merge_ranges, read_files
from paimon_fast.tables import identity as _identity
from paimon_fast.tables.identity import TAIL_BYTES, Identity, PinnedS3File, read_witness


class CountingClient:
    """A boto3 client whose ``get_object`` calls are recorded (their keyword arguments)."""

    def __init__(self, client):
        self._client = client
        self.gets = []

    def get_object(self, **kw):
        self.gets.append(kw)
        return self._client.get_object(**kw)


def _parquet(nrows: int, row_groups: int) -> bytes:
    """Three incompressible int64 columns (no dictionary, no compression): chunk sizes follow the rows."""
    rng = np.random.default_rng(3)
    t = pa.table({c: rng.integers(0, 1 << 62, nrows) for c in ("a", "b", "c")})
    b = io.BytesIO()
    pq.write_table(
        t, b, row_group_size=nrows // row_groups, compression="none", use_dictionary=False, write_page_index=True
    )
    return b.getvalue()


@pytest.fixture
def s3_object(s3_server):
    """``put(data) -> (counting client, "bucket/key", Identity)`` of an object uploaded to the test server."""
    bucket = s3_server.new_bucket()

    def put(data: bytes, key: str = "d/part-0.parquet"):
        r = s3_server.client.put_object(Bucket=bucket, Key=key, Body=data)
        return CountingClient(s3_server.client), f"{bucket}/{key}", Identity(len(data), 0, etag=r["ETag"])

    put.server, put.bucket = s3_server, bucket
    return put


def _pinned(gets, ident):
    return all(g.get("IfMatch") == ident.etag for g in gets)


def test_footer_schema_and_witness_of_a_file_are_one_get(s3_object):
    data = _parquet(40_000, 4)
    footer = int.from_bytes(data[-8:-4], "little") + 8
    assert len(data) > TAIL_BYTES > footer  # the layout the count below is derived from
    client, path, ident = s3_object(data)
    f = PinnedS3File(client, path, ident)
    names = pq.read_schema(f).names  # the footer's length, then the footer (pyarrow: its last 64 KiB)
    assert pq.read_metadata(f).num_rows == 40_000 and names == ["a", "b", "c"]
    assert read_witness(None, path, ident, opened=f) == _identity.witness_of(data[-TAIL_BYTES:])
    assert len(client.gets) == 1 and _pinned(client.gets, ident)
    assert client.gets[0]["Range"] == f"bytes={len(data) - TAIL_BYTES}-{len(data) - 1}"
    # bytes before the tail: a GET of their own, pinned as well
    f.seek(0)
    assert f.read(4) == b"PAR1"
    assert len(client.gets) == 2 and _pinned(client.gets, ident)


def test_a_file_no_longer_than_the_tail_is_read_by_one_get(s3_object):
    data = _parquet(2_000, 2)
    assert len(data) <= TAIL_BYTES
    client, path, ident = s3_object(data)
    f = PinnedS3File(client, path, ident)
    assert pq.read_table(f).equals(pq.read_table(io.BytesIO(data)))
    assert len(client.gets) == 1 and _pinned(client.gets, ident)


def test_a_native_read_gets_the_tail_then_each_run_of_chunks_once(s3_object, monkeypatch):
    data = _parquet(40_000, 4)
    md = pq.read_metadata(io.BytesIO(data))
    # the wanted chunks (a, c) of the 4 row groups are separated by b's chunks: holes under the limit
    holes = [md.row_group(g).column(1).total_compressed_size for g in range(md.num_row_groups)]
    assert 0 < max(holes) < native._HOLE_BYTES and len(data) < native._RANGE_BYTES
    client, path, ident = s3_object(data)
    pos = np.arange(0, 40_000, 997, dtype=np.int64)
    want = pq.read_table(io.BytesIO(data), columns=["a", "c"]).take(pa.array(pos))
    t, _ = read_files([(PinnedS3File(client, path, ident), pos)], ["a", "c"])
    assert t.equals(want)
    # one GET of the tail (the footer), one of every chunk wanted (and its offset index)
    assert len(client.gets) == 2 and _pinned(client.gets, ident)
    # without merging across holes: a GET per chunk (the chunks before the tail; what every read made before)
    monkeypatch.setattr(native, "_HOLE_BYTES", 0)
    client.gets.clear()
    t, _ = read_files([(PinnedS3File(client, path, ident), pos)], ["a", "c"])
    assert t.equals(want)
    chunks = sorted(
        (cc.data_page_offset, cc.data_page_offset + cc.total_compressed_size)
        for g in range(md.num_row_groups)
        for cc in (md.row_group(g).column(0), md.row_group(g).column(2))
    )
    runs = 1 + sum(a != prev_end for (_, prev_end), (a, _) in zip(chunks, chunks[1:]))  # (c's chunk touches a's next)
    assert len(client.gets) == 1 + runs > 2 and _pinned(client.gets, ident)


def test_merge_ranges_holes_and_limit():
    assert _merge_ranges([(10, 20), (0, 10), (15, 30)]) == [[0, 30]]  # touching, overlapping
    assert _merge_ranges([(0, 10), (15, 20)], hole=5) == [[0, 20]]
    assert _merge_ranges([(0, 10), (16, 20)], hole=5) == [[0, 10], [16, 20]]
    assert _merge_ranges([(0, 10), (12, 20), (22, 30)], hole=5, limit=20) == [[0, 20], [22, 30]]
    assert _merge_ranges([(0, 50), (50, 100)], hole=0, limit=10) == [[0, 100]]  # touching: always one


@pytest.mark.parametrize("when", ["before the first read", "after the tail was read"])
def test_a_replaced_object_still_fails_the_read(s3_object, when):
    data = _parquet(40_000, 4)
    client, path, ident = s3_object(data)
    f = PinnedS3File(client, path, ident)
    if when == "after the tail was read":
        pq.read_metadata(f)
    s3_object(data[:-12] + b"\0\0\0\0" + data[-8:])  # the same size, another ETag
    with pytest.raises(DataFileChangedError, match="was replaced"):
        f.seek(0)
        f.read(100)
    # a new file object of the old version does not serve kept bytes: its tail GET fails too
    with pytest.raises(DataFileChangedError, match="was replaced"):
        pq.read_metadata(PinnedS3File(client, path, ident))
    assert _pinned(client.gets, ident)
