"""The native Parquet reader (csrc/pq_read.h through paimon_fast._kernels.pqread, driven by
paimon_fast.io.parquet.native.read_files) and its pure-Python twin (paimon_fast.reference.pqread).

Every read is compared with pyarrow's (``pq.read_table(path, columns).take(positions)``): every
flat Arrow type pyarrow writes, nulls and REQUIRED columns, every codec, data pages V1 and V2,
dictionary on, off and falling back, many pages with and without the page index, several row
groups, any positions, many files under one schema, one thread or four; the types the reader
hands to pyarrow come back the same and are counted in ``stats.fallbacks``.  The twin gives the
kernel's statuses and buffers for the same jobs (valid files, mutated files and crafted column
chunks); its Snappy / LZ4_RAW decoders give the kernel's bytes.  Truncated and mutated files
never crash or hang a read: it raises IndexFormatError or returns a table."""

from __future__ import annotations

import decimal
import faulthandler
import io
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_fast.errors import IndexFormatError, InvalidArgumentError
from paimon_fast.io.parquet import native
from paimon_fast.io.parquet.rows import PageReadStats
from paimon_fast.io.parquet.thrift import _T_I32, _T_I64, _T_STRUCT, _Encoder

KERNEL = native.kernels()
TWIN = native.kernels(twin=True)

CODECS = ["NONE", "SNAPPY", "GZIP", "BROTLI", "ZSTD", "LZ4"]  # pyarrow's "lz4" writes LZ4_RAW
_PQ_CODEC = {"NONE": 0, "SNAPPY": 1, "GZIP": 2, "BROTLI": 4, "ZSTD": 6, "LZ4": 7}
# pyarrow's default Brotli level made its compressor, writing the tests' files, most of a Brotli
# test's time: 20 s of each under the sanitizers' allocator (tools/sanitize.sh).  Our reader makes
# the same one call into libbrotlidec per page whatever the level.
BROTLI_LEVEL = 1


# ---------------------------------------------------------------- tables and oracles
def _wide(rng, n: int, null_frac: float = 0.2) -> pa.Table:
    """A table of every flat type the reader decodes: nullable columns with some nulls, one all
    null, one nullable without nulls, and REQUIRED (non-nullable) columns."""

    def mask():
        return rng.random(n) < null_frac

    big = rng.integers(-(1 << 62), 1 << 62, n)
    few = rng.integers(-50, 50, n)
    ints = np.where(rng.random(n) < 0.5, few, big)  # dictionary pages, and some PLAIN
    words = np.array([f"w{v}" * int(1 + v % 5) for v in range(80)])
    strs = [str(s) for s in words[rng.integers(0, 80, n)]]
    hstrs = [f"h{x}-{x * 7919 % 1000003}" for x in rng.integers(0, 1 << 40, n)]
    dec = [decimal.Decimal(int(x)) for x in ints]
    f64 = rng.normal(size=n) * 1e6
    f64[rng.random(n) < 0.02] = np.inf  # (NaN: test_nan_and_signed_zero, equals() takes NaN != NaN)
    f64[rng.random(n) < 0.02] = -0.0
    cols = [
        ("bool", pa.array(rng.random(n) < 0.5, mask=mask())),
        ("i8", pa.array(rng.integers(-128, 128, n), pa.int8(), mask=mask())),
        ("i16", pa.array(rng.integers(-(1 << 15), 1 << 15, n), pa.int16(), mask=mask())),
        ("i32", pa.array(ints % (1 << 31), pa.int32(), mask=mask())),
        ("i64", pa.array(ints, pa.int64(), mask=mask())),
        ("u8", pa.array(rng.integers(0, 256, n), pa.uint8(), mask=mask())),
        ("u16", pa.array(rng.integers(0, 1 << 16, n), pa.uint16(), mask=mask())),
        ("u32", pa.array(rng.integers(0, 1 << 32, n, dtype=np.uint64), pa.uint32(), mask=mask())),
        ("u64", pa.array(rng.integers(0, (1 << 64) - 1, n, dtype=np.uint64), pa.uint64(), mask=mask())),
        ("f16", pa.array(rng.normal(size=n).astype(np.float16), pa.float16(), mask=mask())),
        ("f32", pa.array(rng.normal(size=n).astype(np.float32), mask=mask())),
        ("f64", pa.array(f64, mask=mask())),
        ("date", pa.array(rng.integers(-20000, 40000, n).astype(np.int32), pa.date32(), mask=mask())),
        ("t32", pa.array(rng.integers(0, 86400000, n).astype(np.int32), pa.time32("ms"), mask=mask())),
        ("t64us", pa.array(rng.integers(0, 86400 * 10**6, n), pa.time64("us"), mask=mask())),
        ("t64ns", pa.array(rng.integers(0, 86400 * 10**9, n), pa.time64("ns"), mask=mask())),
        ("ts_s", pa.array(rng.integers(-(1 << 33), 1 << 33, n), pa.timestamp("s"), mask=mask())),
        ("ts_ms", pa.array(rng.integers(-(1 << 43), 1 << 43, n), pa.timestamp("ms"), mask=mask())),
        ("ts_us", pa.array(big >> 10, pa.timestamp("us"), mask=mask())),
        ("ts_ns", pa.array(big, pa.timestamp("ns"), mask=mask())),
        ("ts_ms_tz", pa.array(rng.integers(0, 1 << 43, n), pa.timestamp("ms", "UTC"), mask=mask())),
        ("ts_ns_tz", pa.array(big, pa.timestamp("ns", "Asia/Tokyo"), mask=mask())),
        ("dur", pa.array(ints, pa.duration("us"), mask=mask())),
        ("dec_s", pa.array([d % 10**9 / 100 for d in dec], pa.decimal128(9, 2), mask=mask())),
        ("dec_m", pa.array([d % 10**18 / 10**4 for d in dec], pa.decimal128(18, 4), mask=mask())),
        ("dec_l", pa.array([d * 10**15 / 10**6 for d in dec], pa.decimal128(38, 6), mask=mask())),
        ("dec256", pa.array([d * 10**30 / 1000 for d in dec], pa.decimal256(60, 3), mask=mask())),
        ("str", pa.array(strs, pa.string(), mask=mask())),
        ("lstr", pa.array(hstrs, pa.large_string(), mask=mask())),
        ("bin", pa.array([s.encode() for s in hstrs], pa.binary(), mask=mask())),
        ("lbin", pa.array([s.encode() * 2 for s in strs], pa.large_binary(), mask=mask())),
        ("empty_str", pa.array([""] * n, pa.string(), mask=mask())),
        ("fsb", pa.array([int(x).to_bytes(8, "little", signed=True)[:6] for x in ints], pa.binary(6), mask=mask())),
        ("all_null", pa.nulls(n, pa.int32())),
        ("no_null", pa.array(ints, pa.int64())),
    ]
    required = [
        ("req_i32", pa.array(ints % 1000, pa.int32())),
        ("req_i64", pa.array(big, pa.int64())),
        ("req_bool", pa.array(rng.random(n) < 0.3)),
        ("req_f64", pa.array(rng.normal(size=n))),
        ("req_str", pa.array(strs)),
        ("req_dec", pa.array([d % 10**9 / 10 for d in dec], pa.decimal128(9, 1))),
        ("req_fsb", pa.array([int(x).to_bytes(8, "little", signed=True)[:3] for x in ints], pa.binary(3))),
    ]
    fields = [pa.field(k, v.type) for k, v in cols] + [pa.field(k, v.type, nullable=False) for k, v in required]
    return pa.Table.from_arrays([v for _, v in cols + required], schema=pa.schema(fields))


def _write(path, table, **opts):
    opts.setdefault("row_group_size", 700)
    opts.setdefault("data_page_size", 1024)
    opts.setdefault("write_batch_size", 128)  # pages end at batch ends: small pages need small batches
    opts.setdefault("write_page_index", True)
    if str(opts.get("compression", "")).lower() == "brotli":
        opts.setdefault("compression_level", BROTLI_LEVEL)
    pq.write_table(table, str(path), **opts)
    return str(path)


def _read(items, columns=None, **kw):
    st = PageReadStats()
    got, counts = native.read_files(items, columns, stats=st, **kw)
    return got, counts, st


def _oracle(path, positions, columns=None) -> pa.Table:
    t = pq.read_table(path, columns=columns)
    return t if positions is None else t.take(pa.array(np.asarray(positions, dtype=np.int64)))


def _assert_same(got: pa.Table, exp: pa.Table):
    """``got`` equals pyarrow's ``exp``: schema and values (which columns differ, if not)."""
    assert got.schema == exp.schema, f"schemas differ:\n{got.schema}\n---\n{exp.schema}"
    assert got.num_rows == exp.num_rows
    if not got.equals(exp):
        bad = [n for n in exp.column_names if not got.column(n).equals(exp.column(n))]
        detail = {n: (got.column(n).to_pylist()[:8], exp.column(n).to_pylist()[:8]) for n in bad[:3]}
        raise AssertionError(f"columns {bad} differ from pyarrow's: {detail}")
    # the null counts the arrays carry (the reader's own count of the slots it made null)
    nulls = {n: (got.column(n).null_count, exp.column(n).null_count) for n in exp.column_names}
    assert all(a == b for a, b in nulls.values()), nulls


def _check(path, positions, columns=None, **kw):
    got, counts, st = _read([(path, positions)], columns, **kw)
    _assert_same(got, _oracle(path, positions, columns))
    assert list(counts) == [got.num_rows]
    return st


def _positions(rng, n, frac=0.2):
    return np.sort(rng.choice(n, int(n * frac), replace=False))


# ---------------------------------------------------------------- types, nulls, codecs, pages
@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("codec", CODECS)
def test_every_type_codec_and_page_version(tmp_path, codec, version):
    rng = np.random.default_rng(_PQ_CODEC[codec] * 10 + int(version[0]))
    n = 1800
    t = _wide(rng, n)
    pos = _positions(rng, n)
    # dictionary on with the page index, as integers for small decimals; dictionary off without
    a = _write(tmp_path / "a.parquet", t, compression=codec, data_page_version=version, store_decimal_as_integer=True)
    b = _write(
        tmp_path / "b.parquet",
        t,
        compression=codec,
        data_page_version=version,
        use_dictionary=False,
        write_page_index=False,
        row_group_size=1000,
    )
    # the Parquet format 1.0: PLAIN_DICTIONARY pages, fewer logical types (some columns then go
    # to pyarrow: the result is the same)
    c = _write(
        tmp_path / "c.parquet",
        t,
        compression=codec,
        data_page_version=version,
        version="1.0",
        coerce_timestamps="us",
        allow_truncated_timestamps=True,
    )
    _check(c, pos)
    for path in (a, b):
        st = _check(path, pos)
        assert not st.fallbacks, st.fallbacks
        md = pq.ParquetFile(path).metadata
        starts = np.cumsum([0] + [md.row_group(g).num_rows for g in range(md.num_row_groups)])
        groups = len(set(np.searchsorted(starts, pos, side="right").tolist()))
        assert st.columns_by_page == t.num_columns * groups
        assert 0 < st.pages_read <= st.pages_total


def test_decimal_physical_types(tmp_path):
    """Decimals stored as INT32, INT64 and FIXED_LEN_BYTE_ARRAY, and decimal256."""
    rng = np.random.default_rng(5)
    n = 500
    v = [decimal.Decimal(int(x)) for x in rng.integers(-(10**9) + 1, 10**9, n)]
    t = pa.table(
        {
            "d32": pa.array([x / 100 for x in v], pa.decimal128(9, 2)),
            "d64": pa.array([x * 10**8 / 10**5 for x in v], pa.decimal128(18, 5)),
            "d128": pa.array([x * 10**25 / 10**3 for x in v], pa.decimal128(38, 3)),
            "d256": pa.array([-x * 10**60 / 10**7 for x in v], pa.decimal256(76, 7)),
            "dneg": pa.array([-abs(x) / 10 for x in v], pa.decimal128(12, 1)),
        }
    )
    for as_int in (True, False):
        path = _write(tmp_path / f"d{as_int}.parquet", t, store_decimal_as_integer=as_int)
        physical = {pq.ParquetFile(path).schema.column(i).physical_type for i in range(5)}
        assert physical == ({"INT32", "INT64", "FIXED_LEN_BYTE_ARRAY"} if as_int else {"FIXED_LEN_BYTE_ARRAY"})
        st = _check(path, _positions(rng, n, 0.3))
        assert not st.fallbacks


def test_nan_and_signed_zero(tmp_path):
    """Floats come back bit for bit (NaN payloads, -0.0), as pyarrow reads them."""
    n = 300
    f64 = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5] * 50)
    f64[::7] = np.frombuffer(np.uint64(0x7FF8_0000_DEAD_BEEF).tobytes() * 1, "<f8")[0]
    t = pa.table({"d": pa.array(f64), "f": pa.array(f64.astype(np.float32), mask=np.arange(n) % 5 == 0)})
    for dictionary in (True, False):
        path = _write(tmp_path / f"nan{dictionary}.parquet", t, use_dictionary=dictionary)
        pos = np.arange(0, n, 3)
        got, _, st = _read([(path, pos)])
        exp = _oracle(path, pos)
        assert not st.fallbacks and got.schema == exp.schema
        for name, bits in (("d", np.uint64), ("f", np.uint32)):
            a, b = got.column(name).combine_chunks(), exp.column(name).combine_chunks()
            assert a.is_null().equals(b.is_null())
            va = np.frombuffer(a.buffers()[1], bits)[a.offset : a.offset + len(a)]
            vb = np.frombuffer(b.buffers()[1], bits)[b.offset : b.offset + len(b)]
            ok = ~np.asarray(a.is_null())
            assert np.array_equal(va[ok], vb[ok])


def test_int96_timestamps(tmp_path):
    rng = np.random.default_rng(6)
    n = 700
    big = rng.integers(-(1 << 61), 1 << 61, n)
    t = pa.table(
        {
            "ns": pa.array(big, pa.timestamp("ns"), mask=rng.random(n) < 0.1),
            "us_tz": pa.array(big // 1000, pa.timestamp("us", "UTC")),
            "ms": pa.array(big // 10**6, pa.timestamp("ms"), mask=rng.random(n) < 0.5),
        }
    )
    for dictionary in (True, False):
        path = _write(tmp_path / f"i96{dictionary}.parquet", t, use_deprecated_int96_timestamps=True)
        assert pq.ParquetFile(path).schema.column(0).physical_type == "INT96"
        st = _check(path, _positions(rng, n, 0.3))
        assert not st.fallbacks
        _check(path, None)


def test_nulls_none_some_all(tmp_path):
    rng = np.random.default_rng(7)
    n = 900
    for frac in (0.0, 0.5, 0.97, 1.0):
        m = rng.random(n) < frac
        t = pa.table(
            {
                "i": pa.array(rng.integers(0, 5, n), pa.int64(), mask=m),
                "s": pa.array([f"s{x}" for x in rng.integers(0, 1000, n)], pa.string(), mask=m),
                "b": pa.array(rng.random(n) < 0.5, mask=m),
                "f": pa.array(rng.random(n), mask=m),
            }
        )
        for version in ("1.0", "2.0"):
            path = _write(tmp_path / f"n{frac}{version}.parquet", t, data_page_version=version, data_page_size=300)
            for pos in (_positions(rng, n, 0.1), None):
                st = _check(path, pos)
                assert not st.fallbacks


def test_dictionary_fallback_to_plain(tmp_path):
    """High-cardinality columns overflow a small dictionary page: the chunk has dictionary-encoded
    pages and then PLAIN ones."""
    rng = np.random.default_rng(8)
    n = 4000
    t = pa.table(
        {
            "s": pa.array([f"value-{x}" for x in rng.integers(0, 1 << 30, n)], pa.string(), mask=rng.random(n) < 0.1),
            "i": pa.array(rng.integers(0, 1 << 60, n)),
            "f": pa.array(rng.random(n).astype(np.float32)),
        }
    )
    for codec in ("SNAPPY", "NONE"):
        path = _write(
            tmp_path / f"fb{codec}.parquet",
            t,
            compression=codec,
            dictionary_pagesize_limit=2048,
            row_group_size=2500,
        )
        encodings = pq.ParquetFile(path).metadata.row_group(0).column(0).encodings
        assert "PLAIN" in encodings and ("RLE_DICTIONARY" in encodings or "PLAIN_DICTIONARY" in encodings)
        for pos in (_positions(rng, n, 0.05), None, [0, 1, n - 2, n - 1]):
            st = _check(path, pos)
            assert not st.fallbacks


def test_many_pages_page_index_and_row_groups(tmp_path):
    """Small pages: a few wanted rows read a few pages only, with the page index or by walking
    the page headers."""
    rng = np.random.default_rng(9)
    n = 6000
    t = pa.table(
        {
            "i": pa.array(np.arange(n), pa.int64()),
            "s": pa.array([f"r{x}" for x in range(n)], pa.string(), mask=rng.random(n) < 0.3),
            "req": pa.array(np.arange(n) * 3, pa.int32()),
        },
        schema=pa.schema([("i", pa.int64()), ("s", pa.string()), pa.field("req", pa.int32(), nullable=False)]),
    )
    for index in (True, False):
        path = _write(
            tmp_path / f"p{index}.parquet", t, data_page_size=256, write_page_index=index, row_group_size=2000
        )
        assert pq.ParquetFile(path).metadata.num_row_groups == 3
        pos = np.array([5, 6, 2100, 5999])
        st = _check(path, pos)
        assert st.pages_total > 40
        assert 3 * 2 <= st.pages_read <= 3 * 4 + 3, (st.pages_read, st.pages_total)
        st = _check(path, None)
        assert st.pages_read == st.pages_total


# ---------------------------------------------------------------- types pyarrow reads
def _nested_table(n: int) -> pa.Table:
    return pa.table(
        {
            "i": pa.array(np.arange(n), pa.int64()),
            "lst": pa.array([[x, x + 1] if x % 3 else None for x in range(n)], pa.list_(pa.int32())),
            "st": pa.array([{"a": x, "b": f"b{x}"} for x in range(n)]),
            "mp": pa.array([[(f"k{x}", x)] for x in range(n)], pa.map_(pa.string(), pa.int64())),
            "s": pa.array([f"s{x}" for x in range(n)]),
        }
    )


@pytest.mark.parametrize("column", ["lst", "st", "mp"])
def test_nested_columns_read_by_pyarrow(tmp_path, column):
    n = 500
    path = _write(tmp_path / "nested.parquet", _nested_table(n), data_page_size=512)
    for pos in ([0, 7, 250, 499], None):
        st = _check(path, pos, ["i", column, "s"])
        assert sum(st.fallbacks.values()) == 1, st.fallbacks
        assert st.columns_whole == 1
        assert any("nested" in why or column in why for why in st.fallbacks), st.fallbacks


def test_dictionary_typed_column_read_by_pyarrow(tmp_path):
    """A column pyarrow reads as dictionary<...> (its stored Arrow schema says so).  Run in a
    child process: a wrong Array.from_buffers aborts the process."""
    n = 400
    t = pa.table(
        {
            "d": pa.array([f"x{x % 7}" for x in range(n)]).dictionary_encode(),
            "i": pa.array(np.arange(n), pa.int32()),
        }
    )
    path = _write(tmp_path / "dict.parquet", t)
    code = f"""
        import pyarrow as pa, pyarrow.parquet as pq
        from paimon_fast.io.parquet import native
        from paimon_fast.io.parquet.rows import PageReadStats
        for pos in ([1, 2, 399], None):
            st = PageReadStats()
            got, _ = native.read_files([({path!r}, pos)], stats=st)
            exp = pq.read_table({path!r})
            exp = exp if pos is None else exp.take(pos)
            assert got.schema == exp.schema, (got.schema, exp.schema)
            assert got.equals(exp)
            assert sum(st.fallbacks.values()) == 1 and any("dictionary" in k for k in st.fallbacks), st.fallbacks
    """
    _run_child(code)


def test_encodings_read_by_pyarrow(tmp_path):
    """DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT chunks: pyarrow reads them, the other columns (a
    DELTA_BINARY_PACKED one too) natively."""
    rng = np.random.default_rng(10)
    n = 700
    t = pa.table(
        {
            "delta": pa.array(rng.integers(0, 1 << 40, n)),
            "bss": pa.array(rng.random(n)),
            "dstr": pa.array([f"d{x}" for x in rng.integers(0, 1 << 30, n)], pa.string(), mask=rng.random(n) < 0.2),
            "plain": pa.array(rng.integers(0, 100, n), pa.int32()),
        }
    )
    path = _write(
        tmp_path / "enc.parquet",
        t,
        use_dictionary=False,
        column_encoding={"delta": "DELTA_BINARY_PACKED", "bss": "BYTE_STREAM_SPLIT", "dstr": "DELTA_BYTE_ARRAY"},
    )
    st = _check(path, _positions(rng, n, 0.3))
    assert sum(st.fallbacks.values()) == 2, st.fallbacks
    assert all("encoding" in k for k in st.fallbacks), st.fallbacks


def test_validity_of_every_slot_written_over_dirty_memory(tmp_path):
    """Validity buffers are not cleared before a read: every slot of a chunk the reader decodes
    gets its byte, and the slots of chunks pyarrow reads (an encoding found in the pages, known
    only once they are read) are replaced.  The pool memory under the read is dirtied with zeros
    (all null) and with 0xFF first, so a slot left unwritten would show."""
    rng = np.random.default_rng(23)
    n = 1500
    mask = rng.random(n) < 0.25
    t = pa.table(
        {
            "i": pa.array(rng.integers(0, 1 << 40, n), mask=mask),
            "s": pa.array([f"v{x}" for x in rng.integers(0, 1 << 20, n)], pa.string(), mask=~mask),
            "full": pa.array(rng.integers(0, 100, n), pa.int32()),  # optional, no null
        }
    )
    a = _write(tmp_path / "a.parquet", t)
    b = _write(tmp_path / "b.parquet", t, use_dictionary=False, column_encoding={"s": "DELTA_BYTE_ARRAY"})
    c = _write(tmp_path / "c.parquet", t.slice(0, 0))
    pos = _positions(rng, n, 0.4)
    items = [(a, pos), (b, None), (c, None), (a, None), (b, pos)]
    exp = pa.concat_tables([_oracle(a, pos), _oracle(b, None), _oracle(a, None), _oracle(b, pos)])
    for dirt in (0x00, 0xFF):
        for _ in range(4):  # freed pool memory of about the validity buffers' size, dirtied
            junk = np.frombuffer(pa.allocate_buffer(exp.num_rows), dtype=np.uint8)
            junk.fill(dirt)
            del junk
        got, _, st = _read(items, threads=2)
        _assert_same(got, exp)
        assert any("encoding" in k for k in st.fallbacks), st.fallbacks  # the DELTA_BYTE_ARRAY chunks: pyarrow


@pytest.mark.parametrize("large", [False, True])
def test_strings_after_a_file_pyarrow_reads(tmp_path, large):
    """A file whose string chunk pyarrow reads (DELTA_BYTE_ARRAY, known from the footer before the
    read) between files read natively: the strings after it start where they should.  Before the
    fix, the first string after such a file began at the start of the column's bytes."""
    rng = np.random.default_rng(24)
    n = 600
    t = pa.table(
        {
            "s": pa.array([f"v{x}" for x in rng.integers(0, 1 << 20, n)], mask=rng.random(n) < 0.1),
            "i": pa.array(rng.integers(0, 100, n)),
        }
    )
    a = _write(tmp_path / "a.parquet", t)
    b = _write(tmp_path / "b.parquet", t, use_dictionary=False, column_encoding={"s": "DELTA_BYTE_ARRAY"})
    pos = _positions(rng, n, 0.3)
    items = [(a, None), (b, None), (a, pos), (b, pos), (b, None), (a, None)]
    exp = pa.concat_tables([_oracle(p, q) for p, q in items])
    schema = None
    if large:
        schema = pa.schema([pa.field("s", pa.large_string()), pa.field("i", pa.int64())])
        exp = exp.cast(schema)
    got, _, st = _read(items, schema=schema)
    _assert_same(got, exp)
    assert st.fallbacks == {"encoding not decoded natively": 3}, st.fallbacks


@pytest.mark.parametrize("twin", [False, True])
@pytest.mark.parametrize("large", [False, True])
def test_offsets_of_every_slot_written_over_dirty_memory(tmp_path, monkeypatch, twin, large):
    """String offsets are not cleared before a read either: the reader writes a length into every
    slot of its chunks (nulls, a column a file lacks: 0), the caller sets the first offset and the
    slots pyarrow reads.  Every output buffer is handed over full of junk, so a slot left unwritten
    would show in the strings."""
    real = native._buffer

    def dirty(n, dtype=np.uint8, fill=None):
        arr = real(n, dtype, fill)
        if fill is None:
            arr.view(np.uint8).fill(0x5A)
        return arr

    monkeypatch.setattr(native, "_buffer", dirty)
    rng = np.random.default_rng(25)
    n = 900
    mask = rng.random(n) < 0.2
    t = pa.table(
        {"s": pa.array([f"v{x}" for x in rng.integers(0, 1 << 20, n)], mask=mask), "i": pa.array(rng.integers(0, 9, n))}
    )
    a = _write(tmp_path / "a.parquet", t)
    b = _write(tmp_path / "b.parquet", t, use_dictionary=False, column_encoding={"s": "DELTA_BYTE_ARRAY"})  # pyarrow's
    c = _write(tmp_path / "c.parquet", t.select(["i"]))  # no "s": nulls
    pos = _positions(rng, n, 0.3)
    stype = pa.large_string() if large else pa.string()
    schema = pa.schema([pa.field("s", stype), pa.field("i", pa.int64())])
    items = [(a, pos), (c, None), (b, pos), (a, None), (c, pos), (b, None)]
    parts = []
    for path, q in items:
        o = _oracle(path, q)
        if "s" not in o.column_names:
            o = o.add_column(0, "s", pa.nulls(o.num_rows, stype))
        parts.append(o.select(["s", "i"]).cast(schema))
    exp = pa.concat_tables(parts)
    got, _, st = _read(items, schema=schema, twin=twin)
    _assert_same(got, exp)
    assert st.fallbacks == {"encoding not decoded natively": 2}, st.fallbacks


_MIX_WRITES = [
    {},
    {"use_dictionary": False},
    {"use_dictionary": False, "column_encoding": {"s": "DELTA_BYTE_ARRAY"}},
    {"use_dictionary": False, "column_encoding": {"i": "DELTA_BINARY_PACKED", "bin": "DELTA_LENGTH_BYTE_ARRAY"}},
    {"use_dictionary": False, "column_encoding": {"f": "BYTE_STREAM_SPLIT"}},
    {"compression": "zstd", "data_page_version": "2.0"},
    {"compression": "lz4", "write_page_index": False},
]


@pytest.mark.parametrize("seed", range(3))
def test_mixed_files_as_pyarrow_reads_them(tmp_path, seed):
    """Seeded reads of 1-5 files at once, each written its own way (chunks read natively or by
    pyarrow, with or without a page index, empty files), with every row, positions or a range of
    each, some columns or all, on one thread and two: the table is pyarrow's reads of the same
    rows, concatenated.  Slots of one file sit next to another's, so what one file's read leaves
    in the output shows in the next's."""
    rng = np.random.default_rng(100 + seed)

    def table(n):
        return pa.table(
            {
                "s": pa.array(
                    [f"v{x}" * int(x % 3) for x in rng.integers(0, 1 << 20, n)],
                    pa.string(),
                    mask=rng.random(n) < rng.choice([0, 0.1, 0.5, 1.0]),
                ),
                "i": pa.array(rng.integers(-50, 100, n), pa.int64(), mask=rng.random(n) < 0.2),
                "f": pa.array(rng.random(n), pa.float64()),
                "b": pa.array(rng.random(n) < 0.5, pa.bool_(), mask=rng.random(n) < 0.1),
                "bin": pa.array([bytes([x % 256]) * int(x % 5) for x in rng.integers(0, 1000, n)], pa.binary()),
            }
        )

    for trial in range(20):
        files = []
        for k in range(int(rng.integers(1, 6))):
            n = int(rng.integers(0, 700))
            t = table(n)
            opts = {
                "row_group_size": int(rng.integers(50, 400)),
                "data_page_size": int(rng.choice([256, 1024, 1 << 20])),
            }
            opts.update(_MIX_WRITES[int(rng.integers(0, len(_MIX_WRITES)))])
            path = _write(tmp_path / f"m{trial}_{k}.parquet", t, **opts)
            mode = int(rng.integers(0, 3))
            if mode == 0 or n == 0:
                pos = None
            elif mode == 1:
                pos = np.sort(rng.choice(n, int(rng.integers(0, n + 1)), replace=False))
            else:  # a range: from and to anywhere (inside pages, row groups, or their ends)
                lo = int(rng.integers(0, n))
                pos = range(lo, int(rng.integers(lo, n + 1)) if rng.random() < 0.7 else n)
            files.append((path, pos, t))
        cols = (
            None
            if rng.random() < 0.5
            else [str(c) for c in rng.permutation(["s", "i", "f", "b", "bin"])[: int(rng.integers(1, 5))]]
        )
        parts = []
        for _, pos, t in files:
            t = t if cols is None else t.select(cols)
            if isinstance(pos, range):
                t = t.slice(pos.start, len(pos))
            elif pos is not None:
                t = t.take(pa.array(pos))
            parts.append(t)
        exp = pa.concat_tables(parts)
        for threads in (1, 2):
            got, counts, _ = _read([(p, q) for p, q, _ in files], cols, threads=threads)
            _assert_same(got, exp)
            assert list(counts) == [len(t) for t in parts]


def _run_child(code: str, timeout: float = 120):
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"child exited with {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


# ---------------------------------------------------------------- positions
@pytest.fixture(scope="module")
def positions_file(tmp_path_factory):
    rng = np.random.default_rng(11)
    n = 3000
    t = _wide(rng, n)
    path = _write(tmp_path_factory.mktemp("pos") / "pos.parquet", t, row_group_size=1100, data_page_size=512)
    return path, n


@pytest.mark.parametrize(
    "case", ["random", "empty", "every", "first", "last", "first_last", "none", "one_page", "repeated"]
)
def test_positions(positions_file, case):
    path, n = positions_file
    rng = np.random.default_rng(12)
    pos = {
        "random": _positions(rng, n, 0.05),
        "empty": np.zeros(0, dtype=np.int64),
        "every": np.arange(n),
        "first": [0],
        "last": [n - 1],
        "first_last": [0, n - 1],
        "none": None,
        "one_page": np.arange(1100, 1110),
        # every row of some pages twice, others once or three times
        "repeated": np.sort(np.concatenate([np.arange(n), np.arange(0, n, 2), np.arange(100, 200), [n - 1] * 5])),
    }[case]
    st = _check(path, pos)
    assert not st.fallbacks
    if case == "empty":
        assert st.pages_read == 0


@pytest.mark.parametrize("kind", ["uint32", "int32", "uint64", "list", "bitmap"])
def test_positions_of_every_integer_kind(positions_file, kind):
    """Positions as a bitmap gives them (a uint32 view, widened by the read), other integer
    arrays, strided views and a list read the same rows; with ``sorted_positions`` the order is
    not checked again, and a negative int32 position is refused either way."""
    from pyroaring import BitMap

    path, n = positions_file
    pos = _positions(np.random.default_rng(13), n, 0.1)
    given = {
        "uint32": pos.astype(np.uint32),
        "int32": pos.astype(np.int32),
        "uint64": pos.astype(np.uint64),
        "list": pos.tolist(),
        "bitmap": np.asarray(BitMap(pos.tolist()).to_array()),
    }[kind]
    strided = np.repeat(given, 2)[::2] if isinstance(given, np.ndarray) else given  # (not contiguous)
    for vouched in (False, True):
        got, _, _ = _read([(path, given), (path, strided)], sorted_positions=vouched)
        _assert_same(got, pa.concat_tables([_oracle(path, pos)] * 2))
    with pytest.raises(InvalidArgumentError):
        native.read_files([(path, np.array([-1, 3], dtype=np.int32))], sorted_positions=True)


def test_repeated_positions_as_many_as_page_rows(tmp_path):
    sch = pa.schema([pa.field("a", pa.int64(), nullable=False), pa.field("s", pa.string(), nullable=False)])
    t = pa.table({"a": np.arange(10), "s": [f"v{i}" for i in range(10)]}, schema=sch)
    for dictionary in (True, False):
        path = _write(tmp_path / f"r{dictionary}.parquet", t, use_dictionary=dictionary)
        _check(path, [0] * 10)
        _check(path, [0, 0, 1, 2, 3, 4, 5, 6, 7, 9])


# ---------------------------------------------------------------- many files, one schema
def test_files_under_a_schema(tmp_path):
    rng = np.random.default_rng(13)
    n1, n2, n3 = 800, 500, 650

    def f1(n):
        return pa.table(
            {
                "a": pa.array(rng.integers(-1000, 1000, n), pa.int32(), mask=rng.random(n) < 0.1),
                "b": pa.array(rng.random(n).astype(np.float32)),
                "s": pa.array([f"s{x}" for x in rng.integers(0, 50, n)], pa.string(), mask=rng.random(n) < 0.2),
                "x": pa.array(rng.integers(-(1 << 40), 1 << 40, n)),
                "u": pa.array(rng.integers(0, 1 << 32, n, dtype=np.uint64), pa.uint32()),
                "ts": pa.array(rng.integers(0, 1 << 50, n), pa.timestamp("us")),
            }
        )

    t1 = f1(n1)
    t2 = f1(n2).drop_columns(["b"])  # a file without b: nulls
    t3 = f1(n3)
    t3 = t3.set_column(0, "a", t3.column("a").cast(pa.int64()))  # already the schema's type
    t4 = f1(0)  # a file of no rows
    paths = [_write(tmp_path / f"f{i}.parquet", t) for i, t in enumerate((t1, t2, t3, t4))]
    schema = pa.schema(
        [
            ("a", pa.int64()),  # int32 -> int64
            ("b", pa.float64()),  # float -> double
            ("s", pa.large_string()),  # string -> large_string
            ("x", pa.float64()),  # int64 -> double: pyarrow's cast
            ("u", pa.int64()),  # uint32 -> int64
            ("ts", pa.timestamp("us", "UTC")),  # the zone is the schema's
            ("missing", pa.string()),  # no file has it
            ("missing_list", pa.list_(pa.int32())),
        ]
    )
    pos = [_positions(rng, n1, 0.2), None, np.array([0, 1, n3 - 1]), None]
    items = list(zip(paths, pos))

    def oracle():
        parts = []
        for path, p in items:
            t = _oracle(path, p)
            cols = []
            for f in schema:
                if f.name in t.column_names:
                    cols.append(t.column(f.name).cast(f.type))
                else:
                    cols.append(pa.nulls(t.num_rows, f.type))
            parts.append(pa.Table.from_arrays(cols, schema=schema))
        return pa.concat_tables(parts)

    exp = oracle()
    for threads in (1, 3):
        got, counts, st = _read(items, schema=schema, threads=threads)
        assert list(counts) == [len(pos[0]), n2, 3, 0]
        assert got.schema == schema
        _assert_same(got.replace_schema_metadata(None), exp)
        # x (int64 -> double) is pyarrow's cast, file by file; missing_list pyarrow's nulls; the rest native
        assert sum(st.fallbacks.values()) == 6, st.fallbacks
    got, _, _ = _read(items, ["s", "a"], schema=schema)
    _assert_same(got.replace_schema_metadata(None), exp.select(["s", "a"]))


def test_files_without_a_schema(tmp_path):
    rng = np.random.default_rng(14)
    t = _wide(rng, 900)
    paths = [_write(tmp_path / f"w{i}.parquet", t.slice(i * 100, 300), compression=c) for i, c in enumerate(CODECS)]
    items = [(p, _positions(rng, 300, 0.3) if i % 2 else None) for i, p in enumerate(paths)]
    got, counts, st = _read(items)
    exp = pa.concat_tables([_oracle(p, pos) for p, pos in items])
    _assert_same(got, exp)
    assert list(counts) == [300 if pos is None else len(pos) for _, pos in items]
    assert not st.fallbacks


def test_sources_in_memory_and_file_objects(tmp_path):
    """Bytes (the reader reads them in place) and file objects (the chunks' byte ranges read
    first): the same rows as a path."""
    rng = np.random.default_rng(15)
    t = _wide(rng, 600)
    path = _write(tmp_path / "m.parquet", t, compression="SNAPPY")
    data = open(path, "rb").read()
    pos = _positions(rng, 600, 0.2)
    exp = _oracle(path, pos)
    for src in (data, memoryview(data), io.BytesIO(data), pa.BufferReader(data)):
        got, _, st = _read([(src, pos)])
        _assert_same(got, exp)
        assert not st.fallbacks


# ---------------------------------------------------------------- threads
@pytest.fixture(params=["small phases on one thread", "every phase on the threads"])
def parallel_min(request):
    """The reader's default (a phase with little work runs on the calling thread), or 0 (every
    phase of two items or more spreads over the threads asked for, as large reads do)."""
    from paimon_fast._kernels import load

    k = load("pqread")
    old = k._set_parallel_min(0) if request.param.startswith("every") else None
    yield request.param
    if old is not None:
        k._set_parallel_min(old)


def test_threads_give_identical_tables(tmp_path, parallel_min):
    rng = np.random.default_rng(16)
    paths = []
    for i, codec in enumerate(("SNAPPY", "ZSTD", "LZ4")):
        t = _wide(rng, 2500)
        paths.append(_write(tmp_path / f"t{i}.parquet", t, compression=codec, row_group_size=600))
    items = [(p, _positions(rng, 2500, 0.3)) for p in paths]
    one, _, st1 = _read(items, threads=1)
    four, _, st4 = _read(items, threads=4)
    assert one.equals(four)
    assert st1.as_dict() == st4.as_dict()
    _assert_same(one, pa.concat_tables([_oracle(p, pos) for p, pos in items]))


@pytest.fixture
def every_phase_parallel():
    """Every phase of two items or more spread over the threads asked for (as in a large read)."""
    from paimon_fast._kernels import load

    k = load("pqread")
    old = k._set_parallel_min(0)
    yield k
    k._set_parallel_min(old)


def _pool_files(tmp_path, rng, count=3, rows=2500):
    paths = []
    for i in range(count):
        t = _wide(rng, rows)
        codec = ("SNAPPY", "ZSTD", "LZ4")[i % 3]
        paths.append(_write(tmp_path / f"p{i}.parquet", t, compression=codec, row_group_size=600))
    return paths


def test_kept_threads_give_the_tables_of_threads_started_per_phase(tmp_path, every_phase_parallel):
    """A read's phases run on the reader's kept threads (the pool), which grows when a read asks
    for more threads and leaves its extra threads out of a read that asks for fewer: the tables
    are those of threads started for each phase, and pyarrow's."""
    k = every_phase_parallel
    rng = np.random.default_rng(31)
    paths = _pool_files(tmp_path, rng)
    items = [(p, _positions(rng, 2500, 0.3)) for p in paths]
    exp = pa.concat_tables([_oracle(p, pos) for p, pos in items])
    old = k._set_pool(False)
    try:
        started = {n: _read(items, threads=n)[0] for n in (2, 3)}
        k._set_pool(True)
        faulthandler.dump_traceback_later(120, exit=True, file=sys.__stderr__)  # a hang fails the run
        try:
            for n in (2, 5, 3, 2, 5, 1, 3):
                got, _, _ = _read(items, threads=n)
                _assert_same(got, exp)
                if n in started:
                    assert got.equals(started[n])
        finally:
            faulthandler.cancel_dump_traceback_later()
    finally:
        k._set_pool(*old)


@pytest.mark.parametrize("spin_ns", [0, 200_000])
def test_reads_of_several_python_threads_at_once(tmp_path, every_phase_parallel, spin_ns):
    """Reads from several Python threads at once: one has the pool, the others start threads of
    their own; every read gives pyarrow's table (kept threads that sleep at once, spin_ns 0, and
    that spin first)."""
    import threading

    k = every_phase_parallel
    rng = np.random.default_rng(32)
    paths = _pool_files(tmp_path, rng, count=4, rows=1800)
    cases = [[(p, _positions(rng, 1800, 0.25))] for p in paths]
    want = [_oracle(c[0][0], c[0][1]) for c in cases]
    old = k._set_pool(True, spin_ns)
    errors = []

    def work(i):
        try:
            for r in range(12):
                got, _, _ = _read(cases[i], threads=2 + (r + i) % 3)
                _assert_same(got, want[i])
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            errors.append((i, repr(e)))

    faulthandler.dump_traceback_later(120, exit=True, file=sys.__stderr__)
    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(cases))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        faulthandler.cancel_dump_traceback_later()
        k._set_pool(*old)
    assert not errors, errors


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_reads_without_the_parents_kept_threads(tmp_path):
    """A child forked after reads that started the pool has none of its threads: its reads start
    their own pool and finish (a child that waited for its parent's threads would hang)."""
    rng = np.random.default_rng(33)
    path = _pool_files(tmp_path, rng, count=1)[0]
    out = _run_child(
        f"""
        import os, signal, sys
        import numpy as np, pyarrow.parquet as pq
        from paimon_fast._kernels import load
        from paimon_fast.io.parquet import native
        k = load("pqread")
        k._set_parallel_min(0)
        pos = np.arange(0, 2500, 3, dtype=np.int64)
        exp = pq.read_table({path!r}).take(pos)
        for _ in range(3):
            assert native.read_files([({path!r}, pos)], threads=2)[0].equals(exp)
        pid = os.fork()
        if pid == 0:
            signal.alarm(60)  # a child that hangs is killed: the parent sees it
            ok = all(native.read_files([({path!r}, pos)], threads=t)[0].equals(exp) for t in (2, 3, 2))
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status))
        """
    )
    assert "child 0" in out, out


def _delta_encodings(schema: pa.Schema) -> dict:
    """pyarrow's ``column_encoding`` giving each column of ``schema`` a DELTA encoding it can take:
    DELTA_BINARY_PACKED for INT32 / INT64 columns, DELTA_LENGTH_BYTE_ARRAY for byte arrays."""
    out = {}
    for f in schema:
        t = f.type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
            out[f.name] = "DELTA_LENGTH_BYTE_ARRAY"
        elif pa.types.is_integer(t) or pa.types.is_date32(t) or pa.types.is_time(t) or pa.types.is_timestamp(t):
            out[f.name] = "DELTA_BINARY_PACKED"
    return out


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("codec", ["SNAPPY", "NONE", "ZSTD"])
def test_delta_encodings_read_natively(tmp_path, codec, version, copy_once):
    """DELTA_BINARY_PACKED (every integer width and conversion, extreme values, nulls) and
    DELTA_LENGTH_BYTE_ARRAY (strings, binaries, large ones, empty values, nulls) pages, V1 and
    V2, whole and in part: the kernel's and the twin's tables are pyarrow's, with no fallback, and
    with bodies kept until phase C or copied in B."""
    rng = np.random.default_rng(40)
    n = 2000
    t = _wide(rng, n)
    edge = np.array([-(1 << 63), (1 << 63) - 1, 0, -1, 1] * (n // 5), dtype=np.int64)
    t = t.append_column("extreme", pa.array(edge, mask=rng.random(n) < 0.1))
    t = t.append_column("extreme32", pa.array(edge.astype(np.int32)))  # (wraps: 0, -1, 0, -1, 1)
    t = t.append_column("long_str", pa.array(["x" * int(k) for k in rng.integers(0, 300, n)]))
    path = _write(
        tmp_path / "delta.parquet",
        t,
        compression=codec,
        data_page_version=version,
        use_dictionary=False,
        column_encoding=_delta_encodings(t.schema),
    )
    rg = pq.ParquetFile(path).metadata.row_group(0)
    encs = {rg.column(i).path_in_schema: rg.column(i).encodings for i in range(rg.num_columns)}
    assert "DELTA_BINARY_PACKED" in encs["i64"] and "DELTA_LENGTH_BYTE_ARRAY" in encs["str"]
    for positions in (None, _positions(rng, n, 0.2), np.arange(130, 1900), [0, 0, 5, 5, n - 1, n - 1]):
        for twin in (False, True):
            got, _, st = _read([(path, positions)], twin=twin)
            _assert_same(got, _oracle(path, positions))
            assert not st.fallbacks, st.fallbacks


def _delta_packed(values, w32=False, block=128, miniblocks=4, widths=None) -> bytes:
    """DELTA_BINARY_PACKED bytes of ``values`` (``widths``: a bit width for each miniblock in turn
    instead of the least that holds it, to craft pages)."""

    def zz(v):
        return _uvarint((v << 1) ^ (v >> 63) if v < 0 else v << 1)

    bits = 32 if w32 else 64
    out = bytearray(_uvarint(block) + _uvarint(miniblocks) + _uvarint(len(values)))
    out += zz(values[0] if values else 0)
    per = block // miniblocks
    deltas = [((b - a) + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1)) for a, b in zip(values, values[1:])]
    forced = iter(widths or ())
    for at in range(0, len(deltas), block):
        d = deltas[at : at + block]
        least = min(d)
        out += zz(least)
        need = (len(d) + per - 1) // per
        chunks = [d[k * per : (k + 1) * per] for k in range(miniblocks)]
        bws = [max((x - least).bit_length() for x in c) if c else 0 for c in chunks]
        bws = [next(forced, w) for w in bws]
        out += bytes(bws)
        for k in range(need):
            c = chunks[k] + [least] * (per - len(chunks[k]))
            packed = 0
            for j, x in enumerate(c):
                packed |= ((x - least) & ((1 << bws[k]) - 1)) << (j * bws[k])
            out += packed.to_bytes(per * bws[k] // 8, "little")
    return bytes(out)


def _delta_lengths(strs) -> bytes:
    return _delta_packed([len(x) for x in strs], w32=True) + b"".join(strs)


@pytest.mark.parametrize(
    "case",
    [
        "ints",
        "ints_two_blocks",
        "strings",
        "strings_empty",
        "block_not_of_128",
        "miniblocks_not_of_32",
        "bit_width_over_32",
        "miniblock_cut_short",
        "fewer_values_than_rows",
        "varint_too_long",
        "negative_length",
        "lengths_past_the_page",
    ],
)
def test_crafted_delta_pages(case):
    """Hand-made DELTA pages of a chunk of four or 200 rows: what the reader makes of them (the
    kernel and the twin alike, _job): the values, or the chunk marked corrupt."""
    levels = _levels_v1(_rle(4, 1))
    if case in ("ints", "ints_two_blocks", "fewer_values_than_rows", "bit_width_over_32", "miniblock_cut_short"):
        vals = [7, -3, 1 << 30, -(1 << 31)]
        if case == "ints_two_blocks":
            vals = [(i * 7919) % 1000 - 500 for i in range(200)]
        rows = len(vals)
        levels = _levels_v1(_rle(rows, 1))
        body = _delta_packed(vals, w32=True)
        if case == "fewer_values_than_rows":
            body = _delta_packed(vals[:3], w32=True)
        elif case == "bit_width_over_32":
            body = _delta_packed(vals, w32=True, widths=[33])
        elif case == "miniblock_cut_short":
            body = body[:-3]
        pages = _page(0, levels + body, nvalues=rows, encoding=5)
        res, col = _job(pages, rows)
        if case in ("ints", "ints_two_blocks"):
            assert _status(res)[0] == KERNEL.OK, _status(res)
            assert np.frombuffer(col[3].tobytes(), dtype="<i4").tolist() == vals
            return
        assert _status(res) == (KERNEL.CORRUPT, "data page not decodable"), _status(res)
        return
    if case in ("strings", "strings_empty", "negative_length", "lengths_past_the_page"):
        strs = [b"ab", b"", b"cde" * 9, b"f"] if case != "strings_empty" else [b""] * 4
        body = _delta_lengths(strs)
        if case == "negative_length":
            body = _delta_packed([2, -1, 3, 1], w32=True) + b"ab" + b"cde" + b"f"
        elif case == "lengths_past_the_page":
            body = _delta_packed([2, 0, 27, 9], w32=True) + b"".join(strs)
        pages = _page(0, levels + body, nvalues=4, encoding=6)
        res, col = _job(pages, 4, physical=6, kind=2)
        if case in ("strings", "strings_empty"):
            assert _status(res)[0] == KERNEL.OK, _status(res)
            data = res[4][0]
            got = bytes(data) if data is not None else b""
            offs = col[5]
            assert [got[offs[i] : offs[i + 1]] for i in range(4)] == strs
            return
        assert _status(res) == (KERNEL.CORRUPT, "data page not decodable"), _status(res)
        return
    if case == "block_not_of_128":
        body = _uvarint(100) + _uvarint(4) + _uvarint(4) + _uvarint(0) + bytes(8)
    elif case == "miniblocks_not_of_32":
        body = _uvarint(128) + _uvarint(8) + _uvarint(4) + _uvarint(0) + bytes(16)  # 16 values a miniblock
    elif case == "varint_too_long":
        body = _uvarint(128) + _uvarint(4) + _uvarint(4) + b"\xff" * 11
    else:
        raise AssertionError(case)
    res, _ = _job(_page(0, levels + body, nvalues=4, encoding=5), 4)
    assert _status(res) == (KERNEL.CORRUPT, "data page not decodable"), _status(res)


def _strings_table(rng, n: int) -> pa.Table:
    """Byte arrays of every length class phase C copies differently: empty, up to 16 bytes (one
    16-byte move) and longer; dictionary-encoded and PLAIN; with nulls and without; 32-bit and
    64-bit offsets."""
    lengths = rng.choice([0, 1, 7, 15, 16, 17, 31, 90], n)
    vals = [("abcdefghij" * 9)[: int(k)] + ("" if k < 2 else chr(65 + i % 26)) for i, k in enumerate(lengths)]
    few = [vals[int(i)] for i in rng.integers(0, 40, n)]
    return pa.table(
        {
            "plain": pa.array(vals, pa.string()),
            "plain_nulls": pa.array(vals, pa.string(), mask=rng.random(n) < 0.2),
            "dict": pa.array(few, pa.string()),
            "dict_nulls": pa.array(few, pa.string(), mask=rng.random(n) < 0.2),
            "large": pa.array(few, pa.large_binary()),
            "plain_large": pa.array(vals, pa.large_binary()),
        }
    )


@pytest.fixture(params=["bodies and dictionaries kept", "nothing kept"])
def copy_once(request):
    """The reader's default (a page read whole keeps its body, and a chunk its dictionary of byte
    arrays, until their bytes are copied out), or nothing kept (each page copies its values into a
    buffer of its own first)."""
    from paimon_fast._kernels import load

    k = load("pqread")
    if request.param == "nothing kept":
        old = (k._set_keep_dict_max(-1), k._set_keep_bodies(False))
        yield request.param
        k._set_keep_dict_max(old[0])
        k._set_keep_bodies(old[1])
    else:
        yield request.param


@pytest.mark.parametrize("codec", ["SNAPPY", "NONE"])
def test_byte_arrays_from_bodies_and_dictionaries(tmp_path, codec, parallel_min, copy_once):
    """Byte arrays whose pages are read whole (bytes copied from the kept page body, or from the
    kept dictionary) and in part, from a file and from memory, on one thread and four: pyarrow's
    table, with and without kept bodies and dictionaries."""
    rng = np.random.default_rng(30)
    n = 3000
    t = _strings_table(rng, n)
    plain = _write(tmp_path / "p.parquet", t, compression=codec, use_dictionary=["dict", "dict_nulls", "large"])
    data = open(plain, "rb").read()
    dense = np.arange(700, 2100)  # whole pages and a row group's end
    for positions in (None, dense, _positions(rng, n, 0.3)):
        for src in (plain, data):
            for threads in (1, 4):
                got, _, st = _read([(src, positions)], threads=threads)
                _assert_same(got, _oracle(plain, positions))
                assert not st.fallbacks, st.fallbacks


def test_zstd_dictionary_after_levels_of_a_large_page(tmp_path):
    """A V1 page's ZSTD stream is left open after its levels while the dictionary page is
    decompressed (a ZSTD context of its own: one shared context failed the page as corrupt)."""
    rng = np.random.default_rng(17)
    n = 200000
    v = rng.integers(0, 5000, n)
    t = pa.table({"s": pa.array([f"value-{x}" for x in v], pa.string(), mask=rng.random(n) < 0.1)})
    path = _write(tmp_path / "z.parquet", t, compression="ZSTD", data_page_size=1 << 20, row_group_size=n)
    st = _check(path, np.arange(0, n, 97))
    assert not st.fallbacks, st.fallbacks


# ---------------------------------------------------------------- the twin
class _Both:
    """The kernel module, but ``read`` runs the job on the kernel and on the twin (copies of the
    same output buffers) and asserts the same statuses, errors, stats and buffers."""

    def __init__(self):
        self.jobs = 0

    def __getattr__(self, name):
        return getattr(KERNEL, name)

    def read(self, files, chunks, rows, cols, threads):
        def copy(cols):
            return [
                (
                    k,
                    w,
                    n,
                    None if v is None else v.copy(),
                    None if m is None else m.copy(),
                    None if o is None else o.copy(),
                )
                for k, w, n, v, m, o in cols
            ]

        twin_cols = copy(cols)
        got = KERNEL.read(files, chunks, rows, cols, 1)
        exp = TWIN.read(files, chunks, rows, twin_cols, 1)
        _assert_same_job(got, exp, cols, twin_cols)
        self.jobs += 1
        return got


def _assert_same_job(got, exp, cols, twin_cols):
    status, err_at, errors, stats, data, overflow, summary = got
    assert status.tolist() == exp[0].tolist(), (status.tolist(), exp[0].tolist(), errors, exp[2])
    assert summary == exp[6]
    # the summary is the per-chunk figures summed (the chunks of a column of nulls read no bytes)
    n = len(stats)
    pages_total, pages_read, bytes_read, bytes_total, columns_ok, nulls, bad = summary
    assert [pages_total, pages_read, bytes_read] == (stats[:, :3].sum(axis=0).tolist() if n else [0, 0, 0])
    assert sum(nulls) == int(stats[:, 3].sum()) and len(nulls) == len(cols)
    assert bad == np.flatnonzero(status != 0).tolist()
    assert columns_ok <= n - len(bad) and bytes_total >= 0
    assert err_at.tolist() == exp[1].tolist()
    assert errors == exp[2]
    assert stats.tolist() == exp[3].tolist()
    assert [None if d is None else bytes(d) for d in data] == [None if d is None else bytes(d) for d in exp[4]]
    assert overflow == exp[5]
    for i, (a, b) in enumerate(zip(cols, twin_cols)):
        for k in (3, 4, 5):
            if a[k] is not None:
                assert np.array_equal(a[k], b[k]), f"output column {i}, buffer {k}"


@pytest.fixture
def both(monkeypatch):
    b = _Both()
    monkeypatch.setattr(native, "kernels", lambda twin=False: b)
    return b


@pytest.mark.parametrize(
    "codec,version,dictionary,index",
    [
        ("SNAPPY", "1.0", True, True),
        ("NONE", "2.0", False, False),
        ("LZ4", "1.0", False, True),
        ("GZIP", "2.0", True, False),
    ],
)
def test_twin_reads_like_the_kernel(tmp_path, codec, version, dictionary, index):
    rng = np.random.default_rng(18)
    n = 500
    t = _wide(rng, n)
    path = _write(
        tmp_path / "tw.parquet",
        t,
        compression=codec,
        data_page_version=version,
        use_dictionary=dictionary,
        write_page_index=index,
        row_group_size=300,
        data_page_size=700,
    )
    pos = _positions(rng, n, 0.15)
    kernel, _, st_k = _read([(path, pos)])
    twin, _, st_t = _read([(path, pos)], twin=True)
    assert twin.equals(kernel)
    assert st_t.as_dict() == st_k.as_dict()
    _assert_same(twin, _oracle(path, pos))


def test_twin_jobs_match_the_kernel(tmp_path, both):
    """The job level: statuses, stats and every output buffer, on files and under a schema."""
    rng = np.random.default_rng(19)
    t = _wide(rng, 400)
    a = _write(tmp_path / "ja.parquet", t, compression="SNAPPY", row_group_size=150, data_page_size=400)
    b = _write(tmp_path / "jb.parquet", t.slice(0, 250), data_page_version="2.0", write_page_index=False)
    _read([(a, _positions(rng, 400, 0.1)), (b, None)])
    _read([(a, [0, 0, 399]), (b, [3])])
    schema = pa.schema([("i32", pa.int64()), ("f32", pa.float64()), ("str", pa.large_string()), ("nope", pa.bool_())])
    _read([(a, [1, 2, 3]), (b, [4, 5])], schema=schema)
    # ranges: inside a page, across pages and row groups, a whole group and parts of two
    _read([(a, range(7, 9)), (b, range(20, 230)), (a, range(149, 301))])
    _read([(a, range(0, 151)), (b, range(1, 250))], schema=schema)
    assert both.jobs == 5


def test_a_range_of_rows_is_read_without_positions(tmp_path, monkeypatch):
    """A ``range`` reaches the reader as each row group's first row and count (CK_RANGE; a
    whole group: CK_EVERY), not as an array of positions: the rows array is empty.  Ranges
    starting and ending inside pages of every kind of column (nulls, dictionaries, byte arrays,
    pages v1 and v2) give pyarrow's slice, on the kernel and on the twin."""
    rng = np.random.default_rng(23)
    n = 1200
    t = _wide(rng, n)
    seen = []

    class Spy:
        def __init__(self, k):
            self.k = k

        def __getattr__(self, name):
            return getattr(self.k, name)

        def read(self, files, chunks, rows, cols, threads):
            seen.append((chunks.copy(), len(rows)))
            return self.k.read(files, chunks, rows, cols, threads)

    real = native.kernels
    monkeypatch.setattr(native, "kernels", lambda twin=False: Spy(real(twin)))
    for version in ("1.0", "2.0"):
        path = _write(
            tmp_path / f"r{version}.parquet", t, data_page_version=version, row_group_size=500, data_page_size=600
        )
        full = pq.read_table(path)
        for lo, hi in [(0, 1), (3, 40), (450, 560), (499, 501), (500, 1000), (250, 1200), (1, 1199), (1199, 1200)]:
            for twin in (False, True):
                seen.clear()
                got, _, st = _read([(path, range(lo, hi))], twin=twin)
                _assert_same(got, full.slice(lo, hi - lo))
                assert not st.fallbacks, st.fallbacks
                ((chunks, nrows),) = seen
                assert nrows == 0
                groups = {(int(c[11]), int(c[13]), int(c[14]), int(c[15])) for c in chunks}
                want = set()
                for g0 in range(0, n, 500):
                    g1 = min(n, g0 + 500)
                    a, b = max(lo, g0), min(hi, g1)
                    if b > a:
                        whole = (a, b) == (g0, g1)
                        want.add((g1 - g0, 0 if whole else a - g0, b - a, 1 if whole else 2))
                assert groups == want, (lo, hi)


def _snappy_streams(rng):
    """Byte strings of many shapes: runs, repeats at every distance, random bytes, empty."""
    out = [b"", b"a", bytes(100), bytes(range(256)) * 40]
    for _ in range(25):
        parts = []
        for _ in range(rng.integers(1, 30)):
            kind = rng.integers(0, 4)
            if kind == 0:
                parts.append(rng.bytes(int(rng.integers(1, 300))))
            elif kind == 1:
                parts.append(bytes([int(rng.integers(0, 256))]) * int(rng.integers(1, 5000)))
            elif kind == 2 and parts:
                p = parts[int(rng.integers(0, len(parts)))]
                parts.append(p * int(rng.integers(1, 4)))
            else:
                parts.append(b"".join(int(x).to_bytes(4, "little") for x in rng.integers(0, 16, 200)))
        out.append(b"".join(parts))
    return out


@pytest.mark.parametrize("codec,name", [(1, "snappy"), (7, "lz4_raw"), (0, None)])
def test_decompress_twin_matches_the_kernel(codec, name):
    rng = np.random.default_rng(20 + codec)
    if name is not None and not pa.Codec.is_available(name):
        pytest.skip(f"pyarrow without {name}")
    for raw in _snappy_streams(rng):
        comp = raw if name is None else pa.Codec(name).compress(raw, asbytes=True)
        for upto in (-1, 0, 1, len(raw) // 3, len(raw) - 1, len(raw), int(rng.integers(0, len(raw) + 1))):
            k = KERNEL.decompress(codec, comp, len(raw), upto)
            w = TWIN.decompress(codec, comp, len(raw), upto)
            assert k == w
            want = len(raw) if upto < 0 else min(upto, len(raw))
            assert len(k) >= want and k == raw[: len(k)]
        # corrupt streams: both refuse them, or both give the same bytes
        for _ in range(6):
            bad = bytearray(comp)
            if bad:
                for _ in range(int(rng.integers(1, 4))):
                    bad[int(rng.integers(0, len(bad)))] ^= int(rng.integers(1, 256))
            else:
                bad = bytearray(rng.bytes(3))
            if rng.random() < 0.3:
                bad = bad[: int(rng.integers(0, len(bad) + 1))]
            usize = len(raw) + int(rng.integers(-2, 3)) * int(rng.random() < 0.3)
            upto = int(rng.integers(-1, max(usize, 0) + 1))
            outcomes = []
            for impl in (KERNEL, TWIN):
                try:
                    outcomes.append(impl.decompress(codec, bytes(bad), usize, upto))
                except ValueError:
                    outcomes.append("ValueError")
            assert outcomes[0] == outcomes[1], (codec, usize, upto)
    assert TWIN.codec_available(1) and TWIN.codec_available(7) and TWIN.codec_available(0)
    assert not TWIN.codec_available(3) and not TWIN.codec_available(5)
    for c, name in ((2, "gzip"), (4, "brotli"), (6, "zstd")):
        assert TWIN.codec_available(c) == pa.Codec.is_available(name)


def _value_streams(rng):
    """Page bodies the Snappy kernel's fast loop decodes element by element: PLAIN strings and
    int64s (short literals and copies one after another), repeats of every period under 16 bytes
    up to 200 bytes long, and literals around 60 bytes (the tag's own limit) and longer."""
    keys = [f"k{(int(i) * 2654435761) % (1 << 32):010d}".encode() for i in rng.integers(0, 1 << 40, 3000)]
    strings = b"".join(len(k).to_bytes(4, "little") + k for k in keys)
    ints = np.cumsum(rng.integers(0, 1000, 4000)).astype("<i8").tobytes()
    # sorted doubles in a narrow range (a clustered column): neighbours share their high 4 bytes
    doubles = np.sort(rng.random(4000) * 0.4 + 780).astype("<f8").tobytes()
    parts = []
    for _ in range(400):
        kind = rng.integers(0, 3)
        if kind == 0:
            period = int(rng.integers(1, 16))
            parts.append(rng.bytes(period) * (int(rng.integers(1, 200)) // period + 1))
        elif kind == 1:
            parts.append(rng.bytes(int(rng.choice([15, 16, 17, 55, 59, 60, 61, 62, 64, 65, 70, 300]))))
        else:
            parts.append(keys[int(rng.integers(0, len(keys)))] * int(rng.integers(1, 4)))
    return [strings, ints, doubles, b"".join(parts)]


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    return bytes(out + bytes([v]))


def test_snappy_fast_loop_matches_the_twin():
    """The kernel's Snappy fast loop (elements decoded while 69 input bytes are left) against the
    Python twin: whole, stopped at many points (the loop hands over to the checked tail), and
    with bytes flipped or cut where the fast loop reads them."""
    rng = np.random.default_rng(42)
    for raw in _value_streams(rng):
        comp = pa.Codec("snappy").compress(raw, asbytes=True)
        assert KERNEL.decompress(1, comp, len(raw)) == raw
        for upto in list(rng.integers(0, len(raw) + 1, 40)) + [1, 16, 17, len(raw) - 1]:
            k = KERNEL.decompress(1, comp, len(raw), int(upto))
            assert k == TWIN.decompress(1, comp, len(raw), int(upto))
            assert len(k) >= upto and k == raw[: len(k)]
        for _ in range(60):
            bad = bytearray(comp)
            for _ in range(int(rng.integers(1, 3))):
                bad[int(rng.integers(0, len(bad)))] ^= int(rng.integers(1, 256))
            if rng.random() < 0.3:
                bad = bad[: int(rng.integers(len(bad) // 2, len(bad) + 1))]
            outcomes = []
            for impl in (KERNEL, TWIN):
                try:
                    outcomes.append(impl.decompress(1, bytes(bad), len(raw), -1))
                except ValueError:
                    outcomes.append("ValueError")
            assert outcomes[0] == outcomes[1]
    # copies from before the output's start, or from offset 0, with the rest of the stream long
    # enough that the fast loop decodes them: a literal of 8 bytes, the copy, a literal of 100
    lit8 = bytes([7 << 2]) + b"abcdefgh"
    tail = bytes([60 << 2, 99]) + bytes(100)
    for copy in (
        bytes([(3 << 2) | 1, 9]),
        bytes([(3 << 2) | 2, 9, 0]),
        bytes([(3 << 2) | 1, 0]),
        bytes([(3 << 2) | 3, 0, 0, 0, 0]),
    ):
        stream = bytes([112]) + lit8 + copy + tail  # 112 = 8 + 4 + 100 bytes out
        assert len(stream) >= 69
        for impl in (KERNEL, TWIN):
            with pytest.raises(ValueError):
                impl.decompress(1, stream, 112)
    # literals whose length takes 1, 2, 3 or 4 bytes after the tag (valid for any length; Snappy's
    # own compressor needs 3 or 4 only past 64 KiB), then a copy: the fast loop reads each length
    payload = rng.bytes(200)
    for nb in (1, 2, 3, 4):
        lit = bytes([(59 + nb) << 2]) + (len(payload) - 1).to_bytes(nb, "little") + payload
        stream = _varint(len(payload) + 4) + lit + bytes([1, 16])
        assert KERNEL.decompress(1, stream, len(payload) + 4) == payload + payload[-16:-12]
        assert TWIN.decompress(1, stream, len(payload) + 4) == payload + payload[-16:-12]
    good = bytes([112]) + lit8 + bytes([1, 8]) + tail  # 4 bytes from offset 8: from the start
    assert KERNEL.decompress(1, good, 112) == b"abcdefghabcd" + bytes(100) == TWIN.decompress(1, good, 112)


def _copy_out(out: bytearray, off: int, n: int) -> None:
    for _ in range(n):  # byte by byte: a copy from fewer bytes back than its length repeats them
        out.append(out[-off])


def test_snappy_copies_of_every_short_length_and_offset():
    """Copies of 1 to 20 bytes from 1 to 24 bytes back (2-byte-offset tags, which may state any
    length; Snappy's own compressor writes none under 4), decoded by the fast loop (a long literal
    follows) between short literals, against a byte-by-byte copy: copies that overlap their own
    output and copies that do not take different paths there."""
    rng = np.random.default_rng(11)
    head = rng.bytes(32)
    for off in range(1, 25):
        for n in range(1, 21):
            want = bytearray(head)
            stream = bytearray([31 << 2]) + head  # a 32-byte literal
            for k in range(3):  # the copy, a 3-byte literal, again
                stream += bytes([((n - 1) << 2) | 2, off, 0])
                _copy_out(want, off, n)
                lit = rng.bytes(3)
                stream += bytes([2 << 2]) + lit
                want += lit
            tail = rng.bytes(100)
            stream += bytes([60 << 2, len(tail) - 1]) + tail
            want += tail
            stream = _varint(len(want)) + stream
            assert KERNEL.decompress(1, bytes(stream), len(want)) == bytes(want), (off, n)
            assert TWIN.decompress(1, bytes(stream), len(want)) == bytes(want), (off, n)


def test_job_checks():
    """A job the reader cannot run is refused before it runs (ValueError), by both."""
    blob = b"PAR1" + bytes(20)
    files = [(-1, len(blob), [(0, blob)])]

    def job(**change):
        f = dict(zip(KERNEL.FIELDS, [0, 0, 1, 0, 0, 0, 0, 4, 20, -1, 0, 4, 4, 0, 4, 0, 0]))
        f.update(change)
        return np.array([[f[k] for k in KERNEL.FIELDS]], dtype=np.int64)

    def cols(n=4, width=4, values=True):
        return [(0, width, n, np.zeros(n * width, np.uint8) if values else None, np.ones(n, np.uint8), None)]

    rows = np.arange(4)
    bad = [
        (job()[:, :16], rows, cols()),
        (job(file=1), rows, cols()),
        (job(col=2), rows, cols()),
        (job(rows_off=2), rows, cols()),
        (job(nsel=-1), rows, cols()),
        (job(out_at=1), rows, cols()),
        (job(), rows, cols(values=False)),
        (job(), rows, [(0, 4, 4, np.zeros(15, np.uint8), None, None)]),
        (job(), rows, [(2, 0, 4, None, None, np.zeros(4, np.int32))]),
    ]
    for chunks, r, c in bad:
        for impl in (KERNEL, TWIN):
            with pytest.raises(ValueError):
                impl.read(files, chunks, r, c, 1)
    # nothing to do: no chunk
    for impl in (KERNEL, TWIN):
        status, err_at, errors, stats, data, overflow, summary = impl.read(files, job()[:0], rows, cols(), 1)
        assert len(status) == 0 and errors == {} and stats.shape == (0, 4) and data == [None] and overflow == [False]
        assert summary == (0, 0, 0, 0, 0, [0], [])


def test_twin_names():
    public = [n for n in dir(KERNEL) if n.isupper() or n in ("read", "decompress", "codec_available", "release_memory")]
    for name in public:
        assert hasattr(TWIN, name), name
        if name.isupper():
            assert getattr(TWIN, name) == getattr(KERNEL, name), name
    TWIN.release_memory()
    KERNEL.release_memory()


# ---------------------------------------------------------------- corrupt files
def _fuzz_base(tmp_path, rng, codec, version, index, dictionary=True, delta=False):
    """A file to mutate (``delta``: its integers DELTA_BINARY_PACKED, its strings
    DELTA_LENGTH_BYTE_ARRAY, no dictionaries), its rows and its regions (_mutate)."""
    n = 600
    t = _wide(rng, n).select(["i64", "req_i32", "str", "lstr", "bool", "req_bool", "dec_l", "f64", "fsb", "ts_ns"])
    path = _write(
        tmp_path / f"fz{codec}{version}{index}{delta}.parquet",
        t,
        compression=codec,
        data_page_version=version,
        write_page_index=index,
        use_dictionary=dictionary and not delta,
        row_group_size=250,
        data_page_size=400,
        **({"column_encoding": _delta_encodings(t.schema)} if delta else {}),
    )
    data = open(path, "rb").read()
    md = pq.ParquetFile(path).metadata
    chunks = []
    for g in range(md.num_row_groups):
        for c in range(md.num_columns):
            cc = md.row_group(g).column(c)
            start = cc.dictionary_page_offset if cc.has_dictionary_page else cc.data_page_offset
            chunks.append((start, start + cc.total_compressed_size))
    headers, bodies = [], []
    for start, end in chunks:  # the pages: their headers and bodies
        pos = start
        while pos < end:
            rc, h = TWIN._page_header(data, pos, end)
            assert rc == TWIN.OK
            headers.append((pos, pos + h.hlen))
            bodies.append((pos + h.hlen, pos + h.hlen + h.csize))
            pos += h.hlen + h.csize
    footer_len = int.from_bytes(data[-8:-4], "little")
    footer_start = len(data) - 8 - footer_len
    index_region = (max(e for _, e in chunks), footer_start)  # column and offset indexes
    return (
        data,
        n,
        {"header": headers, "body": bodies, "index": [index_region], "footer": [(footer_start, len(data) - 8)]},
    )


def _mutate(rng, data, regions):
    bad = bytearray(data)
    kind = rng.choice(["header", "header", "header", "body", "body", "index", "index", "any", "footer"])
    spans = [r for r in regions[kind] if r[1] > r[0]] if kind != "any" else [(4, len(data) - 8)]
    if not spans:
        spans = [(4, len(data) - 8)]
    a, b = spans[int(rng.integers(0, len(spans)))]
    for _ in range(int(rng.integers(1, 4))):
        at = int(rng.integers(a, b))
        if rng.random() < 0.5:
            bad[at] ^= 1 << int(rng.integers(0, 8))
        else:
            bad[at] = int(rng.integers(0, 256))
    return bytes(bad), kind


def _read_or_refuse(src, pos, **kw):
    """A read of a damaged file: a table, or IndexFormatError (or InvalidArgumentError for
    positions past the rows the damaged footer states, as pyarrow reads it); anything else fails
    the test."""
    try:
        got, counts, _ = _read([(src, pos)], **kw)
    except IndexFormatError:
        return None
    except InvalidArgumentError as e:
        try:
            stated = pq.ParquetFile(src if isinstance(src, str) else pa.BufferReader(src)).metadata.num_rows
        except (pa.ArrowException, OSError) as why:
            raise AssertionError(f"{e} for a file pyarrow refuses ({why}): see test_footer_without_row_groups")
        assert pos is not None and len(pos) and pos[-1] >= stated
        return None
    assert list(counts) == [got.num_rows]
    return got


def test_truncated_files(tmp_path):
    rng = np.random.default_rng(21)
    for codec, version, index in (("SNAPPY", "1.0", True), ("NONE", "2.0", False)):
        data, n, regions = _fuzz_base(tmp_path, rng, codec, version, index)
        cuts = sorted({0, 3, 4, 5, 20, 100, len(data) // 2, len(data) - 9, len(data) - 8, len(data) - 1})
        cuts += [int(x) for x in rng.integers(4, len(data), 20)]
        for cut in cuts:
            for src in (data[:cut], _tmp_file(tmp_path, data[:cut])):
                try:
                    got, _, _ = _read([(src, [0, 5, n - 1])])
                except IndexFormatError:
                    continue
                raise AssertionError(f"a file cut at {cut} of {len(data)} bytes was read: {got.num_rows} rows")


def _footer_of(data):
    n = int.from_bytes(data[-8:-4], "little")
    return len(data) - 8 - n


@pytest.mark.parametrize("positions", [None, [0]])
def test_footer_without_row_groups(positions):
    from paimon_fast.io.parquet.thrift import Decoder

    buf = io.BytesIO()
    pq.write_table(pa.table({"i": pa.array([1, 2, 3])}), buf)
    data = buf.getvalue()
    fs = _footer_of(data)
    d = Decoder(data, fs, len(data) - 8)
    for _ in range(2):  # version and schema, then the end of the struct
        h = d.byte()
        d.value(h & 15, 0, True)
    footer = data[fs : d.pos] + b"\x00"
    bad = data[:fs] + footer + len(footer).to_bytes(4, "little") + b"PAR1"
    with pytest.raises(Exception):
        pq.read_table(pa.BufferReader(bad))
    with pytest.raises(IndexFormatError):
        _read([(bad, positions)])


def test_arrow_schema_damaged_base64_padding_as_pyarrow():
    """A stored Arrow schema whose base64 padding is damaged ("==" -> "=5", bytes unchanged): the
    reader does what the installed pyarrow does, whose footer parser it uses.  Up to pyarrow 25
    Arrow decodes it leniently and the table is the undamaged file's; pyarrow 26 refuses the file,
    and the reader then raises IndexFormatError naming the cause, never a bare ArrowInvalid."""
    t = pa.table({"s": pa.array(["a", "b", "c"], pa.large_string()), "i": pa.array([1, 2, 3])})
    for pad in range(12):  # a stored schema whose base64 ends with "=="
        buf = io.BytesIO()
        pq.write_table(t.replace_schema_metadata({"pad": "x" * pad}), buf)
        data = buf.getvalue()
        j = data.find(b"==", data.rindex(b"ARROW:schema"))
        if j > 0:
            break
    bad = data[: j + 1] + b"5" + data[j + 2 :]  # "==" -> "=5": Python's strict base64 refuses it
    try:
        lenient = pq.read_table(pa.BufferReader(bad))
    except pa.ArrowInvalid as e:  # pyarrow >= 26: "padding in wrong position"
        with pytest.raises(IndexFormatError, match="not readable.*base64"):
            _read([(bad, None)])
        assert "base64" in str(e)
        return
    exp = pq.read_table(pa.BufferReader(data))
    assert exp.schema.field("s").type == pa.large_string()
    _assert_same(lenient, exp)
    got, _, _ = _read([(bad, None)])
    _assert_same(got, exp)


def test_boolean_rle_run_value_over_one():
    t = pa.table({"b": pa.array([True] * 100)}, schema=pa.schema([pa.field("b", pa.bool_(), nullable=False)]))
    buf = io.BytesIO()
    pq.write_table(t, buf, compression="NONE", data_page_version="2.0", use_dictionary=False)
    data = buf.getvalue()
    off = pq.ParquetFile(pa.BufferReader(data)).metadata.row_group(0).column(0).data_page_offset
    rc, h = TWIN._page_header(data, off, len(data))
    assert h.encoding == 3  # RLE: 4-byte length, one run of 100 values of 1
    for value in (2, 4, 3):
        bad = bytearray(data)
        bad[off + h.hlen + h.csize - 1] = value  # the run's value
        got = _read_or_refuse(bytes(bad), None)
        assert got is None or got.equals(pq.read_table(pa.BufferReader(bytes(bad)))), value


def _tmp_file(tmp_path, data, name="cut.parquet"):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def _flips(tmp_path, rng, kinds, count):
    """``count`` seeded mutations of files of ``kinds`` (``(codec, page version, page index,
    _fuzz_base options)``), each read by the reader and, where it reads it, compared with pyarrow:
    ``(refused, agreed, disagreements)``."""
    from paimon_fast._kernels import load

    pqk = load("pqread")
    bases = [_fuzz_base(tmp_path, rng, codec, version, index, **kw) for codec, version, index, kw in kinds]
    refused = agreed = 0
    disagreements = []
    for i in range(count):
        data, n, regions = bases[i % len(bases)]
        bad, kind = _mutate(rng, data, regions)
        pos = None if i % 7 == 0 else _positions(rng, n, 0.1)
        src = _tmp_file(tmp_path, bad) if i % 5 == 0 else bad
        # every other read on 4 threads, every phase spread over them (however small)
        old = pqk._set_parallel_min(0) if i % 2 else None
        try:
            got = _read_or_refuse(src, pos, threads=1 + 3 * (i % 2))
        finally:
            if old is not None:
                pqk._set_parallel_min(old)
        if got is None:
            refused += 1
            continue
        try:
            exp = _oracle(pa.BufferReader(bad), pos)
            if not pq.ParquetFile(pa.BufferReader(bad)).read().equals(_oracle(pa.BufferReader(bad), None)):
                continue  # pyarrow's two reads of the damaged file differ: no oracle
            same = got.equals(exp)
        except (pa.ArrowException, OSError, ValueError):  # (a damaged name: not UTF-8)
            continue
        if not same and kinds[i % len(kinds)][0] == "ZSTD":
            # a damaged ZSTD frame may decode differently in the system's libzstd (the kernel's)
            # and in pyarrow's bundled one (the system's 1.5.4 and pyarrow 26's differed on one
            # such frame): the twin decompresses with pyarrow's, so where it agrees the pages
            # were decoded alike
            try:
                same = _read([(bad, pos)], twin=True)[0].equals(exp)
            except IndexFormatError:
                same = False
        if same:
            agreed += 1
        else:
            disagreements.append((i, kind))
    return refused, agreed, disagreements


def test_fuzz_byte_flips(tmp_path):
    """A few hundred seeded mutations of page headers, page bodies, the page index and the footer
    of files with and without a page index, with PLAIN, dictionary and delta encodings: a read
    never crashes or hangs; it raises IndexFormatError or returns a table.  Where the reader and
    pyarrow both read a mutated file, they agree.  (The delta-encoded files have mutations of
    their own: a damaged footer's thrift that one pyarrow release reads and another refuses makes
    no oracle, and the first files' mutations are those every supported pyarrow agrees on.)"""
    faulthandler.dump_traceback_later(120, exit=True, file=sys.__stderr__)  # a hang fails the run
    try:
        plain = [("SNAPPY", "1.0", True, {}), ("NONE", "2.0", False, {}), ("LZ4", "1.0", False, {"dictionary": False})]
        plain.append(("ZSTD", "2.0", True, {}))
        refused, agreed, disagreements = _flips(tmp_path, np.random.default_rng(22), plain, 320)
        assert refused > 30 and agreed > 30, (refused, agreed)
        assert not disagreements, disagreements
        delta = [("SNAPPY", "1.0", True, {"delta": True}), ("NONE", "2.0", False, {"delta": True})]
        refused, agreed, disagreements = _flips(tmp_path, np.random.default_rng(24), delta, 160)
        assert refused > 15 and agreed > 15, (refused, agreed)
        assert not disagreements, disagreements
    finally:
        faulthandler.cancel_dump_traceback_later()


def test_fuzz_twin_statuses(tmp_path, both):
    """Mutated files give the same per-chunk statuses, errors and buffers in the kernel and the
    twin (Snappy, LZ4_RAW and uncompressed pages: decoded as far as needed in both; PLAIN,
    dictionary and delta encodings)."""
    rng = np.random.default_rng(23)
    bases = [
        _fuzz_base(tmp_path, rng, "SNAPPY", "1.0", True),
        _fuzz_base(tmp_path, rng, "NONE", "2.0", False),
        _fuzz_base(tmp_path, rng, "LZ4", "2.0", True, dictionary=False),
        _fuzz_base(tmp_path, rng, "SNAPPY", "1.0", True, delta=True),
        _fuzz_base(tmp_path, rng, "NONE", "2.0", False, delta=True),
    ]
    for i in range(60):
        data, n, regions = bases[i % len(bases)]
        bad, _ = _mutate(rng, data, {**regions, "footer": regions["header"]})
        _read_or_refuse(bad, _positions(rng, n, 0.1))
    assert both.jobs > 20


# ---------------------------------------------------------------- crafted column chunks
def _page_header(ptype, usize, csize, *, nvalues=0, encoding=0, def_enc=3, v2=None, raw=b""):
    """A PageHeader: data page V1 (ptype 0), dictionary (2) or V2 (3, ``v2`` = (nulls, rows,
    def_len, rep_len))."""
    e = _Encoder()
    e.int(1, ptype, _T_I32)
    e.int(2, usize, _T_I32)
    e.int(3, csize, _T_I32)
    if ptype == 0:
        e.struct_begin(5)
        e.int(1, nvalues, _T_I32)
        e.int(2, encoding, _T_I32)
        e.int(3, def_enc, _T_I32)
        e.int(4, 3, _T_I32)
        e.struct_end()
    elif ptype == 2:
        e.struct_begin(7)
        e.int(1, nvalues, _T_I32)
        e.int(2, encoding, _T_I32)
        e.struct_end()
    elif ptype == 3:
        nulls, rows, def_len, rep_len = v2
        e.struct_begin(8)
        e.int(1, nvalues, _T_I32)
        e.int(2, nulls, _T_I32)
        e.int(3, rows, _T_I32)
        e.int(4, encoding, _T_I32)
        e.int(5, def_len, _T_I32)
        e.int(6, rep_len, _T_I32)
        e.struct_end()
    return bytes(e.out) + raw + b"\x00"


def _page(ptype, body, **kw):
    return _page_header(ptype, len(body), len(body), **kw) + body


def _uvarint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _rle(count, value, bw=1):
    return _uvarint(count << 1) + value.to_bytes((bw + 7) // 8, "little")


def _levels_v1(runs: bytes):
    return len(runs).to_bytes(4, "little") + runs


def _i32s(vals):
    return np.asarray(vals, dtype="<i4").tobytes()


def _offset_index(locs):
    e = _Encoder()
    e.list_begin(1, _T_STRUCT, len(locs))
    for off, size, first in locs:
        e.struct_begin(None)
        e.int(1, off, _T_I64)
        e.int(2, size, _T_I32)
        e.int(3, first, _T_I64)
        e.struct_end()
    return bytes(e.out) + b"\x00"


def _job(pages: bytes, rg_rows, *, rows=None, max_def=1, oi=None, physical=1, kind=0, width=4, conv=0, codec=0):
    """Run one chunk (an INT32 column by default) of a file made of ``PAR1`` and ``pages`` (and
    an OffsetIndex) on the kernel and the twin; both must agree.  Returns the kernel's result
    and its output column."""
    blob = b"PAR1" + pages + (oi or b"")
    files = [(-1, len(blob), [(0, blob)])]
    sel = np.arange(rg_rows) if rows is None else np.asarray(rows, dtype=np.int64)
    nsel = len(sel)
    chunk = np.array(
        [[0, 0, physical, 0, codec, max_def, conv, 4, len(pages), 4 + len(pages) if oi else -1, len(oi or b""),
          rg_rows, rg_rows, 0, nsel, 0, 0]],
        dtype=np.int64,
    )  # fmt: skip

    def cols():
        if kind >= 2:
            return [
                (kind, 0, nsel, None, np.ones(nsel, np.uint8), np.zeros(nsel + 1, np.int32 if kind == 2 else np.int64))
            ]
        return [(kind, width, nsel, np.zeros(nsel * width, np.uint8), np.ones(nsel, np.uint8), None)]

    kc, tc = cols(), cols()
    got = KERNEL.read(files, chunk, sel, kc, 1)
    exp = TWIN.read(files, chunk, sel, tc, 1)
    _assert_same_job(got, exp, kc, tc)
    return got, kc[0]


def _values(col):
    kind, width, n, values, valid, _ = col
    v = np.frombuffer(values.tobytes(), dtype="<i4").tolist()
    return [x if ok else None for x, ok in zip(v, valid)]


def _status(res):
    return int(res[0][0]), res[2].get(0, "")


def test_crafted_valid_chunk():
    """The builder's baseline: a dictionary page, a dictionary-encoded page, a PLAIN one."""
    dict_page = _page(2, _i32s([10, 20, 30]), nvalues=3)
    idx = bytes([2]) + _rle(4, 2, 2) + _uvarint(1 << 1 | 1) + bytes([0b0100, 0])  # 2 2 2 2, then 0 1 (packed)
    p1 = _page(0, _levels_v1(_rle(6, 1)) + idx, nvalues=6, encoding=8)
    p2 = _page(0, _levels_v1(_uvarint(1 << 1 | 1) + bytes([0b101])) + _i32s([7, 8]), nvalues=3, encoding=0)
    res, col = _job(dict_page + p1 + p2, 9)
    assert _status(res) == (KERNEL.OK, "")
    assert _values(col) == [30, 30, 30, 30, 10, 20, 7, None, 8]
    assert res[3][0, 3] == 1  # the slots made null
    res, col = _job(dict_page + p1 + p2, 9, rows=[1, 5, 6, 7, 8])
    assert _values(col) == [30, 20, 7, None, 8]
    # pages, read, bytes read, slots made null
    assert res[3].tolist() == [[2, 2, len(dict_page) + len(p1) + len(p2), 1]]
    res, col = _job(dict_page + p1 + p2, 9, rows=[0, 8])
    assert _values(col) == [30, 8] and res[3][0, 3] == 0


@pytest.mark.parametrize(
    "case",
    [
        "huge_csize",
        "huge_usize",
        "usize_over_2g",
        "rle_levels_past_end",
        "packed_levels_past_end",
        "level_of_two",
        "dict_index_out_of_range",
        "dict_bit_width_33",
        "dict_run_past_end",
        "no_dictionary_page",
        "more_rows_than_row_group",
        "fewer_rows_than_row_group",
        "truncated_header",
        "deep_header",
        "unknown_page_type",
        "v2_repetition_levels",
        "v2_levels_past_page",
        "v2_level_lengths_overflow",
        "byte_array_past_page",
        "snappy_copy_before_start",
        "unknown_encoding",
    ],
)
def test_crafted_corrupt_chunk(case):
    plain = _levels_v1(_rle(4, 1)) + _i32s([1, 2, 3, 4])
    good = _page(0, plain, nvalues=4)
    kw = {}
    expect = KERNEL.CORRUPT
    if case == "huge_csize":
        pages = _page_header(0, len(plain), (1 << 31) - 1, nvalues=4) + plain
    elif case == "huge_usize":
        pages = _page_header(0, (1 << 31) - 1, len(plain), nvalues=4) + plain
    elif case == "usize_over_2g":
        pages = _page_header(0, 1 << 31, len(plain), nvalues=4) + plain
    elif case == "rle_levels_past_end":
        pages = _page(0, _levels_v1(_rle(2, 1)) + _i32s([1, 2, 3, 4]), nvalues=4)
    elif case == "packed_levels_past_end":
        pages = _page(0, _levels_v1(_uvarint(100 << 1 | 1) + b"\xff") + _i32s([1, 2, 3, 4]), nvalues=4)
    elif case == "level_of_two":
        pages = _page(0, _levels_v1(_rle(4, 2)) + _i32s([1, 2, 3, 4]), nvalues=4)
    elif case.startswith("dict") or case == "no_dictionary_page":
        dict_page = _page(2, _i32s([10, 20, 30]), nvalues=3)
        idx = {
            "dict_index_out_of_range": bytes([3]) + _rle(4, 5, 3),
            "dict_bit_width_33": bytes([33]) + _rle(4, 1, 33),
            "dict_run_past_end": bytes([2]) + _uvarint(9 << 1 | 1) + b"\x00",
            "no_dictionary_page": bytes([2]) + _rle(4, 1, 2),
        }[case]
        pages = _page(0, _levels_v1(_rle(4, 1)) + idx, nvalues=4, encoding=8)
        if case == "no_dictionary_page":
            expect = KERNEL.UNSUPPORTED
        else:
            pages = dict_page + pages
    elif case == "more_rows_than_row_group":
        pages = good + good
    elif case == "fewer_rows_than_row_group":
        pages = good
        kw["rg"] = 6
    elif case == "truncated_header":
        pages = good + _page_header(0, 10, 10, nvalues=2)[:6]
        kw["rg"] = 6
    elif case == "deep_header":
        e = _Encoder()
        for _ in range(40):
            e.struct_begin(9)
        for _ in range(40):
            e.struct_end()
        pages = _page_header(0, len(plain), len(plain), nvalues=4, raw=bytes(e.out)) + plain
    elif case == "unknown_page_type":
        pages = _page_header(9, len(plain), len(plain), nvalues=4) + plain
    elif case == "v2_repetition_levels":
        lv = _rle(4, 1)
        body = lv + _i32s([1, 2, 3, 4])
        pages = _page_header(3, len(body), len(body), nvalues=4, v2=(0, 4, 0, len(lv))) + body
    elif case == "v2_levels_past_page":
        body = _rle(4, 1) + _i32s([1, 2, 3, 4])
        pages = _page_header(3, len(body), len(body), nvalues=4, v2=(0, 4, len(body) + 5, 0)) + body
    elif case == "v2_level_lengths_overflow":  # def_len + rep_len past int64
        body = _rle(4, 1) + _i32s([1, 2, 3, 4])
        pages = _page_header(3, len(body), len(body), nvalues=4, v2=(0, 4, 1 << 62, 1 << 62)) + body
    elif case == "byte_array_past_page":
        body = _levels_v1(_rle(4, 1)) + (2).to_bytes(4, "little") + b"ab" + (1000).to_bytes(4, "little") + b"cd"
        pages = _page(0, body, nvalues=4)
        kw.update(physical=6, kind=2, width=0)
    elif case == "snappy_copy_before_start":
        raw = _levels_v1(_rle(4, 1)) + _i32s([1, 2, 3, 4])
        comp = _uvarint(len(raw)) + bytes([(4 - 1) << 2]) + raw[:4] + bytes([((8 - 4) << 2) | 1, 50])
        comp += bytes([(len(raw) - 12 - 1) << 2]) + raw[12:]
        pages = _page_header(0, len(raw), len(comp), nvalues=4) + comp
        kw["codec"] = 1
    elif case == "unknown_encoding":
        pages = _page(0, plain, nvalues=4, encoding=7)  # DELTA_BYTE_ARRAY
        expect = KERNEL.UNSUPPORTED
    else:
        raise AssertionError(case)
    rg = kw.pop("rg", 4)
    res, _ = _job(pages, rg, **kw)
    assert _status(res)[0] == expect, _status(res)
    res, _ = _job(pages, rg, rows=[0, rg - 1], **kw)  # the same chunk, two rows
    assert _status(res)[0] in (KERNEL.OK, expect), _status(res)


def test_crafted_huge_usize_under_a_memory_limit():
    code = """
        import resource, sys
        sys.path.insert(0, %r)
        import numpy as np
        import test_native_reader as T
        resource.setrlimit(resource.RLIMIT_AS, (1500 << 20, 1500 << 20))
        plain = T._levels_v1(T._rle(4, 1)) + T._i32s([1, 2, 3, 4])
        res, _ = T._job(T._page_header(0, (1 << 31) - 1, len(plain), nvalues=4) + plain, 4)
        assert T._status(res)[0] == T.KERNEL.CORRUPT, T._status(res)
    """ % (str(__import__("pathlib").Path(__file__).parent),)
    _run_child(code)


def test_crafted_int96_far_days():
    """INT96 values whose day is far from the epoch (nanoseconds past int64): read, not refused,
    the same in both (the int64 wraps)."""
    vals = b"".join(
        n.to_bytes(8, "little") + d.to_bytes(4, "little") for n, d in ((5, 0xFFFFFFFF), (7, 0), (9, 2440588))
    )
    pages = _page(0, _levels_v1(_rle(3, 1)) + vals, nvalues=3)
    res, col = _job(pages, 3, physical=3, width=8, conv=KERNEL.CV_INT96_NS)
    assert _status(res) == (KERNEL.OK, "")
    assert np.frombuffer(col[3].tobytes(), "<i8").tolist()[2] == 9


def test_crafted_snappy_body_read_as_far_as_needed():
    """A Snappy body that is corrupt past the wanted values: the first rows read, the last not."""
    vals = np.repeat(np.arange(300), 10)  # runs: many Snappy elements
    raw = _i32s(vals)
    comp = pa.Codec("snappy").compress(raw, asbytes=True)[:-40]  # the stream ends early
    pages = _page_header(0, len(raw), len(comp), nvalues=3000, encoding=0) + comp
    res, col = _job(pages, 3000, rows=[0, 1, 2], max_def=0, codec=1)
    assert _status(res)[0] == KERNEL.OK
    assert np.frombuffer(col[3].tobytes(), "<i4").tolist() == [0, 0, 0]
    res, _ = _job(pages, 3000, rows=[0, 2999], max_def=0, codec=1)
    assert _status(res)[0] == KERNEL.CORRUPT


def _oi_pages():
    p1 = _page(0, _levels_v1(_rle(4, 1)) + _i32s([1, 2, 3, 4]), nvalues=4)
    p2 = _page(0, _levels_v1(_rle(3, 1)) + _i32s([5, 6, 7]), nvalues=3)
    return p1, p2


@pytest.mark.parametrize(
    "case", ["good", "overlap", "past_chunk", "first_row_not_zero", "rows_not_increasing", "garbage", "mid_page"]
)
def test_crafted_offset_index(case):
    """An OffsetIndex the reader cannot use is ignored (the page headers are walked, as pyarrow
    does); one whose pages are not where it says marks the chunk corrupt."""
    p1, p2 = _oi_pages()
    a, b = 4, 4 + len(p1)
    locs = {
        "good": [(a, len(p1), 0), (b, len(p2), 4)],
        "overlap": [(a, len(p1) + 3, 0), (b, len(p2), 4)],
        "past_chunk": [(a, len(p1), 0), (b, len(p2) + 50, 4)],
        "first_row_not_zero": [(a, len(p1), 1), (b, len(p2), 4)],
        "rows_not_increasing": [(a, len(p1), 0), (b, len(p2), 0)],
        "garbage": None,
        "mid_page": [(a, 3, 0), (a + 3, len(p1) + len(p2) - 3, 4)],
    }[case]
    oi = b"\x19\xfc\x01\x02" if locs is None else _offset_index(locs)
    res, col = _job(p1 + p2, 7, oi=oi, rows=[0, 3, 4, 6])
    if case == "mid_page":
        assert _status(res)[0] == KERNEL.CORRUPT
    else:
        assert _status(res) == (KERNEL.OK, "")
        assert _values(col) == [1, 4, 5, 7]
        # the pages read: one OffsetIndex says, both when walking
        assert res[3].tolist()[0][:2] == [2, 2]


def test_crafted_offset_index_overflowing_offsets():
    p1, p2 = _oi_pages()
    big = (1 << 62) + (1 << 61)
    oi = _offset_index([(4, len(p1), 0), (big, big, 4)])
    res, col = _job(p1 + p2, 7, oi=oi, rows=[0, 3, 4, 6])
    assert _status(res) == (KERNEL.OK, "")


def test_output_type_check_is_cached_by_what_decides_it():
    """The reader checks that its buffers are an Arrow array of the column's type before
    ``from_buffers`` (which aborts on a mismatch); the check is cached by a key of the type's id
    (and a fixed-size binary's width): any two types of one key must get the same answer, and a
    mismatch must still raise after a matching type of the same id was cached."""
    from paimon_fast.io.parquet import arrowmap

    K = native.kernels(False)
    types = [
        pa.int8(), pa.int32(), pa.uint32(), pa.int64(), pa.float32(), pa.float64(), pa.date32(),
        pa.timestamp("ms"), pa.timestamp("us", "UTC"), pa.decimal128(10, 2), pa.decimal128(38, 4),
        pa.binary(3), pa.binary(6), pa.binary(16), pa.string(), pa.binary(), pa.large_string(),
        pa.bool_(), pa.null(), pa.dictionary(pa.int32(), pa.string()), pa.list_(pa.int64()),
    ]  # fmt: skip
    outputs = [(K.OUT_FIXED, w) for w in (1, 3, 4, 6, 8, 16)] + [(K.OUT_BOOL, 1), (K.OUT_BYTES, 0), (K.OUT_LBYTES, 0)]
    seen = {}
    for t in types:
        for kind, width in outputs:
            key = arrowmap._fits_key(kind, width, t)
            assert seen.setdefault(key, arrowmap._fits(K, kind, width, t)) == arrowmap._fits(K, kind, width, t), t
    arrowmap._FITS.clear()
    values = np.zeros(8 * 3, np.uint8)
    ok = arrowmap._arrow(K, (K.OUT_FIXED, 8, 3, values, None, None), None, pa.binary(8))
    assert ok.type == pa.binary(8) and len(ok) == 3
    with pytest.raises(AssertionError, match="not an Arrow fixed_size_binary"):
        arrowmap._arrow(K, (K.OUT_FIXED, 8, 3, values, None, None), None, pa.binary(6))
