"""Paimon tables for the global index tests (test_paimon_globalindex.py, test_paimon_btree.py,
test_paimon_topn.py): tables of :data:`SCHEMA` written with pypaimon 2.1 in temporary warehouses,
commit by commit, their rows read back by pypaimon, the index entries of their snapshots, and
plain-Python oracles (:data:`CASES`) of the predicates asked of them."""

import datetime
import decimal
import os
import random

import pyarrow as pa

import paimon_fast as pf
from tests.support.paimon_helpers import catalog, commit_arrow, pypaimon_read

ROW_TRACKING = {"row-tracking.enabled": "true"}
DATA_EVOLUTION = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
COLORS = ["red", "green", "blue", "cyan", "magenta", "yellow", "black"]


def new_table(wh, name, schema, options, partition_keys=None):
    from pypaimon import Schema

    cat = catalog(wh)
    cat.create_database("db", True)
    cat.create_table(
        f"db.{name}",
        Schema.from_pyarrow_schema(schema, partition_keys=partition_keys, options={"bucket": "-1", **options}),
        False,
    )
    return cat


def append_batch(cat, name, batch):
    commit_arrow(cat.get_table(f"db.{name}"), batch)


SCHEMA = pa.schema([("id", pa.int64()), ("color", pa.string()), ("n", pa.int32()), ("p", pa.string())])


def color_batch(k, n=200, seed=0):
    rnd = random.Random(seed * 1000 + k)
    ids = range(k * n, (k + 1) * n)
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "color": [None if rnd.random() < 0.05 else rnd.choice(COLORS) for _ in ids],
            "n": pa.array([None if rnd.random() < 0.05 else rnd.randrange(0, 9) for _ in ids], pa.int32()),
            "p": ["x" if i % 3 else "y" for i in ids],
        },
        schema=SCHEMA,
    )


def color_table(tmp_path, options, commits=3, partitioned=True, name="t", n=200):
    wh = str(tmp_path / "wh")
    cat = new_table(wh, name, SCHEMA, options, ["p"] if partitioned else None)
    for k in range(commits):
        append_batch(cat, name, color_batch(k, n))
    return cat, name


def table_rows(cat, name):
    return pypaimon_read(cat.get_table(f"db.{name}")).to_pylist()


def sorted_ids(arrow):
    return sorted(arrow.column("id").to_pylist())


# plain-Python oracles: (predicate, row -> bool); None compares as SQL (no match)
CASES = [
    (lambda: pf.field("color") == "red", lambda r: r["color"] == "red"),
    (lambda: pf.field("color").isin(["blue", "cyan", "nope"]), lambda r: r["color"] in ("blue", "cyan")),
    (lambda: pf.field("color") != "red", lambda r: r["color"] is not None and r["color"] != "red"),
    (lambda: pf.field("color").is_null(), lambda r: r["color"] is None),
    (lambda: pf.field("color").is_not_null(), lambda r: r["color"] is not None),
    (lambda: pf.field("color") < "cyan", lambda r: r["color"] is not None and r["color"] < "cyan"),
    (lambda: pf.field("color").startswith("b"), lambda r: r["color"] is not None and r["color"].startswith("b")),
    (lambda: (pf.field("color") == "red") & (pf.field("id") < 300), lambda r: r["color"] == "red" and r["id"] < 300),
    (lambda: (pf.field("color") == "red") | (pf.field("color") == "black"), lambda r: r["color"] in ("red", "black")),
    (lambda: (pf.field("color") == "red") | (pf.field("id") == 7), lambda r: r["color"] == "red" or r["id"] == 7),
    (lambda: (pf.field("color") == "green") & (pf.field("n") == 3), lambda r: r["color"] == "green" and r["n"] == 3),
    (lambda: pf.field("n").between(2, 4), lambda r: r["n"] is not None and 2 <= r["n"] <= 4),
    (lambda: (pf.field("p") == "y") & (pf.field("color") == "blue"), lambda r: r["p"] == "y" and r["color"] == "blue"),
]


def expected_ids(rows, fn, only_ids=None):
    return sorted(r["id"] for r in rows if fn(r) and (only_ids is None or r["id"] in only_ids))


# ------------------------------------------------------------------ build + read
def index_entries(cat, name):
    from pypaimon.index.index_file_handler import IndexFileHandler

    t = cat.get_table(f"db.{name}")
    return [
        e
        for e in IndexFileHandler(t).scan(t.snapshot_manager().get_latest_snapshot())
        if e.index_file.global_index_meta is not None
    ]


def with_options(cat, name, opts):
    return cat.get_table(f"db.{name}").copy(opts)


def color_index_answers(pred):
    """Does the color index answer this predicate tree (AND: any child; OR: every child)?"""
    if isinstance(pred, pf.core.predicate.Leaf):
        return pred.name == "color"
    if isinstance(pred, pf.core.predicate.And):
        return any(color_index_answers(c) for c in pred.children)
    return all(color_index_answers(c) for c in pred.children)


# ------------------------------------------------------------------ every key type
KEY_TYPES = [
    ("k_i8", pa.int8(), lambda rnd: rnd.randrange(-3, 4), 1),
    ("k_i16", pa.int16(), lambda rnd: rnd.randrange(-300, 300, 100), 100),
    ("k_i32", pa.int32(), lambda rnd: rnd.choice([-(2**31), -1, 0, 5, 2**31 - 1]), 5),
    ("k_i64", pa.int64(), lambda rnd: rnd.choice([-(2**63), -1, 0, 5, 2**40]), 5),
    ("k_bool", pa.bool_(), lambda rnd: rnd.random() < 0.3, True),
    ("k_f32", pa.float32(), lambda rnd: rnd.choice([-1.5, 0.0, 2.25, 1e9]), 2.25),
    ("k_f64", pa.float64(), lambda rnd: rnd.choice([-1.5, 0.0, 2.25, 1e300]), 2.25),
    (
        "k_date",
        pa.date32(),
        lambda rnd: datetime.date(2024, 1, 1) + datetime.timedelta(days=rnd.randrange(-400, 400, 100)),
        datetime.date(2024, 1, 1),
    ),
    (
        "k_ts3",
        pa.timestamp("ms"),
        lambda rnd: datetime.datetime(2024, 5, 1, 12, 0, rnd.randrange(0, 3)),
        datetime.datetime(2024, 5, 1, 12, 0, 1),
    ),
    (
        "k_ts6",
        pa.timestamp("us"),
        lambda rnd: datetime.datetime(2024, 5, 1, 12, 0, 0, rnd.randrange(0, 3) * 7),
        datetime.datetime(2024, 5, 1, 12, 0, 0, 7),
    ),
    (
        "k_dec",
        pa.decimal128(10, 2),
        lambda rnd: decimal.Decimal(rnd.randrange(-300, 300, 100)) / 100,
        decimal.Decimal("1.00"),
    ),
    (
        "k_bigdec",
        pa.decimal128(24, 3),
        lambda rnd: decimal.Decimal(rnd.choice([-(10**20), 0, 10**20, 7])) / 1000,
        decimal.Decimal(10**20) / 1000,
    ),
    ("k_str", pa.string(), lambda rnd: rnd.choice(["", "a", "ab", "b", "zz", "é"]), "ab"),
]


def range_files(cat, name, root):
    out = {}
    for e in index_entries(cat, name):
        m = e.index_file.global_index_meta
        with open(os.path.join(root, "db.db", name, "index", e.index_file.file_name), "rb") as f:
            out.setdefault((m.row_range_start, m.row_range_end), []).append(
                (f.read(), m.index_meta, e.index_file.row_count, m.index_field_id)
            )
    return {k: sorted(v) for k, v in out.items()}
