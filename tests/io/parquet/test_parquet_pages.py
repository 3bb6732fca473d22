"""read_rows through the native reader (csrc/pq_read.h, parquet/native.py): rows equal to
pyarrow's full read for random tables of every type, every codec, data page V1 and V2,
dictionary on and off, with and without the page index, large pages read as far as needed;
what pyarrow reads instead (nested columns, dictionary-typed reads) counted in the stats."""

import io
import os
import tarfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_fast.io.parquet import rows as pr
from paimon_fast.errors import InvalidArgumentError
from tests.support.paths import DATA

DECODERS = ("kernel",)  # TODO twin

# the types the decoder reads, and some it hands to pyarrow
DECODED = [
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "f32",
    "f64",
    "bool",
    "date",
    "t32",
    "t64",
    "ts_s",
    "ts_ms",
    "ts_us",
    "ts_ns",
    "str",
    "bin",
    "lstr",
    "dec",
    "fsb",
    "dur",
]
FALLBACK = ["list"]  # nested: pyarrow reads it


def _table(rng, n, null_frac):
    def mask():
        return rng.random(n) < null_frac if null_frac else None

    ints = rng.integers(-(1 << 62), 1 << 62, n)
    small = rng.integers(0, 40, n)  # few distinct values: dictionary pages
    words = np.array([f"w{v}" * int(1 + v % 4) for v in range(60)])
    cols = {
        "i8": pa.array(small.astype(np.int8) - 20, mask=mask()),
        "i16": pa.array(rng.integers(-30000, 30000, n).astype(np.int16), mask=mask()),
        "i32": pa.array((ints >> 33).astype(np.int32), mask=mask()),
        "i64": pa.array(np.where(rng.random(n) < 0.5, ints, small), mask=mask()),
        "u8": pa.array(rng.integers(0, 255, n).astype(np.uint8), mask=mask()),
        "u16": pa.array(small.astype(np.uint16) * 1000, mask=mask()),
        "u32": pa.array(rng.integers(0, 1 << 32, n).astype(np.uint32), mask=mask()),
        "u64": pa.array(rng.integers(0, 1 << 63, n).astype(np.uint64) * 2, mask=mask()),
        "f32": pa.array(rng.standard_normal(n).astype(np.float32), mask=mask()),
        "f64": pa.array(np.where(rng.random(n) < 0.5, rng.random(n), small), mask=mask()),
        "bool": pa.array(rng.random(n) < 0.3, mask=mask()),
        "date": pa.array(small.astype(np.int32) + 18000, pa.date32(), mask=mask()),
        "t32": pa.array(rng.integers(0, 86400000, n).astype(np.int32), pa.time32("ms"), mask=mask()),
        "t64": pa.array(rng.integers(0, 86400 * 10**6, n), pa.time64("us"), mask=mask()),
        "ts_s": pa.array(rng.integers(0, 2 * 10**9, n), pa.timestamp("s"), mask=mask()),
        "ts_ms": pa.array(rng.integers(0, 2 * 10**12, n), pa.timestamp("ms", tz="Europe/Paris"), mask=mask()),
        "ts_us": pa.array(small * 10**6, pa.timestamp("us", tz="UTC"), mask=mask()),
        "ts_ns": pa.array(rng.integers(0, 2 * 10**18, n), pa.timestamp("ns"), mask=mask()),
        "str": pa.array(words[small].tolist(), mask=mask()),
        "bin": pa.array(
            [bytes(rng.integers(0, 256, int(k)).astype(np.uint8)) for k in rng.integers(0, 9, n)],
            pa.binary(),
            mask=mask(),
        ),
        "lstr": pa.array([f"é{v}" * int(v % 3) for v in rng.integers(0, 1000, n)], pa.large_string(), mask=mask()),
        "dec": pa.array([None if m else int(v) for v, m in zip(small, rng.random(n) < null_frac)], pa.decimal128(9, 2)),
        "list": pa.array([[int(v)] * int(v % 3) for v in small], pa.list_(pa.int32())),
        "fsb": pa.array([bytes([int(v)]) * 3 for v in small], pa.binary(3)),
        "dur": pa.array(small, pa.duration("ms")),
    }
    return pa.table(cols)


def _write(t, **kw):
    if kw.get("compression") == "brotli":  # (as test_native_reader's _write: the compressor's time)
        kw.setdefault("compression_level", 1)
    buf = io.BytesIO()
    pq.write_table(t, buf, **kw)
    return buf.getvalue()


def _positions(rng, n):
    k = int(rng.integers(2, 40))
    many = np.sort(rng.choice(n, k, replace=True))  # repeats included
    return [
        np.zeros(0, np.int64),
        np.array([int(rng.integers(0, n))]),
        many,
        np.array([0, n - 1]),
        np.arange(n // 3, n // 3 + 50),
    ]


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("codec", ["none", "snappy", "zstd", "gzip", "lz4", "brotli"])
def test_rows_equal_pyarrow_every_codec_and_page_version(version, codec):
    rng = np.random.default_rng(abs(hash((version, codec))) % (1 << 31))
    n = 1500
    t = _table(rng, n, 0.25)
    for dictionary, page_index in ((True, True), (False, False), (["str", "i64", "f64", "bool"], True)):
        raw = _write(
            t,
            compression=codec,
            data_page_version=version,
            use_dictionary=dictionary,
            write_page_index=page_index,
            data_page_size=int(rng.integers(300, 3000)),
            row_group_size=int(rng.integers(400, 1500)),
            write_batch_size=64,
        )
        full = pq.read_table(io.BytesIO(raw))
        for pos in _positions(rng, n):
            want = full.take(pa.array(pos, pa.int64()))
            for dec in DECODERS:
                st = pr.PageReadStats()
                got = pr.read_rows(raw, pos, page_decoder=dec, stats=st)
                assert got.equals(want), (dictionary, page_index, pos, dec)
                assert got.schema == want.schema and got.schema.metadata == want.schema.metadata
                if len(pos):
                    assert st.pages_direct == st.pages_read > 0, st
                    assert st.fallbacks == {"nested column": 1} and st.columns_whole == 1, st
            cols = ["str", "dec", "ts_ms"]
            got = pr.read_rows(raw, pos, cols)
            assert got.equals(pq.read_table(io.BytesIO(raw), columns=cols).take(pa.array(pos, pa.int64())))


@pytest.mark.parametrize("seed", range(12))
def test_random_tables_and_positions(seed):
    """Random null fractions (none to all), page and row group sizes, dictionary limits; the
    reader against pyarrow's full read and against pyarrow's row-group read."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 4000))
    t = _table(rng, n, float(rng.choice([0.0, 0.05, 0.5, 1.0])))
    t = t.select(list(rng.choice(DECODED, int(rng.integers(1, 8)), replace=False)) + ["list"])
    raw = _write(
        t,
        compression=str(rng.choice(["none", "snappy", "zstd", "lz4", "gzip"])),
        data_page_version=str(rng.choice(["1.0", "2.0"])),
        use_dictionary=bool(rng.random() < 0.7),
        write_page_index=bool(rng.random() < 0.5),
        data_page_size=int(rng.integers(64, 8192)),
        dictionary_pagesize_limit=int(rng.choice([128, 1 << 20])),
        row_group_size=int(rng.integers(50, 5000)),
        write_batch_size=int(rng.choice([16, 1024])),
    )
    full = pq.read_table(io.BytesIO(raw))
    for pos in _positions(rng, n) + [np.arange(n)]:
        want = full.take(pa.array(pos, pa.int64()))
        st = pr.PageReadStats()
        got = pr.read_rows(raw, pos, stats=st)
        assert got.equals(want), pos
        assert got.equals(pr.read_rows(raw, pos, page_decoder=None))
        if len(pos):
            # the nested column's row groups are pyarrow's: their rows count as decoded
            assert st.pages_direct > 0 and len(pos) <= st.rows_decoded <= max(len(pos), n), st
            assert set(st.fallbacks) == {"nested column"}, st


@pytest.mark.parametrize("codec", ["zstd", "gzip", "brotli", "snappy", "lz4"])
def test_large_pages_decompressed_as_far_as_needed(codec):
    """1 MB pages and dictionary pages of streaming codecs: rows near the start, the end and
    both, through prefixes that grow and prefixes too short for a first guess."""
    rng = np.random.default_rng(7)
    n = 200_000
    t = pa.table(
        {
            "i": pa.array(rng.integers(0, 1 << 40, n), mask=rng.random(n) < 0.1),
            "d": pa.array(rng.integers(0, 20_000, n).astype(np.float64)),
            "s": pa.array(np.char.add("value-", rng.integers(0, 30_000, n).astype(str))),
            "p": pa.array([f"{v}" * int(v % 7) for v in rng.integers(0, 10**6, n)]),
            "b": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.2),
        }
    )
    for version in ("1.0", "2.0"):
        raw = _write(t, compression=codec, data_page_version=version, use_dictionary=["i", "d", "s"], row_group_size=n)
        full = pq.read_table(io.BytesIO(raw))
        for pos in ([3], [n - 1], [2, n // 2, n - 2], sorted(rng.choice(n, 25))):
            st = pr.PageReadStats()
            got = pr.read_rows(raw, pos, stats=st)
            assert got.equals(full.take(pa.array(pos, pa.int64()))), (version, pos)
            assert st.pages_direct == st.pages_read and not st.fallbacks, st


def test_stats_and_dictionary_reads(tmp_path):
    rng = np.random.default_rng(3)
    n = 100_000
    t = pa.table({"s": pa.array(np.char.add("value-", rng.integers(0, 300, n).astype(str))), "x": rng.random(n)})
    path = str(tmp_path / "f.parquet")
    pq.write_table(t, path, data_page_size=8 << 10, use_dictionary=["s"])
    pos = np.array([5, 70_000, 99_999])
    st = pr.PageReadStats()
    got = pr.read_rows(path, pos, stats=st)
    assert got.equals(t.take(pos))
    # x: 8 KB pages of 1,000 doubles, one page a row; s: its dictionary indexes fill few pages
    assert st.pages_direct == st.pages_read and 3 < st.pages_read <= 6 and st.rows_decoded == 3, st
    assert st.pages_total > 100 and st.bytes_read < st.bytes_total / 10, st
    assert "by the page decoder" in str(st) and st.as_dict()["pages_direct"] == st.pages_read
    # pyarrow reads them when asked, and columns read as dictionaries
    st2 = pr.PageReadStats()
    assert pr.read_rows(path, pos, page_decoder=None, stats=st2).equals(got)
    assert st2.pages_direct == 0 and st2.columns_whole == 2, st2
    st3 = pr.PageReadStats()
    d = pr.read_rows(path, pos, dictionary_columns=["s"], stats=st3)
    assert pa.types.is_dictionary(d.column("s").type) and d.column("s").to_pylist() == got.column("s").to_pylist()
    assert st3.fallbacks == {"dictionary column": 1} and st3.pages_direct == 3, st3
    # rows in every page: still only the wanted values
    st4 = pr.PageReadStats()
    spread = np.arange(0, n, 7)
    assert pr.read_rows(path, spread, stats=st4).equals(t.take(spread))
    assert st4.columns_whole == 0 and st4.columns_by_page == 2 and st4.rows_decoded == len(spread), st4
    with pytest.raises(InvalidArgumentError):
        pr.read_rows(path, pos, page_decoder="fast")


def test_java_paimon_files():
    """Parquet files written by Java Paimon 0.9 (parquet-mr): page index, dictionary, nulls-free
    INT / STRING / BIGINT columns."""
    tb = os.path.join(DATA, "paimon_tables", "java09-append-tables.tar.gz")
    with tarfile.open(tb) as tf:
        files = [tf.extractfile(m).read() for m in tf.getmembers() if m.name.endswith(".parquet")]
    assert files
    rng = np.random.default_rng(9)
    for raw in files:
        full = pq.read_table(io.BytesIO(raw))
        for pos in _positions(rng, full.num_rows):
            for dec in DECODERS:
                st = pr.PageReadStats()
                got = pr.read_rows(raw, pos, page_decoder=dec, stats=st)
                assert got.equals(full.take(pa.array(pos, pa.int64())))
                assert st.pages_direct == st.pages_read, st
