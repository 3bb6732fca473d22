"""serde, types, predicates and results."""

import datetime
import decimal
import io

import numpy as np
import pyarrow as pa
import pytest

import paimon_fast as pf
from paimon_fast.io import serde
from paimon_fast.errors import IndexFormatError, OptionError, UnsupportedTypeError
from paimon_fast.fileindex.options import Options, indexes_from_table_options, parse_memory_size
from paimon_fast.core.predicate import Leaf
from paimon_fast.core.result import REMAIN, SKIP, BitmapResult
from paimon_fast.io.source import as_source
from paimon_fast.core.types import DataType, binary_buffers, long_keys, to_arrow_array, validity_mask
from pyroaring import BitMap


# ---------------------------------------------------------------- serde
@pytest.mark.parametrize(
    "s,hexbytes",
    [
        ("abc", "616263"),
        ("\x00", "c080"),
        ("\u00e9", "c3a9"),
        ("\u6587", "e69687"),
        ("\U0001f600", "eda0bdedb880"),  # surrogate pair, 3 bytes each
    ],
)
def test_modified_utf8_known_bytes(s, hexbytes):
    assert serde.encode_modified_utf8(s).hex() == hexbytes
    assert serde.decode_modified_utf8(bytes.fromhex(hexbytes)) == s
    w = serde.write_utf(s)
    assert w[:2] == len(bytes.fromhex(hexbytes)).to_bytes(2, "big")
    assert serde.BoundedReader(w).utf() == s


def test_modified_utf8_rejects_bad_bytes():
    for bad in (b"\x00", b"\xc3", b"\xe6\x96", b"\xf0\x9f\x98\x80", b"\x80"):
        with pytest.raises(IndexFormatError):
            serde.decode_modified_utf8(bad)


def test_varint():
    for v in (0, 1, 127, 128, 300, 2**31 - 1, 2**63 - 1):
        b = serde.encode_varint(v)
        assert len(b) == serde.varint_size(v)
        assert serde.BoundedReader(b).varint() == v
    with pytest.raises(ValueError):
        serde.encode_varint(-1)
    with pytest.raises(IndexFormatError):
        serde.BoundedReader(b"\x80\x80").varint()
    with pytest.raises(IndexFormatError):
        serde.BoundedReader(b"\xff" * 11 + b"\x01").varint()


def test_bounded_reader_checks_every_read():
    r = serde.BoundedReader(b"\x00\x00\x00\x05abc", base=100)
    with pytest.raises(IndexFormatError) as e:
        r.length("payload length")
    assert e.value.offset == 100
    r = serde.BoundedReader(b"\x00\x01")
    with pytest.raises(IndexFormatError, match="truncated"):
        r.i32()
    r = serde.BoundedReader(b"\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02")
    assert (r.i32(), r.i64()) == (1, 2)


def test_sources(tmp_path):
    data = bytes(range(50))
    p = tmp_path / "f.bin"
    p.write_bytes(data)
    for src in (as_source(data), as_source(str(p)), as_source(io.BytesIO(data))):
        assert src.size == 50
        assert bytes(src.read_at(10, 5)) == data[10:15]
        sl = src.slice(20, 10)
        assert bytes(sl.read_at(2, 3)) == data[22:25]
        with pytest.raises(IndexFormatError):
            sl.read_at(8, 3)
        with pytest.raises(IndexFormatError):
            src.read_at(-1, 2)
    with pytest.raises(TypeError):
        as_source(3.5)


# ---------------------------------------------------------------- types
@pytest.mark.parametrize(
    "text,arrow",
    [
        ("TINYINT", pa.int8()),
        ("SMALLINT", pa.int16()),
        ("INT", pa.int32()),
        ("INTEGER", pa.int32()),
        ("BIGINT", pa.int64()),
        ("FLOAT", pa.float32()),
        ("DOUBLE", pa.float64()),
        ("BOOLEAN", pa.bool_()),
        ("DATE", pa.date32()),
        ("TIME", pa.time32("ms")),
        ("TIME(6)", pa.time64("us")),
        ("TIMESTAMP(3)", pa.timestamp("ms")),
        ("TIMESTAMP", pa.timestamp("us")),
        ("TIMESTAMP(9)", pa.timestamp("ns")),
        ("TIMESTAMP(6) WITH LOCAL TIME ZONE", pa.timestamp("us", tz="UTC")),
        ("CHAR(4)", pa.string()),
        ("VARCHAR(10)", pa.string()),
        ("STRING", pa.string()),
        ("BINARY(6)", pa.binary()),
        ("VARBINARY(3)", pa.binary()),
        ("BYTES", pa.binary()),
        ("DECIMAL(10, 2)", pa.decimal128(10, 2)),
        ("INT NOT NULL", pa.int32()),
    ],
)
def test_type_parse_and_arrow(text, arrow):
    t = DataType.parse(text)
    assert t.to_arrow() == arrow
    assert DataType.parse(str(t)) == t
    assert t.nullable == ("NOT NULL" not in text)


def test_type_from_arrow_roundtrip():
    for text in (
        "INT",
        "BIGINT",
        "DOUBLE",
        "STRING",
        "DATE",
        "TIMESTAMP(3)",
        "TIMESTAMP(6) WITH LOCAL TIME ZONE",
        "DECIMAL(18, 4)",
        "BOOLEAN",
        "BYTES",
    ):
        t = DataType.parse(text)
        assert DataType.from_arrow(t.to_arrow()) == t
    assert DataType.from_arrow(pa.large_string()).root == "STRING"


@pytest.mark.parametrize("bad", ["FOO", "DECIMAL(50, 2)", "INT(3)", "TIMESTAMP(12)", "CHAR(0)"])
def test_type_parse_errors(bad):
    with pytest.raises(UnsupportedTypeError):
        DataType.parse(bad)


def test_column_conversions():
    t = DataType.parse("STRING")
    for arr in (
        pa.array(["a", None, "bcd"]),
        pa.array(["a", None, "bcd"], type=pa.large_string()),
        pa.chunked_array([["a"], [None, "bcd"]]),
        ["a", None, "bcd"],
        np.array(["a", None, "bcd"], dtype=object),
    ):
        a = to_arrow_array(arr, t)
        off, data = binary_buffers(a)
        assert [bytes(data[off[i] : off[i + 1]]) for i in (0, 2)] == [b"a", b"bcd"]
        assert validity_mask(a).tolist() == [True, False, True]
    sliced = pa.array(["x", "yy", "zzz"]).slice(1)
    off, data = binary_buffers(to_arrow_array(sliced, t))
    assert bytes(data[off[0] : off[1]]) == b"yy" and len(off) == 3


def test_long_keys_timestamps_and_times():
    ts = pa.array([datetime.datetime(1969, 12, 31, 23, 59, 59, 999_999)], type=pa.timestamp("us"))
    assert long_keys(to_arrow_array(ts, "TIMESTAMP(3)"), DataType.parse("TIMESTAMP(3)")).tolist() == [-1]
    assert long_keys(to_arrow_array(ts, "TIMESTAMP(6)"), DataType.parse("TIMESTAMP(6)")).tolist() == [-1]
    ns = pa.array([-1], type=pa.timestamp("ns"))  # floor to micros, like Paimon's Timestamp
    assert long_keys(to_arrow_array(ns, "TIMESTAMP(9)"), DataType.parse("TIMESTAMP(9)")).tolist() == [-1]
    tm = pa.array([1500], type=pa.time64("us"))
    assert long_keys(to_arrow_array(tm, "TIME(6)"), DataType.parse("TIME(6)")).tolist() == [1]
    d = to_arrow_array(["1.50", None], "DECIMAL(10, 2)")
    assert d.to_pylist() == [decimal.Decimal("1.50"), None]


def test_options():
    assert parse_memory_size("16kb") == 16384 and parse_memory_size("64 b") == 64 and parse_memory_size("1mb") == 2**20
    with pytest.raises(OptionError):
        parse_memory_size("lots")
    o = Options({"items": "10", "fpp": 0.5})
    assert o.get_int("items", 1) == 10 and o.get_float("fpp", 0.1) == 0.5 and o.get_int("x", 3) == 3
    with pytest.raises(OptionError):
        Options({"items": "ten"}).get_int("items", 1)
    m = indexes_from_table_options(
        {
            "file-index.bloom-filter.columns": "a, b",
            "file-index.bloom-filter.a.fpp": "0.01",
            "file-index.bloom-filter.items": "500",
            "file-index.bitmap.columns": "c",
            "bucket": "-1",
        }
    )
    assert m == {
        "a": {"bloom-filter": {"fpp": "0.01", "items": "500"}},
        "b": {"bloom-filter": {"items": "500"}},
        "c": {"bitmap": {}},
    }


# ---------------------------------------------------------------- predicates and results
def test_predicate_builders_and_negation():
    f = pf.field("a")
    assert (f == 3) == Leaf("equal", "a", (3,))
    assert (f == None) == Leaf("equal", "a", (None,))  # noqa: E711  (SQL: no rows; f.is_null() asks for nulls)
    assert (~(f < 3)) == Leaf("greater_or_equal", "a", (3,))
    p = (f == 1) & ((f > 2) | f.isin([4, 5]))
    assert p.fields() == {"a"}
    neg = ~p
    assert isinstance(neg, pf.Or) and neg.children[0] == Leaf("not_equal", "a", (1,))
    assert ~~p == p
    with pytest.raises(TypeError):
        ~f.startswith("x")
    with pytest.raises(TypeError):
        bool(f == 1)
    with pytest.raises(TypeError):
        f.like(3)
    assert repr(f.between(1, 2)) == "a BETWEEN 1 AND 2"


def test_result_combination_rules():
    b = BitmapResult(BitMap([1, 2, 3]))
    e = BitmapResult(BitMap())
    assert (REMAIN & SKIP) is SKIP and (REMAIN | SKIP) is REMAIN
    assert (SKIP & b) is SKIP and (SKIP | b) is b
    assert (b & REMAIN) is b and (b & SKIP) is SKIP
    assert (b | REMAIN) is REMAIN and (b | SKIP) is b
    assert (b & BitmapResult(BitMap([2, 9]))).bitmap == BitMap([2])
    assert (b | BitmapResult(BitMap([9]))).bitmap == BitMap([1, 2, 3, 9])
    assert not e.remain and b.remain
    assert (e & REMAIN) is e and (REMAIN & e) is e
    lazy = BitmapResult(thunk=lambda: BitMap([4]))
    assert lazy.remain and list(lazy.bitmap) == [4]
