"""BSI file index vs Java Paimon HEAD golden vectors: identical bytes, every predicate answer."""

import pytest

import paimon_fast as pf
from paimon_fast.errors import UnsupportedTypeError
from paimon_fast.fileindex.bsi import NullLiteralError
from paimon_fast.core.result import BitmapResult
from tests.support.vectorlib import arrow_values, case_leaf, case_names, decode_rows, load_bin, load_case, manifest

FMT = "bsi"
NAMES = case_names(FMT)


def test_all_cases_present():
    assert len(NAMES) == 23


@pytest.mark.parametrize("name", NAMES)
def test_writer_bytes_identical(name):
    c = load_case(FMT, name)
    w = pf.fileindex.writer("bsi", c["type"], c["options"])
    values = arrow_values(c["values"], w.dtype)
    half = len(values) // 2
    w.write_batch(values.slice(0, half))
    w.write_batch(values.slice(half))
    assert w.finish() == load_bin(FMT, c["file"])


@pytest.mark.parametrize("name", NAMES)
def test_reader_answers_like_java(name):
    c = load_case(FMT, name)
    r = pf.fileindex.reader("bsi", c["type"], load_bin(FMT, c["file"]), c["options"])
    assert r.row_count == c["row_count"]
    checked = 0
    for p in c["predicates"]:
        leaf = case_leaf(p, r.dtype)
        if "error" in p:
            assert "NullPointerException" in p["error"]
            with pytest.raises(NullLiteralError):
                r.evaluate(leaf).bitmap
            continue
        res = r.evaluate(leaf)
        assert isinstance(res, BitmapResult)
        assert res.bitmap == decode_rows(p["result"]), (p["op"], p.get("literal", p.get("literals")))
        assert res.remain == p["result"]["remain"]
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("entry", manifest(FMT)["unsupported_types"], ids=lambda e: e["type"])
def test_unsupported_types_raise(entry):
    with pytest.raises(UnsupportedTypeError):
        pf.fileindex.writer("bsi", entry["type"], {})
