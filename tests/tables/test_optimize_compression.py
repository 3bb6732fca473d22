"""How an optimize writes each column (paimon_fast/tables/writer.py, ``column_layout``): a
fixed-width column written without a dictionary that the codec shrinks by less than
``min_compression_saving`` is stored uncompressed, every other column takes the codec; with
``delta_encoding`` (default) a byte-array column without a dictionary is DELTA_LENGTH_BYTE_ARRAY
(its bytes judged as a fixed-width column's values are) and an integer one DELTA_BINARY_PACKED
where that is no larger than its PLAIN values compressed.

The expected choices are computed here from each whole column compressed, or written, at once
(the writer judges four page-sized slices), on columns far from the thresholds."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_fast.errors import OptionError
from paimon_fast.tables import ParquetDataset
import io

from paimon_fast.tables.writer import WriteOptions, column_layout, write_file

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
            "text": pa.array([f"k{v:016x}" for v in rng.integers(0, 1 << 60, N)]),  # Snappy saves ~4%
        }
    )


def _saving(col: pa.ChunkedArray, codec: str) -> float:
    """What ``codec`` saves of a column's non-null values compressed at once: a 64-bit column's
    values, or a byte-array column's bytes."""
    arr = col.combine_chunks().drop_null()
    wide = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    if not (pa.types.is_string(arr.type) or pa.types.is_binary(arr.type) or wide):
        raw = arr.buffers()[1].to_pybytes()[arr.offset * 8 : (arr.offset + len(arr)) * 8]
    else:
        offs = np.frombuffer(arr.buffers()[1], dtype=np.int64 if wide else np.int32)
        raw = arr.buffers()[2].to_pybytes()[offs[arr.offset] : offs[arr.offset + len(arr)]]
    return 1 - len(pa.Codec(codec).compress(raw, asbytes=True)) / len(raw)


def _codecs(path) -> dict:
    rg = pq.ParquetFile(path).metadata.row_group(0)
    return {rg.column(i).path_in_schema: rg.column(i).compression for i in range(rg.num_columns)}


def _encodings(path) -> dict:
    """Each column's data encoding (the levels' RLE and a dictionary's left out)."""
    rg = pq.ParquetFile(path).metadata.row_group(0)
    out = {}
    for i in range(rg.num_columns):
        c = rg.column(i)
        encs = set(c.encodings) - {"RLE", "BIT_PACKED"}
        out[c.path_in_schema] = "DICTIONARY" if c.has_dictionary_page else encs.pop() if len(encs) == 1 else encs
    return out


PLAIN = WriteOptions(delta_encoding=False)  # (the codec rules alone)


@pytest.mark.parametrize("codec", ["snappy", "zstd"])
def test_columns_the_codec_barely_shrinks_are_stored_uncompressed(tmp_path, codec):
    t = _table()
    path = tmp_path / "f.parquet"
    write_file(str(path), t, WriteOptions(compression=codec, delta_encoding=False).check())
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
        write_file(str(path), t, WriteOptions(min_compression_saving=saving, delta_encoding=False).check())
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
    write_file(str(path), t, WriteOptions(compression="zstd", compression_level=9, delta_encoding=False).check())
    got = _codecs(path)
    assert got["noise"] == "UNCOMPRESSED" and got["ids"] == got["text"] == "ZSTD"
    assert pq.read_table(path).equals(t)


def test_what_is_judged():
    """Without dictionaries, every fixed-width column Parquet stores as it is, and no other."""
    t = _table()
    got = column_layout(t, PLAIN.check(), use_dictionary=())
    assert got == ({**{c: "snappy" for c in t.column_names}, "noise": "none", "sorted": "none", "with_nulls": "none",
                    "few": "none"}, None)  # fmt: skip
    assert column_layout(t, PLAIN.check(), use_dictionary=True) == ("snappy", None)
    # INT96 timestamps are not their Arrow values
    ts = pa.table({"ts": pa.array(np.random.default_rng(1).integers(0, 1 << 62, N), pa.timestamp("ns"))})
    assert column_layout(ts, PLAIN.check(), use_dictionary=()) == ({"ts": "none"}, None)
    flavour = {"use_deprecated_int96_timestamps": True}
    assert column_layout(ts, PLAIN.check(), use_dictionary=(), flavour=flavour) == ("snappy", None)
    # and with delta encodings: random 62-bit timestamps stay PLAIN (the deltas are as wide)
    assert column_layout(ts, WriteOptions().check(), use_dictionary=()) == ({"ts": "none"}, None)


def test_nested_columns_leave_every_column_to_the_codec(tmp_path):
    t = _table().append_column("nested", pa.array([{"a": i} for i in range(N)]))
    assert column_layout(t, WriteOptions().check(), use_dictionary=()) == ("snappy", None)
    path = tmp_path / "f.parquet"
    write_file(str(path), t, WriteOptions().check())
    assert set(_codecs(path).values()) == {"SNAPPY"}
    assert not any("DELTA" in str(e) for e in _encodings(path).values())


def _sizes(col: pa.ChunkedArray, encoding: str, codec: str) -> int:
    """The bytes of ``col`` written alone by pyarrow with ``encoding`` and ``codec``."""
    buf = io.BytesIO()
    pq.write_table(pa.table({"c": col}), buf, use_dictionary=False, column_encoding={"c": encoding}, compression=codec)
    return pq.ParquetFile(io.BytesIO(buf.getvalue())).metadata.row_group(0).column(0).total_compressed_size


def _delta_table() -> pa.Table:
    rng = np.random.default_rng(8)
    return pa.table(
        {
            "ids": rng.permutation(N).astype(np.int64),  # 16 bits a delta, 8 bytes plain
            "ids32": (rng.permutation(N) * 7).astype(np.int32),  # (a dictionary: 16,384 values fit one)
            "hash": rng.integers(-(1 << 63), (1 << 63) - 1, N, dtype=np.int64),  # deltas as wide as the values
            "ts": pa.array(np.sort(rng.integers(0, 1 << 40, N)), pa.timestamp("us")),  # sorted: narrow deltas
            "noise": rng.random(N),  # doubles: no delta encoding
            "small": rng.integers(-30000, 30000, N).astype(np.int16),
            "text": pa.array([f"k{v:016x}" for v in rng.integers(0, 1 << 60, N)]),  # Snappy saves ~4%
            "blob": pa.array([rng.bytes(int(k)) for k in rng.integers(0, 40, N)], pa.binary()),
            "words": pa.array([f"alpha beta gamma {v}" for v in rng.integers(0, 1 << 30, N)], pa.large_string()),
            "cat": pa.array([f"c{i % 7}" for i in range(N)]),  # a dictionary: as before
        }
    )


def test_delta_encodings_where_they_read_faster(tmp_path):
    """Byte arrays without a dictionary: DELTA_LENGTH_BYTE_ARRAY, stored uncompressed when the
    codec shrinks their bytes by less than the threshold; integers: DELTA_BINARY_PACKED when
    pyarrow's encoding of the whole column saves the threshold (15%) of its PLAIN values, compressed
    or not, whichever is smaller (the columns here are far from it), compressed as configured;
    other columns as before.  The file reads
    back the same in pyarrow, DuckDB and our reader (natively: no page left to pyarrow)."""
    t = _delta_table()
    path = tmp_path / "d.parquet"
    write_file(str(path), t, WriteOptions().check())
    enc, codecs = _encodings(path), _codecs(path)
    for col in ("ids", "hash", "ts"):
        delta = _sizes(t.column(col), "DELTA_BINARY_PACKED", "snappy")
        plain = min(_sizes(t.column(col), "PLAIN", "snappy"), _sizes(t.column(col), "PLAIN", "none"))
        assert abs(delta / plain - 0.85) > 0.1, (col, delta, plain)  # (far from the threshold)
        assert enc[col] == ("DELTA_BINARY_PACKED" if delta / plain < 0.85 else "PLAIN"), (col, delta, plain)
    assert enc["ids"] == enc["ts"] == "DELTA_BINARY_PACKED" and enc["hash"] == "PLAIN"
    assert enc["ids32"] == "DICTIONARY"  # without one, 32-bit ids are delta-encoded too (32-bit arithmetic)
    assert column_layout(t.select(["ids32"]), WriteOptions().check(), use_dictionary=())[1] == {
        "ids32": "DELTA_BINARY_PACKED"
    }
    assert codecs["ids"] == codecs["ts"] == "SNAPPY" and codecs["hash"] == "UNCOMPRESSED"
    assert enc["text"] == enc["blob"] == enc["words"] == "DELTA_LENGTH_BYTE_ARRAY"
    for col in ("text", "blob", "words"):
        s = _saving(t.column(col), "snappy")
        assert abs(s - 0.15) > 0.03, (col, s)
        assert codecs[col] == ("UNCOMPRESSED" if s < 0.15 else "SNAPPY"), (col, s)
    assert codecs["blob"] == "UNCOMPRESSED" and codecs["words"] == "SNAPPY"  # random bytes; repeated words
    assert enc["noise"] == "PLAIN" and enc["small"] == enc["cat"] == "DICTIONARY"
    # 16-bit integers (INT32 in the file) and doubles get no delta encoding, dictionary or not
    assert column_layout(t.select(["small", "noise"]), WriteOptions().check(), use_dictionary=())[1] is None
    assert pq.read_table(path).equals(t)
    duckdb = pytest.importorskip("duckdb")
    cols = ", ".join(t.column_names)
    rows = duckdb.connect().sql(f"SELECT {cols} FROM '{path}'").fetchall()
    assert rows == [tuple(r.values()) for r in t.to_pylist()]
    from paimon_fast.io.parquet import native
    from paimon_fast.io.parquet.rows import PageReadStats

    st = PageReadStats()
    got, _ = native.read_files([(str(path), None)], stats=st)
    assert got.equals(t) and not st.fallbacks, st.fallbacks


def test_delta_encoding_is_an_option(tmp_path):
    t = _delta_table()
    path = tmp_path / "p.parquet"
    write_file(str(path), t, PLAIN.check())
    assert not any("DELTA" in str(e) for e in _encodings(path).values())
    assert pq.read_table(path).equals(t)
    for bad in ("yes", 1, None):
        with pytest.raises(OptionError, match="delta_encoding"):
            WriteOptions(delta_encoding=bad).check()


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
    assert all(_encodings(f)["id"] == "DELTA_BINARY_PACKED" for f in files)  # (ids in a range: narrow deltas)
    ParquetDataset(str(root)).optimize("noise", full=True, min_compression_saving=0, delta_encoding=False)
    files = sorted(p for p in root.glob("*.parquet"))
    assert all(set(_codecs(f).values()) == {"SNAPPY"} for f in files)
    assert all(set(_encodings(f).values()) == {"PLAIN"} for f in files)
    assert pq.read_table(root).sort_by("id").equals(want)


def test_the_command_keeps_plain_values_when_asked(tmp_path):
    """``paimon-fast optimize DIR --plain-encoding`` writes PLAIN values where the default writes
    delta encodings."""
    from paimon_fast.cli import main

    rng = np.random.default_rng(4)
    root = tmp_path / "ds"
    root.mkdir()
    n = 30_000
    pq.write_table(
        pa.table(
            {"id": rng.permutation(n), "x": rng.random(n), "s": [f"k{v:016x}" for v in rng.integers(0, 1 << 60, n)]}
        ),
        root / "f.parquet",
    )
    want = pq.read_table(root).sort_by("id")
    assert main(["optimize", str(root), "--cluster-by", "x", "--json"]) == 0
    (f,) = root.glob("*.parquet")
    assert _encodings(f) == {"id": "DELTA_BINARY_PACKED", "x": "PLAIN", "s": "DELTA_LENGTH_BYTE_ARRAY"}
    assert main(["optimize", str(root), "--cluster-by", "s", "--full", "--plain-encoding", "--json"]) == 0
    (f,) = root.glob("*.parquet")
    assert _encodings(f) == {"id": "PLAIN", "x": "PLAIN", "s": "PLAIN"}
    assert pq.read_table(root).sort_by("id").equals(want)
