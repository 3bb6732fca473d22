"""Seeded datasets of files each written its own way, against an oracle of the test's own.

Each seed writes 2-5 Parquet files by pyarrow with its own options (dictionary or not, chunks
whose encoding the native reader leaves to pyarrow, v2 pages, no page index, LZ4 or ZSTD, row
groups and pages of many sizes, nulls everywhere), builds file indexes of random kinds on random
columns, then reads random predicate trees (=, !=, ranges, BETWEEN, IN, NOT IN, IS [NOT] NULL,
LIKE prefixes, AND, OR); deletes rows twice; optimizes (a random cluster column or pair, strategy,
page and row-group size) and reads again.  Every read's rows (every column) and count equal a
Python evaluation of the predicate over the rows still alive, with SQL's rule that a comparison
with a null is not true.
"""

from __future__ import annotations

import operator
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_fast.tables import ParquetDataset

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string()), ("c", pa.string()), ("x", pa.float64()), ("q", pa.int32())])
WRITES = [
    {},
    {"use_dictionary": False},
    {"use_dictionary": False, "column_encoding": {"s": "DELTA_BYTE_ARRAY", "c": "DELTA_LENGTH_BYTE_ARRAY"}},
    {"use_dictionary": False, "column_encoding": {"id": "DELTA_BINARY_PACKED", "x": "BYTE_STREAM_SPLIT"}},
    {"compression": "zstd", "data_page_version": "2.0"},
    {"compression": "lz4", "write_page_index": False},
]
# the index kinds each column may get
KINDS = {
    "id": ["bloom-filter", "range-bitmap", "bsi", "bitmap"],
    "s": ["bloom-filter", "bitmap"],
    "c": ["bitmap", "bloom-filter"],
    "x": ["range-bitmap"],
    "q": ["bsi", "bitmap", "range-bitmap"],
}
CMP = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


class _Case:
    def __init__(self, root, seed):
        self.rng = np.random.default_rng(seed)
        self.r = random.Random(seed)
        self.tables, n0 = [], 0
        for k in range(int(self.rng.integers(2, 6))):
            n = int(self.rng.integers(1, 3000))
            t = self.table(n, n0)
            n0 += n
            opts = {
                "row_group_size": int(self.rng.integers(100, 2000)),
                "data_page_size": int(self.rng.choice([512, 4096, 1 << 20])),
                "write_batch_size": 128,
                "write_page_index": True,
            }
            opts.update(WRITES[int(self.rng.integers(0, len(WRITES)))])
            pq.write_table(t, str(root / f"part-{k:03d}.parquet"), **opts)
            self.tables.append(t)
        self.rows_n = n0
        self.full = pa.concat_tables(self.tables)
        self.rows = self.full.to_pylist()  # the id of a row is its number
        self.alive = set(range(n0))
        self.options = {}
        for col, kinds in KINDS.items():
            if self.r.random() < 0.7:
                key = f"file-index.{self.r.choice(kinds)}.columns"
                self.options[key] = f"{self.options[key]},{col}" if key in self.options else col

    def table(self, n, first):
        rng = self.rng
        return pa.Table.from_arrays(
            [
                pa.array(np.arange(first, first + n), pa.int64()),
                pa.array([f"k{v:05d}" for v in rng.integers(0, 3000, n)], pa.string(), mask=rng.random(n) < 0.1),
                pa.array(
                    [self.r.choice(["a", "b", "rare", "zz"]) for _ in range(n)], pa.string(), mask=rng.random(n) < 0.05
                ),
                pa.array(np.round(rng.random(n) * 100, 2), pa.float64(), mask=rng.random(n) < 0.05),
                pa.array(rng.integers(-5, 50, n).astype(np.int32), pa.int32(), mask=rng.random(n) < 0.05),
            ],
            schema=SCHEMA,
        )

    def literal(self, col):
        if col == "id":
            return int(self.rng.integers(-5, self.rows_n + 5))
        if col == "s":
            return f"k{int(self.rng.integers(0, 3000)):05d}"
        if col == "c":
            return self.r.choice(["a", "b", "rare", "zz", "none"])
        if col == "x":
            return float(np.round(self.rng.random() * 100, 2))
        return int(self.rng.integers(-6, 51))

    def leaf(self):
        """``(SQL text, the Python function of a row it means)``."""
        r = self.r
        col = r.choice(list(KINDS))
        op = r.choice([*CMP, "in", "not in", "is null", "is not null", "between", "like"])

        def sql(v):
            return f"'{v}'" if isinstance(v, str) else repr(v)

        if op == "like" and col in ("s", "c"):
            p = self.literal(col)[: r.randint(1, 3)]
            return f"{col} LIKE '{p}%'", lambda row: row[col] is not None and row[col].startswith(p)
        if op in ("is null", "is not null"):
            want = op == "is null"
            return f"{col} {op.upper()}", lambda row: (row[col] is None) == want
        if op in ("in", "not in"):
            vs = [self.literal(col) for _ in range(r.randint(1, 4))]
            inside = op == "in"
            text = f"{col} {op.upper()} ({', '.join(sql(v) for v in vs)})"
            return text, lambda row: row[col] is not None and (row[col] in vs) == inside
        if op == "between":
            a, b = sorted([self.literal(col), self.literal(col)])
            return f"{col} BETWEEN {sql(a)} AND {sql(b)}", lambda row: row[col] is not None and a <= row[col] <= b
        op = "=" if op == "like" else op
        v, fn = self.literal(col), CMP[op]
        return f"{col} {op} {sql(v)}", lambda row: row[col] is not None and fn(row[col], v)

    def predicate(self, depth=0):
        if depth >= 2 or self.r.random() < 0.5:
            return self.leaf()
        (a, fa), (b, fb) = self.predicate(depth + 1), self.predicate(depth + 1)
        if self.r.random() < 0.5:
            return f"({a}) AND ({b})", lambda row: fa(row) and fb(row)
        return f"({a}) OR ({b})", lambda row: fa(row) or fb(row)

    def check(self, ds, n, when):
        for _ in range(n):
            text, fn = self.predicate()
            want = sorted(i for i in self.alive if fn(self.rows[i]))
            read = ds.read(text)
            got = read.to_arrow().sort_by("id")
            assert got.column("id").to_pylist() == want, (when, text, self.options)
            assert ds.read(text).count() == len(want), (when, text, self.options)
            if want:  # every column of the rows, as written
                assert got.equals(self.full.take(pa.array(want))), (when, text, self.options)


@pytest.mark.parametrize("seed", range(8))
def test_reads_deletes_and_optimize_against_the_rows(tmp_path, seed):
    case = _Case(tmp_path, seed)
    ds = ParquetDataset(str(tmp_path))
    if case.options:
        ds.build(case.options)
    case.check(ds, 15, "built")
    for _ in range(2):
        text, fn = case.predicate()
        dead = {i for i in case.alive if fn(case.rows[i])}
        if len(dead) < 0.6 * len(case.alive):
            ds.delete(text)
            case.alive -= dead
            case.check(ds, 8, f"after DELETE WHERE {text}")
    by = case.r.choice(["x", "id", "q", "s", ["q", "x"]])
    strategy = case.r.choice(["order", "zorder", "hilbert"]) if isinstance(by, list) else "order"
    ds.optimize(by, strategy, page_rows=case.r.choice([64, 512, 4096]), row_group_rows=case.r.choice([300, 1 << 20]))
    case.check(ds, 15, f"after optimize({by!r}, {strategy!r})")
