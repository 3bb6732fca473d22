"""paimon_fast.paimon.top_n on real Paimon tables, against pypaimon's own full read.

The oracle reads the whole table with pypaimon (deletion vectors applied by
pypaimon), evaluates the predicate in plain Python (SQL three-valued logic)
and sorts.  pypaimon's row order is not the manifest's file order, so ties at
the k-th value are checked as a set: the values in order must be the oracle's,
every row strictly above the k-th value must be the oracle's, and the tied
rows must be rows of the oracle with that value.
"""

import math

import pytest

pytest.importorskip("pypaimon")

import paimon_fast as pf  # noqa: E402
from paimon_fast.paimon import legacy_manifest_table, rewrite_file_index  # noqa: E402
from paimon_fast.paimon.topn import top_n  # noqa: E402
from paimon_fast.read.topn import TopNReport  # noqa: E402

from tests.support.paimon_helpers import (  # noqa: E402
    catalog,
    commit_arrow,
    copy_table,
    create_sample_table,
    pypaimon_read,
    unpack_java09,
)
from tests.support.sql_oracle import holds, order_key  # noqa: E402

RANGE = {"file-index.range-bitmap.columns": "price,id"}


def check(table, column, k, desc=True, pred=None, nulls_first=False, report=None):
    got = top_n(table, column, k, desc=desc, predicate=pred, nulls_first=nulls_first, report=report).to_pylist()
    every = pypaimon_read(legacy_manifest_table(table)).to_pylist()  # Paimon 0.9 manifests read as pypaimon 2 expects
    rows = [r for r in every if pred is None or holds(pred, r)]
    rows.sort(key=lambda r: order_key(r[column], desc, nulls_first))
    want = rows[:k]
    key = lambda r: order_key(r[column], desc, nulls_first)  # noqa: E731  (NaN equal to NaN here)
    assert [key(r) for r in got] == [key(r) for r in want]
    if not want:
        return got
    last = order_key(want[-1][column], desc, nulls_first)
    above = lambda rs: sorted(r["id"] for r in rs if order_key(r[column], desc, nulls_first) < last)  # noqa: E731
    assert above(got) == above(want)
    tied = {r["id"] for r in rows if order_key(r[column], desc, nulls_first) == last}
    assert {r["id"] for r in got if order_key(r[column], desc, nulls_first) == last} <= tied
    assert len({r["id"] for r in got}) == len(got)
    return got


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    wh = tmp_path_factory.mktemp("wh")
    t = create_sample_table(wh, files=5, n=700)
    rewrite_file_index(None, t, RANGE)
    return catalog(wh).get_table("db.t")


PREDS = [
    None,
    pf.field("category") == "red",
    (pf.field("id") < 1500) | (pf.field("category") == "cyan"),
    pf.field("price") > 2000,
]


@pytest.mark.parametrize("k", [1, 10, 1000, 5000])
@pytest.mark.parametrize("desc", [True, False])
@pytest.mark.parametrize("p", range(len(PREDS)))
def test_top_n_matches_full_read(indexed, k, desc, p):
    rep = TopNReport()
    check(indexed, "price", k, desc, PREDS[p], report=rep)
    assert rep.fallback_reason == ""
    assert rep.files_without_index == 0


def test_index_bounds_work(indexed):
    # ids rise with the file: the top-10 ids live in the last file, the others are not read
    rep = TopNReport()
    got = check(indexed, "id", 10, report=rep)
    assert [r["id"] for r in got] == list(range(3499, 3489, -1))
    assert rep.files_skipped == 4 and rep.candidate_rows == 10


def test_sql_text_and_projection(indexed):
    got = top_n(indexed, "price", 3, predicate="category = 'blue'", columns=["id", "category"])
    assert got.schema.names == ["id", "category"]
    assert set(got.column("category").to_pylist()) == {"blue"}
    with pytest.raises(KeyError, match="nope"):
        top_n(indexed, "nope", 3)


def test_deletion_vectors_honoured(tmp_path_factory):
    wh = str(tmp_path_factory.mktemp("j9"))
    src = unpack_java09(tmp_path_factory.mktemp("src"))
    copy_table(src, wh, "append_dv")
    t = catalog(wh).get_table("db.append_dv")
    rewrite_file_index(None, t, RANGE)
    t = catalog(wh).get_table("db.append_dv")
    for desc in (True, False):
        for k in (1, 10, 500):
            rep = TopNReport()
            check(t, "price", k, desc, report=rep)
            assert rep.fallback_reason == ""


def test_primary_key_table_falls_back_with_same_answer(tmp_path_factory):
    wh = str(tmp_path_factory.mktemp("pk"))
    src = unpack_java09(tmp_path_factory.mktemp("src"))
    copy_table(src, wh, "pk_dv")
    t = catalog(wh).get_table("db.pk_dv")
    rep = TopNReport()
    check(t, "price", 20, True, pf.field("category") != "red", report=rep)
    assert "primary-key" in rep.fallback_reason


def test_nulls_and_nan(tmp_path):
    import pyarrow as pa
    from pypaimon import Schema

    cat = catalog(tmp_path)
    cat.create_database("db", True)
    schema = pa.schema([("id", pa.int32()), ("d", pa.float64())])
    cat.create_table("db.f", Schema.from_pyarrow_schema(schema, options={"bucket": "-1"}), False)
    t = cat.get_table("db.f")
    vals = [1.5, None, float("nan"), -0.0, 0.0, 3.0, None, -2.0]
    for part in range(2):
        commit_arrow(
            t, pa.table({"id": pa.array(range(part * 8, part * 8 + 8), pa.int32()), "d": pa.array(vals, pa.float64())})
        )
    rewrite_file_index(None, t, {"file-index.range-bitmap.columns": "d"})
    t = cat.get_table("db.f")
    for nulls_first in (False, True):
        for desc in (True, False):
            got = check(t, "d", 5, desc, nulls_first=nulls_first)
            if desc and not nulls_first:
                assert math.isnan(got[0]["d"]) and math.isnan(got[1]["d"])


@pytest.mark.parametrize("options", ["data-evolution", "row-tracking"])
def test_row_tracking_tables(tmp_path, options):
    from tests.support.paimon_globalindex_support import DATA_EVOLUTION, color_table

    opts = DATA_EVOLUTION if options == "data-evolution" else {"row-tracking.enabled": "true"}
    cat, name = color_table(tmp_path, opts)
    t = cat.get_table(f"db.{name}")
    for desc in (True, False):
        check(t, "n", 15, desc, pf.field("p") == "x")
        check(t, "color", 7, desc)
