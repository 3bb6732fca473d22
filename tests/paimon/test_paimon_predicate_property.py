"""Property test: every Paimon read hands back exactly the rows the predicate holds for.

pypaimon's translation of our predicates (``paimon.predicates.to_pypaimon``, handed to
``with_filter`` by ``plan_with_index``) only steers its planning: partition pruning,
min/max statistics, file skipping.  Our file indexes prune too, and the exact filter
runs on the rows afterwards.  So the remaining risk is a plan that skips a file or a
partition holding matching rows.  Random predicates (every comparison, IN / NOT IN,
IS [NOT] NULL, BETWEEN, LIKE and the string functions, AND / OR / NOT, null literals,
NaN, -0.0, decimals, dates, timestamps with and without time zone, LIKE escapes) run
through ``read_with_index`` (pypaimon's path and the fast path) on small tables with
several files of distinct min/max statistics, file indexes and partitions: a
partitioned append table, primary-key tables with and without deletion vectors, and
the Java Paimon 0.9 tables in ``tests/data``.

The expected rows come from ``sql_oracle`` (a plain-Python three-valued evaluator)
over the whole table's ``to_pylist()`` rows, never from the product's filter.
"""

import datetime as dt
import decimal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("pypaimon")

import paimon_fast as pf
from paimon_fast.paimon import read_with_index, rewrite_file_index
from paimon_fast.paimon.compat import legacy_manifest_table
from paimon_fast.core.predicate import Leaf
from tests.support.paimon_helpers import catalog, commit_arrow, pypaimon_read, unpack_java09
from tests.support.sql_oracle import holds

settings.register_profile(
    "paimon-predicates",
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PROFILE = settings.get_profile("paimon-predicates")

UTC = dt.timezone.utc
PLUS2 = dt.timezone(dt.timedelta(hours=2))
REGIONS = ["eu", "us", "ap", "sa"]
NAMES = ["a%b", "x_y", "back\\slash", "plain", "", "a_%", "100%", "_", "%", "ab", "a\\%b", "zz"]
RATIOS = [float("nan"), -0.0, 0.0, 1.5, -2.25, float("inf"), float("-inf"), 0.1, 1e300]
SCHEMA = pa.schema(
    [
        ("region", pa.string()),
        ("pday", pa.date32()),
        ("id", pa.int32()),
        ("price", pa.int64()),
        ("amount", pa.decimal128(10, 2)),
        ("ratio", pa.float64()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us")),
        ("tstz", pa.timestamp("us", tz="UTC")),
        ("name", pa.string()),
    ]
)
FILES = 6
ROWS = 30
INDEXES = {
    "file-index.bloom-filter.columns": "name,price",
    "file-index.bitmap.columns": "day",
    "file-index.range-bitmap.columns": "id,ts",
    "file-index.bsi.columns": "price",
}


def _batch(k, upd=False):
    """Commit ``k``'s rows: ids k*ROWS.. (distinct min/max per file), every value
    derived from the id (and a different price for an update)."""
    ids = list(range(k * ROWS, k * ROWS + ROWS))
    if upd:  # a later commit rewriting some keys of earlier files
        ids = list(range(7, FILES * ROWS, 9))

    def v(i, nul, f):
        return None if i % nul == 0 else f(i)

    base = dt.datetime(2024, 3, 1)
    return pa.table(
        {
            "region": [REGIONS[(i // 7) % 4] for i in ids],
            "pday": [dt.date(2024, 1, 1) + dt.timedelta(days=(i // 50) % 3) for i in ids],
            "id": pa.array(ids, pa.int32()),
            "price": [v(i, 11, lambda i: (i * 37 % 200 - 60) * (1 if not upd else 3)) for i in ids],
            "amount": [v(i, 13, lambda i: decimal.Decimal(i * 7 % 500 - 100) / 4) for i in ids],
            "ratio": [v(i, 17, lambda i: RATIOS[i % len(RATIOS)]) for i in ids],
            "day": [v(i, 10, lambda i: dt.date(2024, 1, 1) + dt.timedelta(days=i // 3)) for i in ids],
            "ts": [v(i, 9, lambda i: base + dt.timedelta(hours=i, microseconds=i * 1001)) for i in ids],
            "tstz": [v(i, 8, lambda i: (base + dt.timedelta(minutes=17 * i)).replace(tzinfo=UTC)) for i in ids],
            "name": [v(i, 12, lambda i: NAMES[i % len(NAMES)] + ("" if i % 5 else str(i))) for i in ids],
        },
        schema=SCHEMA,
    )


def _pypaimon_table(wh, name, primary_keys=None, options=None, drop=()):
    from pypaimon import Schema

    cat = catalog(wh)
    cat.create_database("db", True)
    schema = pa.schema([f for f in SCHEMA if f.name not in drop])
    opts = {"bucket": "-1" if not primary_keys else "2", "metadata.stats-mode": "full", **INDEXES}
    opts.update(options or {})
    if primary_keys:
        schema = pa.schema([f.with_nullable(False) if f.name in primary_keys else f for f in schema])
    cat.create_table(
        f"db.{name}",
        Schema.from_pyarrow_schema(schema, partition_keys=["region", "pday"], primary_keys=primary_keys, options=opts),
        False,
    )
    t = cat.get_table(f"db.{name}")
    for k in range(FILES):
        commit_arrow(t, _batch(k).select(schema.names).cast(schema))
    if primary_keys:
        commit_arrow(t, _batch(0, upd=True).select(schema.names).cast(schema))
    else:
        rewrite_file_index(None, t)
    return cat.get_table(f"db.{name}")


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    wh = tmp_path_factory.mktemp("wh")
    # (pypaimon cannot compact, so a primary-key table with deletion vectors it writes reads as
    # empty: the Java 0.9 pk_dv table below is the one with deletion vectors)
    out = {
        "append": _pypaimon_table(wh, "ap"),
        "append_fast": _pypaimon_table(wh, "apf", drop=("ts", "tstz")),  # no TIMESTAMP: the fast path reads it
        "pk_merge": _pypaimon_table(wh, "pkm", ["region", "pday", "id"]),
    }
    return {k: (t, pypaimon_read(legacy_manifest_table(t)).to_pylist()) for k, t in out.items()}


@pytest.fixture(scope="module")
def java09(tmp_path_factory):
    cat = catalog(unpack_java09(tmp_path_factory.mktemp("j09")))
    out = {}
    for name in ("append_embedded", "append_sidecar", "append_dv", "pk_dv"):
        t = cat.get_table("db." + name)
        out[name] = (t, pypaimon_read(legacy_manifest_table(t)).to_pylist())
    return out


# ------------------------------------------------------------------ predicates


def _like_pattern():
    piece = st.sampled_from(
        ["a", "b", "x", "_", "%", "\\%", "\\_", "\\\\", "\\a", "\\", "1", "0", "-", "name", "u", "e"]
    )
    return st.lists(piece, max_size=5).map("".join)


def _substring():
    return st.sampled_from(["", "a", "%", "_", "\\", "a%", "x_", "100", "name-1", "ab", "zz", "1"])


def _lits(col):
    """Literals for a column: values the table holds and the awkward neighbours."""
    ints = st.integers(-70, 240)
    if col == "region":
        return st.sampled_from(REGIONS + ["zz", "", "e"])
    if col in ("name", "category"):
        return st.one_of(
            st.sampled_from(NAMES),
            _like_pattern(),
            st.integers(0, 4000).map(lambda i: f"name-{i}"),
            st.sampled_from(["red", "green", "blue", "cyan", "r"]),
        )
    if col in ("id", "price"):
        return st.one_of(
            ints,
            st.integers(-70, 240).map(lambda i: i + 0.5),
            st.sampled_from(
                [
                    -0.0,
                    0.0,
                    2**40,
                    -(2**40),
                    2**70,
                    -(2**70),
                    float("nan"),
                    float("inf"),
                    decimal.Decimal("3.50"),
                    decimal.Decimal("7.25"),
                    4000,
                    3999.0,
                ]
            ),
        )
    if col == "amount":
        return st.one_of(
            st.integers(-30, 130).map(lambda i: decimal.Decimal(i) / 4),
            st.sampled_from([decimal.Decimal("1.255"), 1.25, -0.0, 3, float("nan"), 10**9, decimal.Decimal("-25.00")]),
        )
    if col == "ratio":
        return st.one_of(
            st.sampled_from(RATIOS + [1, -2, 0, 2**53 + 1]), st.floats(-3, 3, allow_nan=False, width=32).map(float)
        )
    if col in ("day", "pday"):
        d = st.integers(-2, 70).map(lambda n: dt.date(2024, 1, 1) + dt.timedelta(days=n))
        return st.one_of(d, d.map(lambda x: dt.datetime(x.year, x.month, x.day, 12)), d.map(lambda x: x.isoformat()))
    if col in ("ts", "tstz"):
        base = dt.datetime(2024, 3, 1)
        naive = st.integers(-5, 200).map(lambda h: base + dt.timedelta(hours=h))
        return st.one_of(
            naive,
            naive.map(lambda d: d + dt.timedelta(microseconds=1001 * d.hour)),
            naive.map(lambda d: d.replace(tzinfo=PLUS2)),
            naive.map(lambda d: d.replace(tzinfo=UTC)),
            st.integers(0, 12).map(lambda n: dt.date(2024, 3, 1) + dt.timedelta(days=n)),
        )
    raise AssertionError(col)


STRING_COLS = ("region", "name", "category")


@st.composite
def _leaf(draw, cols):
    col = draw(st.sampled_from(cols))
    lit = _lits(col)
    maybe_null = st.one_of(st.none(), lit) if draw(st.integers(0, 9)) == 0 else lit
    ops = [
        "equal",
        "not_equal",
        "less_than",
        "less_or_equal",
        "greater_than",
        "greater_or_equal",
        "in",
        "not_in",
        "is_null",
        "is_not_null",
        "between",
        "not_between",
    ]
    if col in STRING_COLS:
        ops += ["starts_with", "ends_with", "contains", "like", "like"]
    op = draw(st.sampled_from(ops))
    if op in ("is_null", "is_not_null"):
        return Leaf(op, col)
    if op in ("in", "not_in"):
        return Leaf(op, col, tuple(draw(st.lists(maybe_null, min_size=1, max_size=4))))
    if op in ("between", "not_between"):
        return Leaf(op, col, (draw(maybe_null), draw(maybe_null)))
    if op == "like":
        return Leaf(op, col, (draw(_like_pattern()),))
    if op in ("starts_with", "ends_with", "contains"):
        return Leaf(op, col, (draw(st.one_of(_substring(), lit)),))
    return Leaf(op, col, (draw(maybe_null),))


_NEGATABLE = {
    "equal",
    "not_equal",
    "less_than",
    "less_or_equal",
    "greater_than",
    "greater_or_equal",
    "in",
    "not_in",
    "is_null",
    "is_not_null",
    "between",
    "not_between",
}


def _negatable(p):
    return all(leaf.op in _NEGATABLE for leaf in p.leaves())


def predicates(cols):
    def extend(children):
        pairs = st.lists(children, min_size=2, max_size=3)
        return st.one_of(
            pairs.map(lambda ps: pf.core.predicate.And.of(*ps)),
            pairs.map(lambda ps: pf.core.predicate.Or.of(*ps)),
            children.filter(_negatable).map(lambda p: ~p),
        )

    return st.recursive(_leaf(cols), extend, max_leaves=5)


# ------------------------------------------------------------------ the check


def _key(row, cols):
    return tuple(repr(row[c]) for c in cols)


def _check(t, rows, pred, fast_too, fast_must=False):
    cols = list(rows[0].keys())
    want = sorted(_key(r, cols) for r in rows if holds(pred, r))
    for fast in (False, True) if fast_too else (False,):
        got, rep = read_with_index(t, pred, fast=fast)
        assert rep.fast_path == (fast and fast_must) or not fast_must, rep.fallback_reason
        have = sorted(_key(r, cols) for r in got.select(cols).to_pylist()) if got is not None else []
        assert have == want, (pred, fast, rep)


@pytest.mark.parametrize("kind", ["append", "append_fast", "pk_merge"])
def test_pypaimon_tables_rows_equal_oracle(tables, kind):
    t, rows = tables[kind]
    assert len(rows) == FILES * ROWS  # every commit is in the table (updates replace rows)
    cols = list(rows[0].keys())

    @PROFILE
    @given(predicates(cols))
    def run(pred):
        _check(t, rows, pred, fast_too=kind != "pk_merge", fast_must=kind == "append_fast")

    run()


# wrong answers the property test found, kept as regression tests
REGRESSIONS = [
    Leaf("equal", "region", (None,)),  # pypaimon's planner raised on a null literal
    # NaN satisfies NOT BETWEEN, and min / max statistics leave NaN out: files holding NaN were skipped
    Leaf("not_between", "ratio", (-0.0, -0.0)),
    # a null bound left the other unnormalised: the exact filter compared a DATE with a datetime
    Leaf("not_between", "pday", (dt.datetime(2024, 1, 1, 12), None)),
    Leaf("not_between", "id", (None, float("nan"))),  # NOT (x <= NaN): every non-null row
    # pypaimon's partition filter raised on escapes it does not know (ours: the character itself)
    Leaf("like", "region", ("\\a",)),
    Leaf("like", "region", ("e%\\",)),
]


@pytest.mark.parametrize("kind", ["append", "append_fast", "pk_merge"])
@pytest.mark.parametrize("pred", REGRESSIONS, ids=repr)
def test_regressions(tables, kind, pred):
    t, rows = tables[kind]
    _check(t, rows, pred, fast_too=kind != "pk_merge", fast_must=kind == "append_fast")


@pytest.mark.parametrize(
    "pred",
    [
        pf.field("ratio") != 1.5,
        pf.field("ratio").notin([1.5, 7.0]),
        pf.field("ratio").not_between(1.0, 2.0),
        ~(pf.field("ratio") == 1.5),
    ],
    ids=repr,
)
def test_nan_rows_are_not_planned_away(tmp_path, pred):
    """A file whose statistics say min = max = 1.5 also holds NaN rows (pypaimon's statistics
    leave NaN out), which satisfy ``!=``, ``NOT IN`` and ``NOT BETWEEN``."""
    from pypaimon import Schema

    cat = catalog(tmp_path)
    cat.create_database("db", True)
    schema = pa.schema([("id", pa.int32()), ("ratio", pa.float64())])
    opts = {"bucket": "-1", "metadata.stats-mode": "full"}
    cat.create_table("db.n", Schema.from_pyarrow_schema(schema, options=opts), False)
    t = cat.get_table("db.n")
    commit_arrow(t, pa.table({"id": pa.array([1, 2, 3], pa.int32()), "ratio": [1.5, float("nan"), 1.5]}))
    commit_arrow(t, pa.table({"id": pa.array([4, 5], pa.int32()), "ratio": [2.5, None]}))
    t = cat.get_table("db.n")
    rows = pypaimon_read(legacy_manifest_table(t)).to_pylist()
    assert sorted(r["id"] for r in rows if holds(pred, r)) in ([2, 4], [2])
    _check(t, rows, pred, fast_too=True, fast_must=True)


JAVA_COLS = ["id", "name", "category", "price"]


@pytest.mark.parametrize("name", ["append_embedded", "append_sidecar", "append_dv", "pk_dv"])
def test_java09_tables_rows_equal_oracle(java09, name):
    t, rows = java09[name]

    @settings(PROFILE, max_examples=20)
    @given(predicates(JAVA_COLS))
    def run(pred):
        _check(t, rows, pred, fast_too=not name.startswith("pk"), fast_must=not name.startswith("pk"))

    run()
