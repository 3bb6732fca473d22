"""Which columns an optimize compresses (paimon_fast/tables/writer.py, ``column_compression``): a
fixed-width column written without a dictionary that the codec shrinks by less than
``min_compression_saving`` is stored uncompressed; every other column takes the codec.

The expected choice is computed here from each whole column compressed at once (the writer judges
four page-sized slices), on columns whose saving is far from the threshold."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_fast.errors import OptionError
from paimon_fast.tables import ParquetDataset
from paimon_fast.tables.writer import WriteOptions, column_compression, write_file

N = 50_000


def _table() -> pa.Table:
    rng = np.random.default_rng(5)
    noisy = rng.random(N)
    gaps = rng.random(N) < 0.5
    return pa.table(
        {
            "ids": rng.permutation(N).astype(np.int64),  # 16 bits of 64 vary: Snappy saves a lot
            "noise": noisy,  # random doubles: nothing to save
            "sorted": np.sort(rng.random(N) * 5 + 780),  # a clustered column: about 10% saved
            "with_nulls": pa.array(np.where(gaps, 0.0, noisy), mask=gaps),  # judged by its values only
            "small": rng.integers(-30000, 30000, N).astype(np.int16),  # stored as INT32: not judged
            # 16,000 random values: a dictionary (not judged), which as plain values Snappy would not shrink
            "few": rng.integers(-(1 << 31), 1 << 31, 16_000).astype(np.int32)[rng.integers(0, 16_000, N)],
            "text": pa.array([f"k{v:012d}" for v in rng.integers(0, 1 << 40, N)]),
        }
    )


def _saving(col: pa.ChunkedArray, codec: str) -> float:
    arr = col.combine_chunks().drop_null()
    raw = arr.buffers()[1].to_pybytes()[arr.offset * 8 : (arr.offset + len(arr)) * 8]
    return 1 - len(pa.Codec(codec).compress(raw, asbytes=True)) / len(raw)


def _codecs(path) -> dict:
    rg = pq.ParquetFile(path).metadata.row_group(0)
    return {rg.column(i).path_in_schema: rg.column(i).compression for i in range(rg.num_columns)}


@pytest.mark.parametrize("codec", ["snappy", "zstd"])
def test_columns_the_codec_barely_shrinks_are_stored_uncompressed(tmp_path, codec):
    t = _table()
    path = tmp_path / "f.parquet"
    write_file(str(path), t, WriteOptions(compression=codec).check())
    got = _codecs(path)
    name = codec.upper()
    # (ZSTD saves 14% of the sorted doubles here: too near the threshold for this oracle)
    for col in ("ids", "noise", "with_nulls") + (("sorted",) if codec == "snappy" else ()):
        s = _saving(t.column(col), codec)
        assert abs(s - 0.15) > 0.03, (col, s)  # (the test's columns are far from the threshold)
        assert got[col] == ("UNCOMPRESSED" if s < 0.15 else name), (col, s)
    assert got["noise"] == got["with_nulls"] == "UNCOMPRESSED" and got["ids"] == name
    assert got["small"] == got["few"] == got["text"] == name
    assert pq.read_table(path).equals(t)


def test_the_threshold_is_an_option(tmp_path):
    t = _table()
    for saving, uncompressed in ((0, set()), (0.5, {"ids", "noise", "sorted", "with_nulls"})):
        path = tmp_path / f"{saving}.parquet"
        write_file(str(path), t, WriteOptions(min_compression_saving=saving).check())
        got = _codecs(path)
        assert {c for c, v in got.items() if v == "UNCOMPRESSED"} == uncompressed
        assert set(got.values()) - {"UNCOMPRESSED"} == {"SNAPPY"}
        assert pq.read_table(path).equals(t)
    for bad in (1, 1.5, -0.1, True, "0.2", None):
        with pytest.raises(OptionError, match="min_compression_saving"):
            WriteOptions(min_compression_saving=bad).check()


def test_a_compression_level_goes_to_the_compressed_columns_only(tmp_path):
    t = _table()
    path = tmp_path / "f.parquet"
    write_file(str(path), t, WriteOptions(compression="zstd", compression_level=9).check())
    got = _codecs(path)
    assert got["noise"] == "UNCOMPRESSED" and got["ids"] == got["text"] == "ZSTD"
    assert pq.read_table(path).equals(t)


def test_what_is_judged():
    """Without dictionaries, every fixed-width column Parquet stores as it is, and no other."""
    t = _table()
    got = column_compression(t, WriteOptions().check(), use_dictionary=())
    assert got == {**{c: "snappy" for c in t.column_names}, "noise": "none", "sorted": "none", "with_nulls": "none",
                   "few": "none"}  # fmt: skip
    assert column_compression(t, WriteOptions().check(), use_dictionary=True) == "snappy"
    # INT96 timestamps are not their Arrow values
    ts = pa.table({"ts": pa.array(np.random.default_rng(1).integers(0, 1 << 62, N), pa.timestamp("ns"))})
    assert column_compression(ts, WriteOptions().check(), use_dictionary=()) == {"ts": "none"}
    flavour = {"use_deprecated_int96_timestamps": True}
    assert column_compression(ts, WriteOptions().check(), use_dictionary=(), flavour=flavour) == "snappy"


def test_nested_columns_leave_every_column_to_the_codec(tmp_path):
    t = _table().append_column("nested", pa.array([{"a": i} for i in range(N)]))
    assert column_compression(t, WriteOptions().check(), use_dictionary=()) == "snappy"
    path = tmp_path / "f.parquet"
    write_file(str(path), t, WriteOptions().check())
    assert set(_codecs(path).values()) == {"SNAPPY"}


def test_optimize_writes_and_reads_them(tmp_path):
    rng = np.random.default_rng(9)
    root = tmp_path / "ds"
    root.mkdir()
    for k in range(3):
        n = 20_000
        pq.write_table(
            pa.table({"id": np.arange(k * n, (k + 1) * n), "x": rng.random(n) * 1000, "noise": rng.random(n)}),
            root / f"f{k}.parquet",
        )
    want = pq.read_table(root).sort_by("id")
    ds = ParquetDataset(str(root))
    ds.optimize("x", min_compression_saving=0.15)
    files = sorted(p for p in root.glob("*.parquet"))
    assert files and all(_codecs(f)["noise"] == "UNCOMPRESSED" and _codecs(f)["id"] == "SNAPPY" for f in files)
    assert pq.read_table(root).sort_by("id").equals(want)
    got = ParquetDataset(str(root)).read("noise < 0.01").to_arrow().sort_by("id")
    assert got.equals(want.filter(pa.compute.less(want["noise"], 0.01)))
    ParquetDataset(str(root)).optimize("noise", full=True, min_compression_saving=0)
    files = sorted(p for p in root.glob("*.parquet"))
    assert all(set(_codecs(f).values()) == {"SNAPPY"} for f in files)
    assert pq.read_table(root).sort_by("id").equals(want)
