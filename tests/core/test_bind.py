"""Bound predicates (paimon_fast.core.bind): literals are normalised in one place, once per read,
and every back end takes the bound predicate as it is."""

import ast
import os
import pickle
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_fast as pf
from paimon_fast.core import literals
from paimon_fast.core.bind import Bound, BoundLeaf, as_given, bind, is_bound
from paimon_fast.core.predicate import And, Leaf, Or
from paimon_fast.errors import ColumnNotFoundError, LiteralTypeError

INT = {"x": pa.int32(), "s": pa.string()}


def test_bind_normalises_and_marks_the_root():
    p = Leaf("less_than", "x", (5.5,))
    b = bind(p, INT)
    assert isinstance(b, BoundLeaf) and isinstance(b, Leaf)
    assert (b.op, b.name, b.literals) == ("less_or_equal", "x", (5,))
    assert b == Leaf("less_or_equal", "x", (5,)) and Leaf("less_or_equal", "x", (5,)) == b  # equal either way
    assert hash(b) == hash(Leaf("less_or_equal", "x", (5,)))
    assert repr(b) == "x <= 5" and b.bound_source is p
    assert bind(b, INT) is b and bind(b, pa.schema([("x", pa.int32()), ("s", pa.string())])) is b
    assert is_bound(b, INT) and not is_bound(p, INT)
    t = bind(Leaf("in", "x", (5.5, 7)) | Leaf("equal", "s", ("a",)), INT)
    assert isinstance(t, Bound) and isinstance(t, Or) and repr(t) == "(x IN [7] OR s = 'a')"
    n = bind(Leaf("equal", "x", (5.5,)) & Leaf("equal", "s", ("a",)), INT)
    assert isinstance(n, And) and repr(n) == "(x IS NULL AND x IS NOT NULL AND s = 'a')"
    assert bind(None, INT) is None


def test_binding_to_other_types_starts_from_the_literals_as_given():
    b = bind(Leaf("less_than", "x", (5.5,)), INT)
    d = bind(b, {"x": pa.float64()})
    assert repr(d) == "x < 5.5"  # not x <= 5.0: the INT form means something else on DOUBLE
    mixed = And.of(b, Leaf("equal", "s", ("a",)))  # a bound part inside a plain tree
    assert repr(as_given(mixed)) == "(x < 5.5 AND s = 'a')"
    assert repr(bind(mixed, {"x": pa.float64(), "s": pa.string()})) == "(x < 5.5 AND s = 'a')"
    assert repr(~b) == "x > 5" and not isinstance(~b, Bound)  # negation gives a plain predicate


def test_missing_columns_and_bad_literals():
    with pytest.raises(ColumnNotFoundError):
        bind(Leaf("equal", "y", (1,)), INT)
    kept = bind(Leaf("less_than", "y", (5.5,)), INT, missing="keep")
    assert repr(kept) == "y < 5.5" and bind(kept, INT, missing="keep") is kept
    b = bind(Leaf("less_than", "x", (5.5,)) & Leaf("equal", "s", ("a",)), INT)
    assert bind(b, {"x": pa.int32()}, missing="keep") is b  # a column the schema lacks keeps its bound leaf
    with pytest.raises(ColumnNotFoundError):
        bind(b, {"x": pa.int32()})
    with pytest.raises(LiteralTypeError):
        bind(Leaf("equal", "x", ("five",)), INT)


def test_a_bound_predicate_pickles_with_its_mark():
    b = bind(Leaf("between", "x", (1.5, 9.5)), INT)
    c = pickle.loads(pickle.dumps(b))
    assert type(c) is type(b) and c == b and c.bound_types["x"] == pa.int32()
    assert bind(c, INT) is c


# ---------------------------------------------------------------- one normalisation, in one place

PACKAGE = Path(pf.__file__).parent


def test_only_bind_calls_the_normaliser():
    """Every back end takes bound predicates; the normaliser of whole predicates is called by
    core/bind.py alone (index readers normalise single leaves with Java's answers, ieee=False)."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in ("core/bind.py", "core/literals.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("literals"):
                offenders += [f"{rel} imports {a.name}" for a in node.names if a.name == "normalize"]
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "normalize"
                and getattr(node.value, "id", "") == "literals"
            ):
                offenders.append(f"{rel} calls literals.normalize")
            if isinstance(node, ast.FunctionDef) and node.name in ("coerce_literal", "_normalized"):
                offenders.append(f"{rel} defines {node.name}")
    assert offenders == []


@pytest.fixture
def normalise_calls(monkeypatch):
    calls = []
    real = literals.normalize

    def counting(predicate, *a, **k):
        calls.append(repr(predicate))
        return real(predicate, *a, **k)

    monkeypatch.setattr(literals, "normalize", counting)
    return calls


def _rows_where_x_below(n, bound):
    return sorted(i for i in range(n) if i < bound)


@pytest.mark.parametrize("where", [pf.field("x") < 5.5, "x < 5.5 AND s != 'zz'"])
def test_a_dataset_read_binds_once(tmp_path, normalise_calls, where):
    from paimon_fast.tables.parquet import ParquetDataset

    pq.write_table(
        pa.table({"x": pa.array(range(300), pa.int32()), "s": [str(i % 7) for i in range(300)]}), tmp_path / "a.parquet"
    )
    r = ParquetDataset(str(tmp_path)).read(where)
    assert sorted(r.to_arrow().column("x").to_pylist()) == _rows_where_x_below(300, 5.5)
    assert r.count() == 6
    assert len(normalise_calls) == 1, normalise_calls


@pytest.mark.parametrize("fast", [True, False])
def test_a_paimon_read_binds_once(tmp_path, normalise_calls, fast):
    pytest.importorskip("pypaimon", reason="pypaimon (the tables extra) writes the Paimon table")
    from tests.support.paimon_helpers import create_sample_table

    import paimon_fast.paimon as pp

    table = create_sample_table(str(tmp_path), files=2, n=200, native=True)
    want = sorted(
        r["id"]
        for r in table.new_read_builder()
        .new_read()
        .to_arrow(table.new_read_builder().new_scan().plan().splits())
        .to_pylist()
        if r["id"] < 50.5
    )
    normalise_calls.clear()
    got = pp.read(table, pf.field("id") < 50.5, fast=fast).to_arrow()
    assert sorted(got.column("id").to_pylist()) == want and want
    assert len(normalise_calls) == 1, normalise_calls


def test_a_hudi_read_binds_once(tmp_path, normalise_calls):
    pytest.importorskip("hudi", reason="the hudi package (the tables extra) reads Hudi tables")
    from tests.support.hudi_writer import CowTable

    import paimon_fast.hudi as ph

    schema = pa.schema([("id", pa.int64()), ("city", pa.string()), ("n", pa.int32())])
    t = CowTable(os.path.join(tmp_path, "h"), schema, partition_field="city")
    rows = pa.table(
        {"id": range(90), "city": [["a", "b", "c"][i % 3] for i in range(90)], "n": [i % 5 for i in range(90)]},
        schema=schema,
    )
    t.insert(rows, groups=2)
    ph.build_index(None, t.path, ["city", "n"])
    normalise_calls.clear()
    got = ph.read(t.path, pf.field("n") < 2.5).to_arrow()
    assert sorted(got.column("id").to_pylist()) == [i for i in range(90) if i % 5 < 2.5]
    assert len(normalise_calls) == 1, normalise_calls
