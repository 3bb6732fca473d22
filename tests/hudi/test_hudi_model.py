"""RFC-92 record model: keys, canonical value strings, bitmap encoding (no tables needed)."""

import base64
import datetime as dt
import decimal
import importlib.util
import random
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st
from pyroaring import BitMap

from paimon_fast.core import roaring
from paimon_fast.errors import IndexFormatError, UnsupportedTypeError
from paimon_fast.hudi import model
from paimon_fast.hudi.build import _parse_type


def test_key_layout_matches_rfc_examples():
    assert (
        model.bitmap_key("store_type", "grocery", "20250401", "2aa10971-11b2-41b3-9baf-ab33c0000144-0")
        == "store_type$grocery$20250401$2aa10971-11b2-41b3-9baf-ab33c0000144-0"
    )
    assert (
        model.bitmap_key("store_type", "grocery", "", "2aa10971-11b2-41b3-9baf-ab33c0000144-0")
        == "store_type$grocery$.$2aa10971-11b2-41b3-9baf-ab33c0000144-0"
    )
    assert model.key_prefix("store_type", "grocery") == "store_type$grocery$"


@given(st.text(), st.text(), st.text(), st.text(alphabet="abcdef0123456789-", min_size=1))
def test_key_escaping_roundtrips(col, val, part, fid):
    k = model.bitmap_key(col, val, part, fid)
    assert k.count("$") == 3
    part = "" if part == "." else part  # the table's root: unpartitioned
    assert model.parse_key(k) == (col, val, part, fid)
    assert k.startswith(model.key_prefix(col, val))
    # a value's prefix never matches another value's key
    if val != val + "x":
        assert not model.bitmap_key(col, val + "x", part, fid).startswith(model.key_prefix(col, val))
    nk = model.bitmap_key(col, None, part, fid)
    assert model.parse_key(nk) == (col, None, part, fid) and model.NULL_TOKEN in nk
    if part == "":
        assert k.split("$")[2] == "."


def test_parse_key_rejects_malformed():
    with pytest.raises(IndexFormatError):
        model.parse_key("a$b$c")


UTC = dt.timezone.utc
CASES = [
    (pa.array(["a", "b$c", "", None]), ["a", "b$c", "", None]),
    (pa.array([-12, 0, 7, None], pa.int32()), ["-12", "0", "7", None]),
    (pa.array([2**63 - 1, -(2**63)], pa.int64()), ["9223372036854775807", "-9223372036854775808"]),
    (pa.array([True, False, None]), ["true", "false", None]),
    (pa.array([dt.date(2024, 1, 5), dt.date(1, 1, 1)]), ["2024-01-05", "0001-01-01"]),
    (pa.array([dt.datetime(2024, 1, 2, 3, 4, 5, 6)], pa.timestamp("us", tz="UTC")), ["2024-01-02T03:04:05.000006Z"]),
    (pa.array([dt.datetime(1969, 12, 31, 23, 59, 59)], pa.timestamp("ms")), ["1969-12-31T23:59:59.000000"]),
    (pa.array([1_000_000_001], pa.timestamp("ns")), ["1970-01-01T00:00:01.000000001"]),
    (
        pa.array([decimal.Decimal("12.5"), decimal.Decimal("-0.05"), decimal.Decimal("0")], pa.decimal128(10, 2)),
        ["12.50", "-0.05", "0.00"],
    ),
    (pa.array([decimal.Decimal("7")], pa.decimal128(5, 0)), ["7"]),
]


@pytest.mark.parametrize("arr,want", CASES, ids=[str(c[0].type) for c in CASES])
def test_canonical_strings(arr, want):
    assert model.canonical_strings(arr) == want
    if arr.type == pa.timestamp("ns") and importlib.util.find_spec("pandas") is None:
        values = []  # a nanosecond literal is a pandas Timestamp; pyarrow cannot make one without pandas
    else:
        values = arr.to_pylist()
    for v, w in zip(values, want):
        if v is not None:
            assert model.canonical_literal(v, arr.type) == w  # a literal maps to the stored string
    assert _parse_type(str(arr.type)) == arr.type


def test_canonical_literals_coerce_or_refuse():
    d = pa.decimal128(10, 2)
    assert model.canonical_literal(decimal.Decimal("1.5"), d) == "1.50"
    assert model.canonical_literal("1.50", d) == "1.50"
    assert model.canonical_literal(2, d) == "2.00"
    assert model.canonical_literal(decimal.Decimal("1.234"), d) is None  # no stored value can equal it
    assert model.canonical_literal(3.0, pa.int32()) == "3"
    assert model.canonical_literal(3.5, pa.int32()) is None
    assert model.canonical_literal("2024-01-05", pa.date32()) == "2024-01-05"
    ts = pa.timestamp("us", tz="UTC")
    assert model.canonical_literal(dt.datetime(2024, 1, 2, tzinfo=UTC), ts) == "2024-01-02T00:00:00.000000Z"
    assert model.canonical_literal("2024-01-02T01:00:00+01:00", ts) == "2024-01-02T00:00:00.000000Z"
    assert model.canonical_literal(dt.datetime(2024, 1, 2), ts) == "2024-01-02T00:00:00.000000Z"
    assert model.canonical_literal(None, pa.string()) is None
    for v, t in [(3, pa.string()), ("x", pa.int32()), (True, pa.int64()), ("x", pa.bool_())]:
        with pytest.raises(TypeError):
            model.canonical_literal(v, t)
    # the rules every back end shares (core.bind): 0 / 1 on a BOOLEAN column are false / true, and
    # a dictionary column binds by its value type
    assert model.canonical_literal(1, pa.bool_()) == "true" and model.canonical_literal(0, pa.bool_()) == "false"
    assert model.canonical_literal(7.0, pa.dictionary(pa.int8(), pa.int64())) == "7"
    with pytest.raises(TypeError):
        model.canonical_literal(7, pa.dictionary(pa.int8(), pa.string()))
    for t in (pa.float64(), pa.binary(), pa.list_(pa.int32())):
        with pytest.raises(UnsupportedTypeError):
            model.check_indexable("c", t)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-1, 6), max_size=300))
def test_grouped_encoding_equals_per_bitmap(codes):
    codes = np.array(codes, np.int32)
    ng = 7
    order, bounds, nulls = model.group_positions(codes, ng)
    assert sorted(nulls.tolist()) == [i for i, c in enumerate(codes) if c == -1]
    nn = len(nulls)
    groups = model.encode_groups(order[nn:], bounds - nn)
    for g in range(ng):
        pos = [i for i, c in enumerate(codes) if c == g]
        assert groups[g] == model.encode_bitmap(pos)
        assert base64.b64decode(groups[g]) == roaring.serialize64(pos)
        assert list(model.decode_bitmap(groups[g])) == pos


def test_decode_bitmap_rejects_corruption_fuzz():
    rng = random.Random(5)
    seeds = [roaring.serialize64(p) for p in ([], [1, 2, 3], list(range(0, 70000, 7)), list(range(5000)))]
    n_ok = n_err = 0
    for i in range(3000):
        raw = bytearray(rng.choice(seeds))
        mode = rng.random()
        if mode < 0.4 and raw:
            raw = raw[: rng.randrange(len(raw))]
        else:
            for _ in range(rng.randint(1, 4)):
                if raw:
                    raw[rng.randrange(len(raw))] = rng.randrange(256)
        try:
            bm = model.decode_bitmap(base64.b64encode(bytes(raw)))
            assert isinstance(bm, BitMap)
            n_ok += 1
        except IndexFormatError:
            n_err += 1
    assert n_err > 1000
    with pytest.raises(IndexFormatError):
        model.decode_bitmap("not base64!!")
    with pytest.raises(IndexFormatError):  # a bucket above 2^32
        model.decode_bitmap(base64.b64encode(roaring.serialize64([1 << 33])))
    with pytest.raises(IndexFormatError):
        model.decode_bitmap(base64.b64encode(struct.pack("<Q", 2**40)))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "a!", "b", "k$1", "é"]),
            st.one_of(st.none(), st.text(alphabet="ab!#$% \x01é", max_size=4)),
            st.sampled_from(["", "p=1", "p=1!", "p$"]),
            st.sampled_from(["f1", "f1!", "f2"]),
        ),
        max_size=60,
    )
)
def test_segment_key_order_equals_sorting_the_keys(rows):
    from paimon_fast.hudi import storage

    keys = pa.array([model.bitmap_key(c, v, p, f) for c, v, p, f in rows], pa.string())
    got = [keys[i].as_py() for i in storage._key_order(keys).to_pylist()]
    assert got == sorted(keys.to_pylist())


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(st.lists(st.integers(0, 3000), max_size=6), st.lists(st.integers(0, 1 << 20), max_size=300)),
        max_size=150,
    )
)
def test_encode_groups_array_equals_one_by_one(groups):
    """The batched Base64 of many bitmaps equals encoding each (empty ones included)."""
    gs = [np.unique(np.array(g, np.uint32)) for g in groups]
    pos = np.concatenate(gs) if gs else np.zeros(0, np.uint32)
    bounds = np.concatenate([[0], np.cumsum([len(g) for g in gs])]).astype(np.int64)
    got = model.encode_groups_array(pos, bounds).to_pylist()
    assert got == model.encode_groups(pos, bounds)
    assert got == [model.encode_bitmap(g) for g in gs]


def test_timeline_errors_are_raised_not_swallowed(monkeypatch):
    """Listing the timeline's instants ignores only the package's 'no completed commit'
    error (an empty timeline); any other error reaches the caller."""
    import pyarrow as pa

    from paimon_fast.hudi import table as ht

    class Timeline:
        def __init__(self, err):
            self.err = err

        def _raise(self):
            raise self.err

        get_completed_commits = get_completed_deltacommits = get_completed_replacecommits = _raise
        get_latest_commit_timestamp = _raise

    class Table:
        is_mor = False

        def __init__(self, err):
            self.err = err

        def hudi_options(self):
            return {}

        def get_schema_with_meta_fields(self):
            return pa.schema([("a", pa.int32())])

        def get_timeline(self):
            return Timeline(self.err)

    monkeypatch.setattr(
        ht, "open_table", lambda p, cached=False: Table(RuntimeError("Timeline has no completed commit."))
    )
    st = ht.table_state("/nowhere")
    assert st.completed_instants == [] and st.latest_instant == "0"
    monkeypatch.setattr(ht, "open_table", lambda p, cached=False: Table(OSError("permission denied: .hoodie")))
    with pytest.raises(OSError, match="permission denied"):
        ht.table_state("/nowhere")
