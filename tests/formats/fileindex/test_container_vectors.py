"""FileIndexFormat container vs Java Paimon 0.9.0 vectors."""

import hashlib
import io

import pytest

import paimon_fast as pf
from paimon_fast.fileindex import EmptyFileIndexReader, get_factory
from tests.support.vectorlib import arrow_values, case_leaf, case_names, decode_rows, load_bin, load_case

FMT = "file_index_container"
NAMES = case_names(FMT)


def _row_type(c):
    return {f["name"]: f["type"] for f in c["row_type"]}


def _check(res, want):
    assert res.remain == want["remain"]
    if "result_class" in want:
        assert repr(res) == want["result_class"]
    if "cardinality" in want:
        assert isinstance(res, pf.BitmapResult)
        assert res.bitmap == decode_rows(want)


@pytest.mark.parametrize("name", NAMES)
def test_container_bytes_identical(name):
    c = load_case(FMT, name)
    java = load_bin(FMT, c["file"])
    f = pf.FileIndexFormat.open(java, _row_type(c))
    indexes = {}
    for e in c.get("entries_in_write_order", []):
        if e["empty"]:
            payload = None
        else:
            payload = f.payload(e["column"], e["index_type"])
            assert hashlib.sha256(payload).hexdigest() == e["payload_sha256"]
            if e["index_type"] == "bloom-filter":  # re-encode with our writer too
                w = pf.fileindex.writer(e["index_type"], e["column_type"], e["options"])
                w.write_batch(arrow_values(e["values"], w.dtype))
                assert w.finish() == payload
        indexes.setdefault(e["column"], {})[e["index_type"]] = payload
    assert pf.FileIndexFormat.write(indexes) == java


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("as_", ["bytes", "path", "fileobj"])
def test_container_reader(name, as_, tmp_path):
    c = load_case(FMT, name)
    java = load_bin(FMT, c["file"])
    if as_ == "path":
        p = tmp_path / "x.index"
        p.write_bytes(java)
        src = str(p)
    elif as_ == "fileobj":
        src = io.BytesIO(java)
    else:
        src = java
    f = pf.FileIndexFormat.open(src, _row_type(c))
    metas = f.index_metas()
    entries = c.get("entries_in_write_order", [])
    assert sum(len(v) for v in metas.values()) == len(entries)
    for e in entries:
        start, length = metas[e["column"]][e["index_type"]]
        assert (start, length) == (e["header_start"], e["header_length"])
        assert f.column_type(e["column"]) == pf.DataType.parse(e["column_type"])
        try:
            get_factory(e["index_type"])
        except KeyError:
            continue  # checked by the format's own vector tests once that format exists
        rd = f.reader(e["column"], e["index_type"])
        if e["empty"]:
            assert isinstance(rd, EmptyFileIndexReader)
        for p in e["predicates"]:
            _check(rd.visit(case_leaf(p, rd.dtype, column="c")), p["result"])


def test_container_evaluate_combines_columns():
    c = load_case(FMT, "container_basic")
    f = pf.FileIndexFormat.open(load_bin(FMT, c["file"]), _row_type(c))
    # the empty map-key index SKIPs equality, so an AND with it skips and an OR does not
    assert not f.evaluate(pf.field("m[k2]") == 5).remain
    assert not f.evaluate((pf.field("name") == "sftk") & (pf.field("m[k2]") == 5)).remain
    assert f.evaluate((pf.field("name") == "sftk") | (pf.field("m[k2]") == 5)).remain
    # a column without an index remains
    assert f.evaluate(pf.field("nope") == 1) is pf.REMAIN
    assert f.evaluate(pf.field("m[k2]").is_null()) is pf.REMAIN
