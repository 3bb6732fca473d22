"""The page decoder of read_rows (paimon_fast.parquet.pages, kernels in _kernels/pagedecode.pyx):
rows equal to pyarrow's full read for random tables of every handled type, every codec, data
page V1 and V2, dictionary on and off, with and without the page index; kernel and twin agree
with an encoder written here; corrupt pages raise IndexFormatError from both."""

import io
import os
import tarfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_fast.parquet import pages as pp
from paimon_fast.parquet import rows as pr
from paimon_fast.errors import IndexFormatError, InvalidArgumentError
from paimon_fast.parquet.footer import _footer, _pages
from paimon_fast.source import as_source

KERNEL = pp.kernels()
TWIN = pp.kernels(twin=True)
IMPLS = [KERNEL, TWIN]
HERE = os.path.dirname(os.path.abspath(__file__))

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
]
FALLBACK = ["dec", "list", "fsb", "dur"]


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
def test_rows_equal_pyarrow_every_codec_and_page_version(version, codec, monkeypatch):
    monkeypatch.setattr(pp, "_STREAM_MIN", 0)  # small pages decompressed as far as the rows need too
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
            for dec in ("kernel", "twin"):
                st = pr.PageReadStats()
                got = pr.read_rows(raw, pos, page_fraction=1.0, page_decoder=dec, stats=st)
                assert got.equals(want), (dictionary, page_index, pos, dec)
                assert got.schema == want.schema and got.schema.metadata == want.schema.metadata
                if len(pos):
                    assert 0 < st.pages_direct < st.pages_read, st  # the fallback columns: pyarrow's
                    assert not any(k.startswith("page decoder") for k in st.fallbacks), st
            cols = ["str", "dec", "ts_ms"]
            got = pr.read_rows(raw, pos, cols, page_fraction=1.0)
            assert got.equals(pq.read_table(io.BytesIO(raw), columns=cols).take(pa.array(pos, pa.int64())))


@pytest.mark.parametrize("seed", range(12))
def test_random_tables_and_positions(seed, monkeypatch):
    """Random null fractions (none to all), page and row group sizes, dictionary limits; the
    decoder against pyarrow's full read and against the pages decoded by pyarrow."""
    if seed % 2:
        monkeypatch.setattr(pp, "_STREAM_MIN", 0)
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
        got = pr.read_rows(raw, pos, page_fraction=1.0, stats=st)
        assert got.equals(want), pos
        assert got.equals(pr.read_rows(raw, pos, page_fraction=1.0, page_decoder=None))
        if len(pos):
            assert (
                st.pages_direct > 0
                and st.rows_decoded <= max(len(pos), n)
                and not any(k.startswith("page decoder") for k in st.fallbacks)
            ), st


@pytest.mark.parametrize("codec", ["zstd", "gzip", "brotli", "snappy"])
def test_large_pages_decompressed_as_far_as_needed(codec, zstd_stream):
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
            got = pr.read_rows(raw, pos, page_fraction=1.0, stats=st)
            assert got.equals(full.take(pa.array(pos, pa.int64()))), (version, pos)
            assert st.pages_direct == st.pages_read, st


def test_stats_and_cost_rule_and_dictionary_reads(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    n = 100_000
    t = pa.table({"s": pa.array(np.char.add("value-", rng.integers(0, 300, n).astype(str))), "x": rng.random(n)})
    path = str(tmp_path / "f.parquet")
    pq.write_table(t, path, data_page_size=8 << 10, use_dictionary=["s"])
    pos = np.array([5, 70_000, 99_999])
    st = pr.PageReadStats()
    got = pr.read_rows(path, pos, stats=st)
    assert got.equals(t.take(pos))
    assert st.pages_direct == st.pages_read == 6 and st.rows_decoded == 3, st
    assert "by the page decoder" in str(st) and st.as_dict()["pages_direct"] == 6
    # pyarrow decodes them when asked, and for columns read as dictionaries
    st2 = pr.PageReadStats()
    assert pr.read_rows(path, pos, page_decoder=None, stats=st2).equals(got)
    assert st2.pages_direct == 0 and st2.pages_read == 6 and st2.rows_decoded > 3, st2
    st3 = pr.PageReadStats()
    d = pr.read_rows(path, pos, dictionary_columns=["s"], stats=st3)
    assert pa.types.is_dictionary(d.column("s").type) and d.column("s").to_pylist() == got.column("s").to_pylist()
    assert st3.pages_direct == 3, st3
    # rows in every page: the row-group read for x (8 KB pages of 1,000 doubles: the decoder's
    # work per page adds up), the decoder for s (its dictionary indexes fill pages of ~7,000 rows)
    st4 = pr.PageReadStats()
    spread = np.arange(0, n, 7)
    assert pr.read_rows(path, spread, stats=st4).equals(t.take(spread))
    assert st4.columns_whole == 1 and st4.fallbacks == {"cost rule": 1}, st4
    assert st4.columns_by_page == 1 and st4.pages_direct == st4.pages_read > 0, st4
    monkeypatch.setattr(pr, "DECODER_MIN_PAGE_ROWS", 1)  # every page "large": the decoder reads x too
    st5 = pr.PageReadStats()
    assert pr.read_rows(path, spread, stats=st5).equals(t.take(spread))
    assert st5.columns_whole == 0 and st5.columns_by_page == 2, st5
    with pytest.raises(InvalidArgumentError):
        pr.read_rows(path, pos, page_decoder="fast")


def test_java_paimon_files():
    """Parquet files written by Java Paimon 0.9 (parquet-mr): page index, dictionary, nulls-free
    INT / STRING / BIGINT columns."""
    tb = os.path.join(HERE, "data", "paimon_tables", "java09-append-tables.tar.gz")
    with tarfile.open(tb) as tf:
        files = [tf.extractfile(m).read() for m in tf.getmembers() if m.name.endswith(".parquet")]
    assert files
    rng = np.random.default_rng(9)
    for raw in files:
        full = pq.read_table(io.BytesIO(raw))
        for pos in _positions(rng, full.num_rows):
            for dec in ("kernel", "twin"):
                st = pr.PageReadStats()
                got = pr.read_rows(raw, pos, page_fraction=1.0, page_decoder=dec, stats=st)
                assert got.equals(full.take(pa.array(pos, pa.int64())))
                assert st.pages_direct == st.pages_read, st


# ---------------------------------------------------------------- kernels against an encoder written here
def _varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _hybrid(rng, values, bw):
    """An RLE / bit-packed hybrid encoding of ``values`` with runs of both kinds (the last
    bit-packed run padded with zeros)."""
    out = bytearray()
    i = 0
    n = len(values)
    while i < n:
        if rng.random() < 0.5:  # an RLE run of the value repeated as written
            j = i + 1
            while j < n and values[j] == values[i] and j - i < 300:
                j += 1
            out += _varint((j - i) << 1) + int(values[i]).to_bytes((bw + 7) // 8, "little")
            i = j
        else:
            groups = int(rng.integers(1, 5))
            chunk = list(values[i : i + 8 * groups]) + [0] * max(0, 8 * groups - (n - i))
            bits = 0
            for k, v in enumerate(chunk):
                bits |= int(v) << (k * bw)
            out += _varint((groups << 1) | 1) + bits.to_bytes(groups * bw, "little")
            i += 8 * groups
    return bytes(out)


@pytest.mark.parametrize("bw", [0, 1, 2, 3, 7, 8, 9, 13, 16, 20, 31, 32])
def test_hybrid_gather_kernel_and_twin(bw):
    rng = np.random.default_rng(bw)
    for _ in range(8):
        n = int(rng.integers(1, 600))
        vals = rng.integers(0, 1 << bw, n) if bw else np.zeros(n, np.int64)
        vals = np.where(rng.random(n) < 0.6, vals[0], vals)  # runs
        enc = b"\x07junk" + _hybrid(rng, vals, bw)
        wanted = np.sort(rng.choice(n, int(rng.integers(0, 30)), replace=True)).astype(np.int64)
        for impl in IMPLS:
            got = impl.hybrid_gather(enc, 5, len(enc), bw, n, wanted)
            assert got.dtype == np.uint32 and got.tolist() == vals[wanted].tolist()


def test_def_levels_kernel_and_twin():
    rng = np.random.default_rng(1)
    for _ in range(60):
        n = int(rng.integers(1, 3000))
        lv = (rng.random(n) < rng.random()).astype(np.int64)
        if rng.random() < 0.3:
            lv[:] = int(rng.random() < 0.5)
        enc = _hybrid(rng, lv, 1)
        wanted = np.sort(rng.choice(n, int(rng.integers(0, 40)), replace=True)).astype(np.int64)
        before = np.concatenate(([0], np.cumsum(lv)))
        for impl in IMPLS:
            valid, index = impl.def_levels(enc, 0, len(enc), n, wanted)
            assert valid.tolist() == lv[wanted].tolist()
            assert index.tolist() == before[wanted].tolist()


def test_ba_walk_and_gather_kernel_and_twin():
    rng = np.random.default_rng(2)
    for _ in range(30):
        n = int(rng.integers(1, 500))
        vals = [bytes(rng.integers(0, 256, int(k)).astype(np.uint8)) for k in rng.integers(0, 20, n)]
        enc = b"xy" + b"".join(len(v).to_bytes(4, "little") + v for v in vals)
        wanted = np.sort(rng.choice(n, int(rng.integers(0, 30)), replace=True)).astype(np.int64)
        idx = np.where(rng.random(len(wanted)) < 0.2, -1, np.arange(len(wanted))).astype(np.int64)
        for impl in IMPLS:
            starts, lens = impl.ba_walk(enc, 2, len(enc), n, wanted)
            offsets, data = impl.gather(enc, starts, lens, idx)
            expect = [vals[w] if i >= 0 else b"" for w, i in zip(wanted, idx)]
            assert data == b"".join(expect)
            assert np.diff(offsets).tolist() == [len(e) for e in expect]


# ---------------------------------------------------------------- corrupt input
def _both_raise(fn, *args):
    for impl in IMPLS:
        with pytest.raises(IndexFormatError):
            getattr(impl, fn)(*args)


def test_corrupt_encodings_raise_from_kernel_and_twin():
    w = np.array([5], np.int64)
    _both_raise("hybrid_gather", b"\x04\x01", 0, 2, 1, 100, w)  # a run of 2 values, then nothing
    _both_raise("hybrid_gather", b"\xff" * 11, 0, 11, 8, 100, w)  # a header varint that never ends
    _both_raise("hybrid_gather", b"\x03\x00", 0, 2, 8, 100, w)  # a bit-packed group of 8 bytes in 1
    _both_raise("hybrid_gather", b"\x10", 0, 1, 16, 100, w)  # an RLE value cut off
    _both_raise("hybrid_gather", b"\x10\x01", 0, 2, 33, 100, w)  # bit width past 32
    _both_raise("hybrid_gather", b"\x10\x01", 0, 3, 8, 100, w)  # range past the buffer
    _both_raise("hybrid_gather", b"\xff\xff\xff\xff\xff\xff\xff\xff\x7f\x00", 0, 10, 8, 100, w)  # run of 2^62
    _both_raise("hybrid_gather", b"\x10\x01", 0, 2, 8, 4, w)  # a wanted value past the page's values
    _both_raise("def_levels", b"\x10\x02", 0, 2, 100, w)  # a level of 2
    _both_raise("def_levels", b"\x04\x01", 0, 2, 100, w)  # levels end before row 5
    _both_raise("def_levels", b"\x05", 0, 1, 100, w)  # a bit-packed group without its byte
    _both_raise("ba_walk", b"\x02\x00\x00\x00ab\x05\x00\x00\x00abc", 0, 13, 3, np.array([1], np.int64))
    _both_raise("ba_walk", b"\x02\x00\x00\x00ab\x01\x00", 0, 8, 3, np.array([1], np.int64))
    _both_raise("ba_walk", b"\xff\xff\xff\xffab", 0, 6, 3, np.array([0], np.int64))
    _both_raise("ba_walk", b"\x01\x00\x00\x00a", 0, 5, 1, np.array([1], np.int64))
    s, ln = np.array([0, 2], np.int64), np.array([2, 2], np.int64)
    _both_raise("gather", b"abcd", s, ln, np.array([0, 2], np.int64))  # dictionary index out of range
    _both_raise("gather", b"abcd", s, ln, np.array([-2], np.int64))
    _both_raise("gather", b"abc", s, ln, np.array([1], np.int64))  # a slice past the buffer


def _chunk_pages(raw, col):
    """(plan, pages, codec, dictionary page bytes and offset) of column ``col``'s first chunk."""
    src = as_source(raw)
    fo = _footer(src, None)
    f = fo.by_name[col]
    plans, _ = pr._plans(fo, fo.origin_schema())
    pg = _pages(src, fo, 0, f.leaves.start)
    return plans[f.index], pg, pp._codec(pg.meta[4])


@pytest.mark.parametrize("codec", ["none", "zstd"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("col", ["s", "i"])
def test_truncated_and_mutated_pages(version, col, codec, monkeypatch):
    """Every truncation of a real page raises IndexFormatError; random byte flips give rows or
    IndexFormatError (never another error), the same from kernel and twin."""
    monkeypatch.setattr(pp, "_STREAM_MIN", 0)
    rng = np.random.default_rng(4)
    n = 400
    t = pa.table(
        {
            "s": pa.array([f"v{i % 13}" if i % 5 else None for i in range(n)]),
            "i": pa.array([i * 7 if i % 3 else None for i in range(n)], pa.int64()),
        }
    )
    for dictionary in (True, False):
        raw = _write(t, compression=codec, data_page_version=version, use_dictionary=dictionary, data_page_size=1 << 20)
        p, pg, cod = _chunk_pages(raw, col)
        off, size = int(pg.offset[0]), int(pg.size[0])
        page = raw[off : off + size]
        rows = np.array([1, 2, 250, int(pg.rows[0]) - 1], np.int64)
        dicts = {}

        def dictionary_of(kern):
            def get():
                if "d" not in dicts:
                    s, ln = pg.dict_range
                    dicts["d"] = pp.read_dictionary(raw[s : s + ln], s, p.physical, cod, 1 << 20, kern)
                return dicts["d"]

            return get

        good = pp.decode_page(page, off, rows, p, cod, 1 << 20, dictionary_of(KERNEL), KERNEL)
        assert good.equals(t.column(col).take(rows).combine_chunks())
        for cut in range(0, size):
            for kern in IMPLS:
                with pytest.raises(IndexFormatError):
                    pp.decode_page(page[:cut], off, rows, p, cod, 1 << 20, dictionary_of(kern), kern)
        for _ in range(150):
            bad = bytearray(page)
            for k in rng.integers(0, size, int(rng.integers(1, 4))):
                bad[k] = int(rng.integers(0, 256))
            out = []
            for kern in IMPLS:
                try:
                    out.append(pp.decode_page(bytes(bad), off, rows, p, cod, 1 << 20, dictionary_of(kern), kern))
                except IndexFormatError:
                    out.append("error")
                except pp.Unsupported:
                    out.append("unsupported")
            assert out[0] == out[1] if isinstance(out[0], str) else out[0].equals(out[1])


def test_dictionary_index_out_of_range():
    n = 300
    t = pa.table({"s": pa.array([f"v{i % 50}" for i in range(n)]), "i": pa.array([i % 50 for i in range(n)])})
    raw = _write(t, compression="none", data_page_version="2.0")
    for col in ("s", "i"):
        p, pg, codec = _chunk_pages(raw, col)
        s, ln = pg.dict_range
        full = pp.read_dictionary(raw[s : s + ln], s, p.physical, codec, 1 << 20, KERNEL)
        small = (
            pp.Dictionary(values=full.values[:10])
            if full.values is not None
            else pp.Dictionary(buf=full.buf, starts=full.starts[:10], lens=full.lens[:10])
        )
        off, size = int(pg.offset[0]), int(pg.size[0])
        for kern in IMPLS:
            with pytest.raises(IndexFormatError, match="dictionary index"):
                pp.decode_page(
                    raw[off : off + size], off, np.array([0, 299], np.int64), p, codec, 1 << 20, lambda: small, kern
                )
        # a dictionary page claiming more values than its bytes hold
        with pytest.raises(IndexFormatError):
            pp.plain_values(p.physical, np.zeros(16, np.uint8), 0, 16, 5, 0, KERNEL)


def test_snappy_prefix_kernel_and_twin():
    rng = np.random.default_rng(5)
    codec = pa.Codec("snappy")
    datas = [
        b"",
        b"a",
        b"abc" * 30000,
        bytes(rng.integers(0, 256, 70000).astype(np.uint8)),
        rng.integers(0, 50, 20000).astype(np.int64).tobytes(),
        b"".join(f"value-{v}".encode() for v in rng.integers(0, 300, 20000)),
    ]
    for raw in datas:
        z = codec.compress(raw, asbytes=True)
        for n in sorted({0, 1, 7, len(raw) // 3, len(raw) - 1, len(raw), len(raw) + 10} - {-1}):
            for impl in IMPLS:
                got, total = impl.snappy_prefix(np.frombuffer(z, np.uint8), n)
                assert total == len(raw) and got == raw[:n]
        if len(raw) > 100:  # truncated data, a copy reaching before the output's start
            for impl in IMPLS:
                with pytest.raises(IndexFormatError):
                    impl.snappy_prefix(np.frombuffer(z[: len(z) // 2], np.uint8), len(raw))
    for impl in IMPLS:
        with pytest.raises(IndexFormatError, match="copy"):
            impl.snappy_prefix(np.frombuffer(b"\x0a\x01\x05", np.uint8), 10)  # a copy from 5 bytes back at the start
        with pytest.raises(IndexFormatError):
            impl.snappy_prefix(np.frombuffer(b"\xff" * 11, np.uint8), 10)  # a length varint that never ends
        with pytest.raises(IndexFormatError):
            impl.snappy_prefix(np.frombuffer(b"\x0a\xf0", np.uint8), 10)  # a literal's length bytes cut off


def _dict_file(path, n=120_000, seed=11):
    """A file whose dictionary pages are large (1 MB, ZSTD, so decompressed as far as asked)."""
    rng = np.random.default_rng(seed)
    t = pa.table(
        {
            "i": pa.array(rng.permutation(n).astype(np.int64)),
            "s": pa.array(np.char.add("value-", rng.integers(0, 40_000, n).astype(str))),
            "x": pa.array(rng.random(n)),
        }
    )
    pq.write_table(t, path, compression="zstd", row_group_size=n)
    return pq.read_table(path)


def _cached_keys(path):
    with pp._DICTS_LOCK:
        return [k for k in pp._DICTS if k[0] == str(path)]


def test_dictionary_cache_across_reads(tmp_path):
    """Dictionaries of a local file are kept across read_rows calls (per decoder); a later read
    extends a partly decompressed one; the answers stay pyarrow's."""
    path = tmp_path / "d.parquet"
    full = _dict_file(path)
    n = full.num_rows
    pr.clear_cache()
    assert not _cached_keys(path)
    first = [5, 17]  # dictionary indexes near the start (i: a permutation, so any index may come)
    assert pr.read_rows(str(path), first, page_fraction=1.0).equals(full.take(pa.array(first)))
    keys = _cached_keys(path)
    assert keys and all(k[3] == "kernel" for k in keys)
    held = {k: pp._DICTS[k] for k in keys}
    rng = np.random.default_rng(2)
    for _ in range(4):
        pos = np.sort(rng.choice(n, 30, replace=False))
        assert pr.read_rows(str(path), pos, page_fraction=1.0).equals(full.take(pa.array(pos)))
        assert all(pp._DICTS.get(k) is d for k, d in held.items())  # the same objects, reused
    assert pr.read_rows(str(path), pos, page_fraction=1.0, page_decoder="twin").equals(full.take(pa.array(pos)))
    assert {k[3] for k in _cached_keys(path)} == {"kernel", "twin"}  # the twin decodes its own
    # a file rewritten with other content: another size / mtime, so another key
    full2 = _dict_file(path, n=90_000, seed=12)
    assert pr.read_rows(str(path), pos[:10], page_fraction=1.0).equals(full2.take(pa.array(pos[:10])))
    pr.clear_cache()
    assert not _cached_keys(path)


def test_dictionary_cache_budget_and_threads(tmp_path, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "d.parquet"
    full = _dict_file(path)
    n = full.num_rows
    pr.clear_cache()
    monkeypatch.setattr(pp, "DICTIONARY_CACHE_BYTES", 0)
    pr.read_rows(str(path), [n - 1], page_fraction=1.0)
    assert not _cached_keys(path)
    monkeypatch.setattr(pp, "DICTIONARY_CACHE_BYTES", 64 << 20)
    pr.read_rows(str(path), [n - 1], page_fraction=1.0)
    sizes = sorted(pp._DICTS[k].nbytes for k in _cached_keys(path))
    assert len(sizes) == 3 and pp._DICTS_HELD[0] == sum(sizes)
    pr.clear_cache()
    budget = sizes[-1] + sizes[0]  # room for two of the three: the oldest goes
    monkeypatch.setattr(pp, "DICTIONARY_CACHE_BYTES", budget)
    pr.read_rows(str(path), [n - 1], page_fraction=1.0)
    assert 0 < pp._DICTS_HELD[0] <= budget and len(_cached_keys(path)) < 3
    monkeypatch.setattr(pp, "DICTIONARY_CACHE_BYTES", 64 << 20)
    pr.clear_cache()
    # threads reading the same file share (and grow) the same dictionaries
    rng = np.random.default_rng(5)
    jobs = [np.sort(rng.choice(n, int(rng.integers(1, 40)), replace=False)) for _ in range(24)]
    with ThreadPoolExecutor(4) as ex:
        outs = list(ex.map(lambda p: pr.read_rows(str(path), p, page_fraction=1.0), jobs))
    for p, got in zip(jobs, outs):
        assert got.equals(full.take(pa.array(p)))
    pr.clear_cache()


def test_dictionary_cache_forgets_a_dictionary_that_failed():
    """A dictionary page that decompresses at first and fails further on raises, and is not
    served from the cache again."""
    vals = np.arange(300_000, dtype=np.int64)
    comp = bytearray(pa.Codec("zstd").compress(vals.tobytes(), asbytes=True))
    comp[len(comp) // 2 :] = bytes(len(comp) - len(comp) // 2)  # the second half destroyed
    body = pp._Body(
        pa.Codec("zstd"), np.frombuffer(bytes(comp), np.uint8), vals.nbytes, 1 << 30, 100, "dictionary page"
    )
    d = pp.Dictionary(body=body, size=len(vals), dtype=np.dtype("<i8"))
    key = ("/no/such/file", 1, 2, "kernel")
    pp.ChunkDictionaries(key)[(0, 1)] = d
    assert pp.ChunkDictionaries(key).get((0, 1)) is d
    assert d.take(np.array([3, 10])).tolist() == [3, 10]
    with pytest.raises(IndexFormatError):
        d.take(np.array([len(vals) - 1]))
    assert pp.ChunkDictionaries(key).get((0, 1)) is None
    with pp._DICTS_LOCK:
        assert key + (0, 1) not in pp._DICTS
    pr.clear_cache()


@pytest.fixture(params=["zstandard", "pyarrow"])
def zstd_stream(request, monkeypatch):
    """ZSTD pages streamed through the zstandard package (the codecs extra) or, without it,
    through pyarrow's stream."""
    if request.param == "pyarrow":
        monkeypatch.setattr(pp, "_ZSTD", None)
    elif pp._ZSTD is None:
        pytest.skip("the zstandard package (the codecs extra) is not installed")
    return request.param


@pytest.mark.parametrize("codec", ["zstd", "brotli", "gzip"])
def test_page_body_streams_a_short_prefix_and_decompresses_a_long_one_whole(codec, zstd_stream):
    """A first request for under _WHOLE_FRACTION of a page streams that prefix; a larger one
    decompresses the page in one call; both give the page's bytes.  GZIP pages are always
    decompressed whole, so their CRC-32 is checked: a corrupt one raises however little of it is
    wanted (a streamed prefix would have returned wrong bytes)."""
    raw = np.random.default_rng(1).integers(0, 50, 1 << 20).astype(np.uint8).tobytes()
    c = pa.Codec(codec)
    comp = np.frombuffer(c.compress(raw, asbytes=True), np.uint8)
    short = int(len(raw) * pp._WHOLE_FRACTION) - 4096
    body = pp._Body(c, comp, len(raw), 1 << 30, 0, "data page")
    assert body.upto(short).tobytes()[:short] == raw[:short]
    assert body.complete == (codec == "gzip")
    assert body.all().tobytes() == raw and body.complete
    body = pp._Body(c, comp, len(raw), 1 << 30, 0, "data page")
    got = body.upto(int(len(raw) * pp._WHOLE_FRACTION) + 1)
    assert body.complete and got.tobytes() == raw
    rng = np.random.default_rng(3)
    for _ in range(20):
        bad = comp.copy()
        bad[int(rng.integers(0, len(bad) // 4))] ^= np.uint8(1 << int(rng.integers(0, 8)))
        if codec == "gzip":  # always caught, by the CRC
            with pytest.raises(IndexFormatError):
                pp._Body(c, bad, len(raw), 1 << 30, 0, "data page").upto(short)
        try:  # the others: a prefix is what the whole page's decompression gives, or an error
            whole = pp._Body(c, bad, len(raw), 1 << 30, 0, "data page").all().tobytes()
        except IndexFormatError:
            whole = None
        try:
            part = pp._Body(c, bad, len(raw), 1 << 30, 0, "data page").upto(short).tobytes()[:short]
        except IndexFormatError:
            continue
        assert whole is None or part == whole[:short]


def test_zstd_streams_keep_their_decompressors_for_the_next_page(monkeypatch):
    """With the zstandard package a ZSTD page streams only as far as asked; a decompressor
    goes back for the next page only once its page is whole (never one a stream still uses, nor
    one whose stream failed), and every prefix is the page's."""
    if pp._ZSTD is None:
        pytest.skip("the zstandard package (the codecs extra) is not installed")
    monkeypatch.setattr(pp, "_ZSTD_FREE", [])
    raw = np.arange(1 << 17, dtype=np.int64).tobytes()  # 1 MB that compresses well
    c = pa.Codec("zstd")
    comp = np.frombuffer(c.compress(raw, asbytes=True), np.uint8)
    a = pp._Body(c, comp, len(raw), 1 << 30, 0, "data page")
    b = pp._Body(c, comp, len(raw), 1 << 30, 0, "data page")  # two streams at once: two decompressors
    assert a.zd is not None and b.zd is not None and a.zd is not b.zd
    assert a.upto(1000).tobytes()[:1000] == raw[:1000] and len(a.buf) < len(raw) // 4
    assert b.upto(5000).tobytes()[:5000] == raw[:5000]
    assert a.upto(300_000).tobytes()[:300_000] == raw[:300_000]
    assert pp._ZSTD_FREE == []
    zd = a.zd
    assert a.all().tobytes() == raw and a.complete and a.zd is None and pp._ZSTD_FREE == [zd]
    c2 = pp._Body(c, comp, len(raw), 1 << 30, 0, "data page")  # reuses it
    assert c2.zd is zd and pp._ZSTD_FREE == []
    assert c2.all().tobytes() == raw and pp._ZSTD_FREE == [zd]
    bad = comp.copy()
    bad[len(bad) // 2 :] ^= np.uint8(0x5A)
    d = pp._Body(c, bad, len(raw), 1 << 30, 0, "data page")
    assert d.zd is zd
    with pytest.raises(IndexFormatError):
        d.all()
    assert pp._ZSTD_FREE == []  # the failed stream's decompressor is dropped, not reused


def test_a_page_zstandard_refuses_is_decided_by_pyarrows_whole_decompression(monkeypatch):
    """A zstandard stream that raises (a frame past its window limit, say) does not make a page
    pyarrow decompresses an error: the whole page comes from pyarrow, and a corrupt one still
    raises IndexFormatError."""
    if pp._ZSTD is None:
        pytest.skip("the zstandard package (the codecs extra) is not installed")

    class Refusing:
        def readinto(self, b):
            raise pp._ZSTD.ZstdError("frame requires too much memory for decoding")

    monkeypatch.setattr(pp, "_zstd_stream", lambda comp: (pp._ZSTD.ZstdDecompressor(), Refusing()))
    raw = np.arange(1 << 17, dtype=np.int64).tobytes()
    c = pa.Codec("zstd")
    comp = np.frombuffer(c.compress(raw, asbytes=True), np.uint8)
    body = pp._Body(c, comp, len(raw), 1 << 30, 0, "data page")
    assert body.upto(100).tobytes() == raw and body.complete
    bad = comp.copy()
    bad[len(bad) // 2 :] ^= np.uint8(0x5A)
    with pytest.raises(IndexFormatError):
        pp._Body(c, bad, len(raw), 1 << 30, 0, "data page").upto(100)
