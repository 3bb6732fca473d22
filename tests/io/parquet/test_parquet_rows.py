"""paimon_fast.io.parquet.rows.read_rows: chosen rows of a Parquet file from the pages holding them.

The oracle is pyarrow's own full read of the file, taken at the same positions
(``pq.read_table(path, columns).take(positions)``): same values, types, field and
schema metadata.  Files are written by pyarrow with and without a page index, data
page V1 and V2, dictionary and plain encodings, every codec, nulls, one-row pages,
several row groups; and by Java Paimon 0.9 (``tests/data/paimon_tables``)."""

from __future__ import annotations

import io
import os
import tarfile
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from pyroaring import BitMap

from paimon_fast.io.parquet import rows as pr
from paimon_fast.errors import ColumnNotFoundError, IndexFormatError, InvalidArgumentError
from paimon_fast.io.parquet.footer import chunk_pages, _read_footer
from paimon_fast.io.source import BytesSource, FileSource
from tests.support.paths import DATA

CODECS = ["snappy", "zstd", "gzip", "lz4", "none"]


def _column(kind: str, n: int, rng, nulls: float):
    mask = rng.random(n) < nulls if nulls else None
    if kind == "int8":
        a = pa.array(rng.integers(-128, 128, n).astype(np.int8), mask=mask)
    elif kind == "int16":
        a = pa.array(rng.integers(-30000, 30000, n).astype(np.int16), mask=mask)
    elif kind == "int32":
        a = pa.array(rng.integers(-50, 50, n).astype(np.int32), mask=mask)  # few distinct: dictionary
    elif kind == "int64":
        a = pa.array(rng.integers(-(2**62), 2**62, n), mask=mask)  # all distinct: the dictionary overflows
    elif kind == "float32":
        a = pa.array(rng.random(n).astype(np.float32), mask=mask)
    elif kind == "float64":
        a = pa.array(rng.random(n), mask=mask)
    elif kind in ("decimal", "decimal38"):
        typ = pa.decimal128(12, 3) if kind == "decimal" else pa.decimal128(38, 10)
        a = pa.array([Decimal(int(v)).scaleb(-3) for v in rng.integers(-(10**9), 10**9, n)], typ, mask=mask)
    elif kind == "string":
        a = pa.array([f"s{v}" * (1 + v % 4) for v in rng.integers(0, 400, n)], mask=mask)
    elif kind == "binary":
        a = pa.array(
            [bytes(rng.integers(0, 256, int(k)).astype(np.uint8)) for k in rng.integers(0, 20, n)],
            pa.binary(),
            mask=mask,
        )
    elif kind == "bool":
        a = pa.array(rng.random(n) < 0.3, mask=mask)
    elif kind == "date":
        a = pa.array(rng.integers(0, 40000, n).astype(np.int32), mask=mask).cast(pa.date32())
    elif kind.startswith("ts_"):
        unit = kind.split("_")[1]
        tz = "UTC" if kind.endswith("tz") else None
        a = pa.array(rng.integers(0, 2**40, n), mask=mask).cast(pa.timestamp(unit, tz))
    elif kind == "list":  # nested: read from the whole row group
        a = pa.array([[int(v)] * int(v % 3) if v % 5 else None for v in rng.integers(0, 100, n)], pa.list_(pa.int32()))
    else:
        raise AssertionError(kind)
    return a


FLAT = [
    "int8",
    "int16",
    "int32",
    "int64",
    "float32",
    "float64",
    "decimal",
    "decimal38",
    "string",
    "binary",
    "bool",
    "date",
    "ts_s",
    "ts_ms",
    "ts_us",
    "ts_ns",
    "ts_us_tz",
]


def _write(path, table, **kw):
    pq.write_table(table, path, **kw)
    return path


def _expect(path, positions, columns=None):
    return pq.read_table(path, columns=columns).take(pa.array(np.asarray(positions, dtype=np.int64)))


def _check(path, positions, columns=None, **kw):
    stats = pr.PageReadStats()
    got = pr.read_rows(path, positions, columns, stats=stats, **kw)
    exp = _expect(path, positions, columns)
    assert got.schema.equals(exp.schema, check_metadata=True), (got.schema, exp.schema)
    assert got.equals(exp)
    assert stats.rows == len(positions)
    return stats


@st.composite
def _cases(draw):
    n = draw(st.integers(1, 3000))
    kinds = draw(st.lists(st.sampled_from(FLAT + ["list"]), min_size=1, max_size=4, unique=True))
    seed = draw(st.integers(0, 2**31))
    nulls = draw(st.sampled_from([0.0, 0.0, 0.1, 0.9]))
    opts = dict(
        compression=draw(st.sampled_from(CODECS)),
        write_page_index=draw(st.booleans()),
        data_page_version=draw(st.sampled_from(["1.0", "2.0"])),
        use_dictionary=draw(st.booleans()),
        row_group_size=draw(st.sampled_from([n, max(1, n // 3), 500, 7])),
        data_page_size=draw(st.sampled_from([1, 64, 1024, 1 << 20])),
        write_batch_size=draw(st.sampled_from([1, 10, 1024])),
        dictionary_pagesize_limit=draw(st.sampled_from([64, 1 << 20])),
    )
    how = draw(st.sampled_from(["random", "random", "empty", "all", "one", "run"]))
    k = draw(st.integers(0, n))
    frac = draw(st.sampled_from([None, 1.0]))
    return n, kinds, seed, nulls, opts, how, k, frac


def _positions(how, n, k, rng):
    if how == "empty":
        return np.zeros(0, dtype=np.int64)
    if how == "all":
        return np.arange(n, dtype=np.int64)
    if how == "one":
        return np.array([rng.integers(0, n)], dtype=np.int64)
    if how == "run":
        a = int(rng.integers(0, n))
        return np.arange(a, min(n, a + k + 1), dtype=np.int64)
    pos = np.sort(rng.integers(0, n, k))  # repeats allowed: they repeat rows
    return pos.astype(np.int64)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_cases())
def test_read_rows_equals_take_of_a_full_read(tmp_path_factory, case):
    n, kinds, seed, nulls, opts, how, k, frac = case
    rng = np.random.default_rng(seed)
    t = pa.table({kd: _column(kd, n, rng, nulls) for kd in kinds})
    path = str(tmp_path_factory.mktemp("pq") / "f.parquet")
    _write(path, t, **opts)
    pos = _positions(how, n, k, rng)
    cols = [kinds[i] for i in sorted(set(rng.integers(0, len(kinds), 2).tolist()))] if len(kinds) > 1 else None
    s = _check(path, pos, cols, page_fraction=frac)
    if len(pos):  # every flat column is read by the native reader, the nested ones by pyarrow
        assert set(s.fallbacks) <= {"nested column"}, s
        got = pq.read_schema(path)
        flat = [k for k in (cols or kinds) if k != "list" and not pa.types.is_null(got.field(k).type)]
        assert s.columns_by_page >= 1 or not flat, s  # (a column pyarrow types null is all nulls: not read)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("page_index", [True, False])
def test_pages_are_read_not_row_groups(tmp_path, codec, version, page_index):
    """Few rows of a many-page file: only their pages are decoded, every flat type."""
    n = 6000
    rng = np.random.default_rng(7)
    t = pa.table({kd: _column(kd, n, rng, 0.1) for kd in FLAT})
    path = _write(
        str(tmp_path / "f.parquet"),
        t,
        compression=codec,
        data_page_version=version,
        write_page_index=page_index,
        data_page_size=64,
        write_batch_size=64,
        row_group_size=2500,
    )
    pos = np.array([3, 4, 4, 2700, 5999], dtype=np.int64)
    _check(path, pos, page_decoder=None)  # pyarrow's row-group read gives the same
    s = _check(path, pos)
    assert s.columns_whole == 0 and s.columns_by_page == 3 * len(FLAT), s  # 3 row groups
    assert s.pages_read < s.pages_total / 10, s
    assert s.rows_decoded < n / 3 and s.bytes_read < 0.8 * s.bytes_total, s  # dictionary pages are read
    # the same rows given as a BitMap, from bytes, a pyarrow file and a Python file object
    data = open(path, "rb").read()
    exp = _expect(path, pos[[0, 1, 3, 4]])
    for src in (data, pa.BufferReader(data), io.BytesIO(data), BytesSource(data)):
        assert pr.read_rows(src, BitMap(pos.tolist())).equals(exp)


def test_dictionary_page_only_when_needed(tmp_path):
    """A chunk whose dictionary overflowed: plain pages are read without the dictionary page."""
    n = 50_000
    t = pa.table({"x": np.arange(n, dtype=np.int64)})
    path = _write(
        str(tmp_path / "f.parquet"), t, dictionary_pagesize_limit=4096, data_page_size=4096, write_page_index=True
    )
    late = _check(path, [n - 1])
    early = _check(path, [0])
    assert late.bytes_read < early.bytes_read  # the first page is dictionary-encoded: its dictionary is read
    assert late.columns_by_page == early.columns_by_page == 1


def test_nested_columns_read_whole_flat_ones_by_page(tmp_path):
    n = 10_000
    rng = np.random.default_rng(3)
    t = pa.table(
        {
            "a": _column("int64", n, rng, 0.0),
            "l": _column("list", n, rng, 0.0),
            "s": pa.array([{"u": int(i), "v": str(i)} for i in range(n)]),
        }
    )
    path = _write(str(tmp_path / "f.parquet"), t, data_page_size=1024, write_page_index=True, use_dictionary=False)
    s = _check(path, [5, 6000])
    assert s.columns_by_page == 1 and s.columns_whole == 2 and s.fallbacks == {"nested column": 2}, s


def test_rows_in_every_page(tmp_path):
    """A row in every page: still only the wanted values decoded, every page read once;
    ``page_fraction=0`` (or ``page_decoder=None``) has pyarrow decode the row groups whole."""
    n = 10_000
    t = pa.table({"a": np.arange(n), "b": np.arange(n) * 2.0})
    path = _write(str(tmp_path / "f.parquet"), t, data_page_size=1024, write_page_index=True)
    every = _check(path, np.arange(0, n, 50))
    assert every.columns_by_page == 2 and every.columns_whole == 0 and every.pages_read == every.pages_total
    assert every.rows_decoded == n // 50
    never = _check(path, [1], page_fraction=0.0)
    assert never.columns_whole == 2 and never.rows_decoded == n and never.pages_read == 0


def test_one_row_pages_without_page_index(tmp_path):
    t = pa.table({"a": pa.array(range(300)), "s": pa.array([str(i) if i % 3 else None for i in range(300)])})
    path = _write(
        str(tmp_path / "f.parquet"),
        t,
        data_page_size=1,
        write_batch_size=1,
        write_page_index=False,
        use_dictionary=False,
    )
    s = _check(path, [0, 150, 299])
    assert s.pages_read <= 6 and s.pages_total > 450 and s.rows_decoded <= 6, s


def test_schema_metadata_and_types_kept(tmp_path):
    t = pa.table(
        {
            "a": pa.array([1, 2, 3] * 1000, pa.int32()),
            "d": pa.array(["x", "y", "z"] * 1000).dictionary_encode(),
            "big": pa.array(["p", "q", "r"] * 1000, pa.large_string()),
            "t": pa.array([1, 2, 3] * 1000, pa.timestamp("s", "Europe/Paris")),
        }
    )
    t = t.replace_schema_metadata({"k": "v"})
    path = _write(str(tmp_path / "f.parquet"), t, data_page_size=512, write_page_index=True)
    s = _check(path, [1, 2500])
    assert s.columns_by_page == 3 and s.columns_whole == 1  # "d", a dictionary in the stored schema: pyarrow
    got = pr.read_rows(path, [1], ["d", "t"])
    assert got.schema.field("d").type == pa.dictionary(pa.int32(), pa.string())
    assert got.schema.metadata[b"k"] == b"v"


def test_files_of_one_schema_share_its_arrow_schemas(tmp_path):
    """The Arrow schemas of a footer are read once for the files sharing it; a file of another
    schema (another type of the same column) gets its own, and clear_cache forgets them."""
    pr.clear_cache()
    paths = []
    for k, typ in enumerate([pa.int32(), pa.int32(), pa.int64()]):
        t = pa.table({"a": pa.array(list(range(k, k + 3000)), typ), "s": pa.array([f"v{i % 7}" for i in range(3000)])})
        paths.append(_write(str(tmp_path / f"f{k}.parquet"), t, data_page_size=512))
    for p in paths:
        got = pr.read_rows(p, [5, 2999], ["a", "s"])
        want = pq.read_table(p, columns=["a", "s"]).take([5, 2999])
        assert got.equals(want) and got.schema == want.schema
    assert pr._schemas.cache_info().currsize == 2
    pr.clear_cache()
    assert pr._schemas.cache_info().currsize == 0


def test_java_paimon_files():
    """Data files written by Java Paimon 0.9 (parquet-mr 1.13, page index, ZSTD, dictionary)."""
    with tarfile.open(os.path.join(DATA, "paimon_tables", "java09-append-tables.tar.gz")) as tar:
        members = [m for m in tar.getmembers() if m.name.endswith(".parquet")]
        assert len(members) >= 8
        rng = np.random.default_rng(1)
        for m in members:
            data = tar.extractfile(m).read()
            full = pq.read_table(pa.BufferReader(data))
            for pos in (np.sort(rng.integers(0, full.num_rows, 7)), [], [full.num_rows - 1]):
                pos = np.asarray(pos, dtype=np.int64)
                for dec in ("kernel", None):
                    got = pr.read_rows(data, pos, page_decoder=dec)
                    assert got.equals(full.take(pa.array(pos))), m.name
    dv = os.path.join(DATA, "paimon_append_dv", "data-b648e695-0aa3-40fa-99cd-385d9eed838e-0.parquet")
    s = _check(dv, [0, 10, 999], ["id", "category"])
    assert s.columns_by_page == 2 and not s.fallbacks, s


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 12)), max_size=8))
def test_ranges_to_positions(spans):
    ranges = [(a, a + n) for a, n in spans]
    want = sorted({p for a, b in ranges for p in range(a, b)})
    assert pr.ranges_to_positions(ranges).tolist() == want


def test_ranges_to_positions_rejects_backward_ranges():
    with pytest.raises(InvalidArgumentError):
        pr.ranges_to_positions([(5, 4)])


def test_bad_arguments(tmp_path):
    path = _write(str(tmp_path / "f.parquet"), pa.table({"a": [1, 2, 3]}))
    with pytest.raises(InvalidArgumentError):
        pr.read_rows(path, [2, 1])
    with pytest.raises(InvalidArgumentError):
        pr.read_rows(path, [3])
    with pytest.raises(InvalidArgumentError):
        pr.read_rows(path, [-1])
    with pytest.raises(InvalidArgumentError):
        pr.read_rows(path, [0.5])
    with pytest.raises(ColumnNotFoundError):
        pr.read_rows(path, [0], ["nope"])
    with pytest.raises(IndexFormatError):
        pr.read_rows(path, [0], rows=4)


def test_corrupt_files(tmp_path):
    t = pa.table({"a": np.arange(5000), "s": [str(i) for i in range(5000)]})
    path = _write(str(tmp_path / "f.parquet"), t, data_page_size=1024, write_page_index=True)
    data = bytearray(open(path, "rb").read())
    for bad in (
        b"",
        b"PAR1",
        bytes(data[:-3]),
        bytes(data[:100]),
        b"x" * 100,
        bytes(data[:-8]) + (10**6).to_bytes(4, "little") + b"PAR1",
    ):
        with pytest.raises(IndexFormatError):
            pr.read_rows(bad, [0])
    # a page index that is not one: the reader walks the page headers instead (pyarrow ignores it)
    fo = _read_footer(BytesSource(bytes(data)))
    off = fo.row_groups[0][1][0][4]
    broken = bytes(data[:off]) + b"\xff" * 40 + bytes(data[off + 40 :])
    st_ = pr.PageReadStats()
    got = pr.read_rows(broken, [1, 4000], stats=st_)
    assert got.equals(t.take([1, 4000])) and st_.columns_by_page == 2 and not st_.fallbacks, st_


def test_pyarrow_row_group_reads_count_their_rows(tmp_path):
    n = 200_000
    path = _write(
        str(tmp_path / "f.parquet"),
        pa.table({"a": np.arange(n), "s": [str(i % 97) for i in range(n)]}),
        row_group_size=n // 4,
    )
    s = _check(path, [5, 70_000], page_fraction=0.0)
    assert s.columns_whole == 2 and s.rows_decoded == 2 * (n // 4), s  # the two row groups holding them
    s = _check(path, [5, 70_000])
    assert s.columns_whole == 0 and s.rows_decoded == 2, s


def test_dictionary_columns_and_file_shape(tmp_path):
    t = pa.table({"a": np.arange(5000), "s": [f"v{i % 7}" for i in range(5000)]})
    path = _write(str(tmp_path / "f.parquet"), t, data_page_size=512, write_page_index=True)
    assert pr.file_shape(path) == (["a", "s"], 5000)
    for frac in (None, 0.0, 1.0):
        got = pr.read_rows(path, [3, 4000], dictionary_columns=["s"], page_fraction=frac)
        assert got.schema.field("s").type == pa.dictionary(pa.int32(), pa.string())
        assert got.column("s").to_pylist() == ["v3", "v3"] and got.column("a").to_pylist() == [3, 4000]


def test_columns_sharing_row_ranges_under_other_page_numbers(tmp_path):
    """Two columns whose selected pages cover the same rows but are other pages of their chunks
    (leading nulls make one column's first page longer) are decoded from one small file: each
    column's own pages must be copied (a wrong page here gives wrong rows with valid row counts)."""
    n = 600
    t = pa.table(
        {
            "a": pa.array(np.arange(n, dtype=np.float64)),
            "b": pa.array([None] * 296 + [float(i) for i in range(296, n)], pa.float64()),
        }
    )
    path = _write(str(tmp_path / "f.parquet"), t, data_page_size=64, write_batch_size=1, use_dictionary=False)
    pos = np.array([400, 401, 500], dtype=np.int64)
    src = FileSource(path)
    fo = _read_footer(src)
    pa_, pb = (chunk_pages(src, fo, 0, i) for i in (0, 1))
    ia = np.searchsorted(pa_.first_row, pos, "right") - 1
    ib = np.searchsorted(pb.first_row, pos, "right") - 1
    assert (
        not np.array_equal(ia, ib)
        and np.array_equal(pa_.first_row[ia], pb.first_row[ib])
        and np.array_equal(pa_.rows[ia], pb.rows[ib])
    )  # the layout this test is about
    s = _check(path, pos)
    assert s.columns_by_page == 2


def test_old_import_paths_are_the_same_modules():
    """Modules that moved keep their old import paths until compat.REMOVED_IN, as the very same
    module objects, with a DeprecationWarning naming the new path: setting an attribute through
    the old name sets it where the code reads it."""
    import importlib
    import sys

    from paimon_fast import compat
    from paimon_fast.io import parquet

    sys.modules.pop("paimon_fast.parquet", None)  # the parent of an old dotted name warns first, here
    with pytest.warns(DeprecationWarning, match=f"paimon_fast.io.parquet;.*{compat.REMOVED_IN}"):
        assert importlib.import_module("paimon_fast.parquet") is parquet
    for old, new in (
        ("parquet_rows", "rows"),
        ("parquet_footer", "footer"),
        ("thrift_compact", "thrift"),
        ("parquet.native", "native"),
    ):
        sys.modules.pop(f"paimon_fast.{old}", None)
        with pytest.warns(DeprecationWarning, match=f"paimon_fast.io.parquet.{new}.*{compat.REMOVED_IN}"):
            assert importlib.import_module(f"paimon_fast.{old}") is getattr(parquet, new)
    for old, new in compat.MOVED.items():
        if isinstance(new, tuple):
            continue
        sys.modules.pop(old, None)
        with pytest.warns(DeprecationWarning, match=new):
            assert importlib.import_module(old) is importlib.import_module(new)
        assert sys.modules[old].__spec__.name == new  # still its own spec after the alias
    # an old path that handed on two modules' names: a module of their public names
    sys.modules.pop("paimon_fast.globalindex.spark_build", None)
    with pytest.warns(DeprecationWarning, match="tables.globalindex and paimon_fast.tables.globalindex_spark"):
        sb = importlib.import_module("paimon_fast.globalindex.spark_build")
    from paimon_fast.tables import globalindex as tgi
    from paimon_fast.tables import globalindex_spark as tgs

    assert sb.load_global_index is tgi.load_global_index and sb.build_global_index is tgs.build_global_index
    assert not hasattr(sb, "_drop_runs") and sb.__name__ == "paimon_fast.globalindex.spark_build"
    import paimon_fast as pf

    sys.modules.pop("paimon_fast.fs", None)
    pf.__dict__.pop("fs", None)
    with pytest.warns(DeprecationWarning, match="paimon_fast.io.fs"):
        assert pf.fs is importlib.import_module("paimon_fast.io.fs")  # old attribute names too
    parquet_rows = sys.modules["paimon_fast.parquet_rows"]

    before = pr.PAGE_DECODER
    try:
        parquet_rows.PAGE_DECODER = None
        assert pr.PAGE_DECODER is None
    finally:
        parquet_rows.PAGE_DECODER = before
    assert parquet.read_rows is pr.read_rows
