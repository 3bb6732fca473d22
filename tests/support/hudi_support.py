"""Test support for the Hudi bitmap index: the real tables, an oracle, predicate batteries."""

from __future__ import annotations

import datetime as dt
import os
import zipfile

import pyarrow as pa
import pytest

from paimon_fast.core.predicate import And, Leaf, Or, field
from tests.support.paths import ROOT


def _tables_dir():
    # <repo>/../shared/hudi-tables (CI); a git worktree one level deeper also finds it
    for d in (
        os.environ.get("PAIMON_FAST_HUDI_TABLES"),
        os.path.join(os.path.dirname(ROOT), "shared", "hudi-tables"),
        os.path.join(os.path.dirname(os.path.dirname(ROOT)), "shared", "hudi-tables"),
    ):
        if d and os.path.isdir(d):
            return d
    return os.path.join(os.path.dirname(ROOT), "shared", "hudi-tables")


TABLES_DIR = _tables_dir()


def table_zips():
    if not os.path.isdir(TABLES_DIR):
        return []
    out = []
    for root, _, files in os.walk(TABLES_DIR):
        for f in files:
            if f.endswith(".zip"):
                out.append(os.path.relpath(os.path.join(root, f), TABLES_DIR))
    return sorted(out)


def require_tables():
    if not table_zips():
        pytest.skip(
            f"the real Hudi tables are not available at {TABLES_DIR} "
            "(they live in the project's shared directory, not in the repository)"
        )


def unzip_table(rel, dest):
    """Unzip one table into ``dest``; returns the table's base path (absolute)."""
    with zipfile.ZipFile(os.path.join(TABLES_DIR, rel)) as z:
        z.extractall(dest)
    for root, dirs, _ in os.walk(dest):
        dirs[:] = sorted(d for d in dirs if d != "__MACOSX")
        if os.path.isfile(os.path.join(root, ".hoodie", "hoodie.properties")):
            return os.path.abspath(root)
    raise AssertionError(f"no .hoodie directory in {rel}")


def snapshot(table_path):
    import hudi

    t = hudi.HudiTableBuilder.from_base_uri(os.path.abspath(table_path)).build()
    batches = t.read()
    return pa.Table.from_batches(batches) if batches else None


# ---------------------------------------------------------------- oracle (plain Python, 3-valued logic)


def _cmp(v, lit, fn):
    if v is None or lit is None:
        return None
    return fn(v, lit)


def ev(p, row):
    if isinstance(p, And):
        rs = [ev(c, row) for c in p.children]
        return False if False in rs else (None if None in rs else True)
    if isinstance(p, Or):
        rs = [ev(c, row) for c in p.children]
        return True if True in rs else (None if None in rs else False)
    assert isinstance(p, Leaf)
    v = row[p.name]
    op = p.op
    if op == "is_null":
        return v is None
    if op == "is_not_null":
        return v is not None
    if op == "equal":
        return _cmp(v, p.literal, lambda a, b: a == b)
    if op == "not_equal":
        return _cmp(v, p.literal, lambda a, b: a != b)
    if op == "less_than":
        return _cmp(v, p.literal, lambda a, b: a < b)
    if op == "greater_than":
        return _cmp(v, p.literal, lambda a, b: a > b)
    if op == "less_or_equal":
        return _cmp(v, p.literal, lambda a, b: a <= b)
    if op == "greater_or_equal":
        return _cmp(v, p.literal, lambda a, b: a >= b)
    if op in ("in", "not_in"):
        if v is None:
            return None
        if any(l is not None and v == l for l in p.literals):
            r = True
        elif any(l is None for l in p.literals):
            r = None
        else:
            r = False
        return r if op == "in" or r is None else (not r)
    if op == "starts_with":
        return None if v is None else v.startswith(p.literal)
    raise AssertionError(op)


def oracle_rows(table, pred):
    if table is None:
        return []
    rows = table.to_pylist()
    return [r for r in rows if pred is None or ev(pred, r) is True]


def norm(v):
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return ("ts", v.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat())
    if isinstance(v, dict):
        return tuple(sorted((k, norm(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(norm(x) for x in v)
    return v


def row_multiset(rows, columns=None):
    out = []
    for r in rows:
        cols = columns or sorted(r)
        out.append(repr(tuple((c, norm(r.get(c))) for c in cols)))
    return sorted(out)


# ---------------------------------------------------------------- predicates


def indexable(schema):
    out = []
    for f in schema:
        t = f.type
        if (
            pa.types.is_string(t)
            or pa.types.is_integer(t)
            or pa.types.is_boolean(t)
            or pa.types.is_date(t)
            or pa.types.is_timestamp(t)
            or pa.types.is_decimal(t)
        ):
            out.append(f.name)
    return out


_MISSING = {"string": "zz-not-there", "int": -987654}


def battery(table, columns, schema, max_single=5):
    """A list of predicates over ``columns`` built from the table's own values."""
    preds = []
    if table is None or table.num_rows == 0:
        c = columns[0]
        return [field(c).is_null(), field(c).is_not_null()]
    rows = table.to_pylist()

    def values(c):
        vs = sorted({r[c] for r in rows if r[c] is not None}, key=repr)
        return vs

    # prefer a spread of types among the single-column checks
    def kind(c):
        t = schema.field(c).type
        return "string" if pa.types.is_string(t) else "int" if pa.types.is_integer(t) else str(t)

    seen, singles = set(), []
    for c in columns:
        if kind(c) not in seen and not c.startswith("_hoodie"):
            seen.add(kind(c))
            singles.append(c)
    singles = singles[:max_single]
    for c in singles:
        vs = values(c)
        if not vs:
            preds += [field(c).is_null(), field(c).is_not_null()]
            continue
        v0, v1 = vs[0], vs[-1]
        preds += [
            field(c) == v0,
            field(c) != v0,
            field(c).isin([v0, v1]),
            field(c).notin([v1]),
            field(c).is_null(),
            field(c).is_not_null(),
        ]
        if kind(c) in _MISSING:
            preds.append(field(c) == _MISSING[kind(c)])
            preds.append(field(c).notin([v0, None]))
    if len(singles) >= 2:
        a, b = singles[0], singles[1]
        r0, r1 = rows[0], rows[-1]
        if r0[a] is not None and r0[b] is not None:
            preds.append((field(a) == r0[a]) & (field(b) == r0[b]))
            preds.append((field(a) == r0[a]) | (field(b) != r1[b] if r1[b] is not None else field(b).is_null()))
        if r0[a] is not None and r1[b] is not None:
            preds.append((field(a) == r0[a]) & (field(b) == r1[b]))
    # a leaf the index cannot answer (range on a non-indexed or indexed column), mixed with one it can
    ints = [c for c in singles if kind(c) == "int"]
    if ints and singles:
        iv = values(ints[0])
        if iv:
            preds.append((field(ints[0]) > iv[len(iv) // 2]) & field(singles[0]).is_not_null())
            preds.append(
                (field(ints[0]) <= iv[0])
                | (field(singles[0]) == values(singles[0])[0] if values(singles[0]) else field(singles[0]).is_null())
            )
    return preds
