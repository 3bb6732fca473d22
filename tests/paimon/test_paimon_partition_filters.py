"""Every row a Paimon read hands back satisfies the predicate, on every path,
also when a partition column sits under OR or NOT (pypaimon's reader leaves
partition keys out of its row filter).

Expected rows come from an independent oracle: a plain-Python three-valued
evaluator (``sql_oracle``) over an unfiltered read of the whole table.
"""

import pyarrow as pa
import pytest

pytest.importorskip("pypaimon")

import paimon_fast as pf
from paimon_fast.errors import ColumnNotFoundError
from paimon_fast.paimon import read_with_index
from tests.support.paimon_helpers import catalog, commit_arrow, pypaimon_read
from tests.support.sql_oracle import holds


def _table(wh, name, primary_keys=None, options=None):
    from pypaimon import Schema

    cat = catalog(wh)
    cat.create_database("db", True)
    schema = pa.schema([("region", pa.string()), ("id", pa.int32()), ("price", pa.int64())])
    opts = {"bucket": "-1" if not primary_keys else "2", "file-index.bitmap.columns": "id"}
    opts.update(options or {})
    if primary_keys:
        schema = pa.schema([f.with_nullable(False) if f.name in primary_keys else f for f in schema])
    cat.create_table(
        f"db.{name}",
        Schema.from_pyarrow_schema(schema, partition_keys=["region"], primary_keys=primary_keys, options=opts),
        False,
    )
    t = cat.get_table(f"db.{name}")
    for k, region in enumerate(["eu", "us", "eu", "ap"]):
        ids = list(range(k * 50, k * 50 + 50))
        commit_arrow(
            t,
            pa.table(
                {
                    "region": [region] * 50,
                    "id": pa.array(ids, pa.int32()),
                    "price": pa.array([None if i % 11 == 0 else (i * 7) % 100 for i in ids], pa.int64()),
                }
            ),
        )
    return cat.get_table(f"db.{name}")


F = pf.field
PREDICATES = [
    (F("region") == "zz") | (F("id") == 1),
    (F("region") == "eu") | (F("price") > 90),
    ~((F("region") == "eu") & (F("id") < 120)),
    ~(F("region").isin(["eu", "us"])) | (F("id") == 60),
    (F("region") != "us") & ((F("id") < 10) | (F("region") == "ap")),
    (F("region").is_null()) | (F("price").is_null()),
    ((F("region") == "us") | (F("id") >= 190)) & ~(F("price") < 50),
    (F("region") == "ap") | (F("id") < 5.5),  # a fractional literal on an INT column too
]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    wh = tmp_path_factory.mktemp("wh")
    return {
        "append": _table(wh, "ap"),
        "pk": _table(wh, "pk", primary_keys=["region", "id"], options={"deletion-vectors.enabled": "true"}),
        "pk_merge": _table(wh, "pkm", primary_keys=["region", "id"]),
    }


@pytest.mark.parametrize("kind", ["append", "pk", "pk_merge"])
@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("i", range(len(PREDICATES)))
def test_or_not_over_partition_and_data_columns(tables, kind, fast, i):
    t = tables[kind]
    pred = PREDICATES[i]
    rows = pypaimon_read(t).to_pylist()
    want = sorted((r["region"], r["id"]) for r in rows if holds(pred, r))
    got, rep = read_with_index(t, pred, fast=fast)
    assert sorted(zip(got.column("region").to_pylist(), got.column("id").to_pylist())) == want, (pred, rep)


def test_issue_repro_partition_or_returns_one_row(tables):
    got, _ = read_with_index(tables["append"], (F("region") == "zz") | (F("id") == 1), fast=False)
    assert got.column("id").to_pylist() == [1]


def test_projection_without_the_predicate_columns(tables):
    got, _ = read_with_index(tables["append"], (F("region") == "ap") | (F("id") == 3), projection=["price"], fast=False)
    assert got.column_names == ["price"] and got.num_rows == 51


def test_missing_column_is_a_clear_error(tables):
    with pytest.raises(ColumnNotFoundError, match="nope"):
        read_with_index(tables["append"], F("nope") == 1, fast=False)


def test_every_path_keeps_nan_rows_not_between(tmp_path):
    """x NOT BETWEEN a AND b is NOT (x BETWEEN a AND b): true for NaN (IEEE comparisons are
    false).  The fast path, the pypaimon path and the oracle agree."""
    from pypaimon import Schema

    cat = catalog(tmp_path)
    cat.create_database("db", True)
    cat.create_table(
        "db.f",
        Schema.from_pyarrow_schema(pa.schema([("id", pa.int32()), ("v", pa.float64())]), options={"bucket": "-1"}),
        False,
    )
    t = cat.get_table("db.f")
    commit_arrow(t, pa.table({"id": pa.array(range(6), pa.int32()), "v": [0.0, float("nan"), 1.0, None, -0.0, 2.5]}))
    t = cat.get_table("db.f")
    rows = pypaimon_read(t).to_pylist()
    for pred in [
        F("v").not_between(0.5, 1.5),
        F("v") == 0.0,
        F("v") != float("nan"),
        F("v").notin([1.0]),
        ~(F("v") < 1.0),
        F("v") <= -0.0,
    ]:
        want = sorted(r["id"] for r in rows if holds(pred, r))
        for fast in (True, False):
            got, rep = read_with_index(t, pred, fast=fast)
            assert sorted(got.column("id").to_pylist()) == want, (pred, fast, rep.fallback_reason)
