"""Range bitmap vs Java Paimon HEAD golden vectors: identical bytes, every
predicate answer and every top-k / bottom-k answer."""

import pytest

import paimon_fast as pf
from paimon_fast.errors import UnsupportedTypeError
from paimon_fast.fileindex.range_bitmap import NullLiteralError
from paimon_fast.core.predicate import Leaf, TopN
from paimon_fast.core.result import BitmapResult
from tests.support.vectorlib import (
    arrow_values,
    case_leaf,
    case_names,
    decode_literal,
    decode_rows,
    load_bin,
    load_case,
    manifest,
)

FMT = "range_bitmap"
NAMES = case_names(FMT)


def test_all_cases_present():
    assert len(NAMES) == 48


@pytest.mark.parametrize("name", NAMES)
def test_writer_bytes_identical(name):
    c = load_case(FMT, name)
    w = pf.fileindex.writer("range-bitmap", c["type"], c["options"])
    values = arrow_values(c["values"], w.dtype)
    half = len(values) // 3
    w.write_batch(values.slice(0, half))
    w.write_batch(values.slice(half))
    assert w.finish() == load_bin(FMT, c["file"])


@pytest.mark.parametrize("name", NAMES)
def test_reader_answers_like_java(name):
    c = load_case(FMT, name)
    r = pf.fileindex.reader("range-bitmap", c["type"], load_bin(FMT, c["file"]), c["options"])
    assert r.row_count == c["row_count"]
    checked = 0
    for p in c["predicates"]:
        leaf = case_leaf(p, r.dtype)
        if "error" in p or "error" in p.get("result", {}):
            assert "NullPointerException" in (p.get("error") or p["result"]["error"])
            with pytest.raises(NullLiteralError):
                r.evaluate(leaf).bitmap
            continue
        res = r.evaluate(leaf)
        assert isinstance(res, BitmapResult)
        want = decode_rows(p["result"])
        assert res.bitmap == want, (p["op"], p.get("literal", p.get("literals")))
        assert res.remain == p["result"]["remain"]
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("name", NAMES)
def test_top_n_like_java(name):
    c = load_case(FMT, name)
    r = pf.fileindex.reader("range-bitmap", c["type"], load_bin(FMT, c["file"]), c["options"])
    assert c["top_n"]
    for t in c["top_n"]:
        found = None
        if t["found_set"] is not None:
            assert t["found_set"] == "greater_or_equal"
            found = r.evaluate(Leaf("greater_or_equal", "x", (decode_literal(t["found_set_literal"], r.dtype),)))
        topn = TopN("x", t["k"], t["direction"] == "DESCENDING", t["null_ordering"] == "NULLS_FIRST", t["strict"])
        got = r.visit_top_n(topn, found).bitmap
        assert got == decode_rows(t["result"]), t
        # the direct API agrees
        fn = r.top_k if topn.descending else r.bottom_k
        assert fn(t["k"], topn.nulls_first, None if found is None else found.bitmap, topn.strict) == got


@pytest.mark.parametrize("entry", manifest(FMT)["unsupported_types"], ids=lambda e: e["type"])
def test_unsupported_types_raise(entry):
    with pytest.raises(UnsupportedTypeError):
        pf.fileindex.writer("range-bitmap", entry["type"], {})
