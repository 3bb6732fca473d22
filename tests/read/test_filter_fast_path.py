"""filter_table's fast path (paimon_fast/read/arrow_filter.py, ``_simple_mask``): comparisons of a
flat numeric or string column with literals, and ANDs of them, are computed with compute functions
instead of an Acero expression.  The rows kept must be the expression's, nulls and NaNs included;
other predicates take the expression."""

import numpy as np
import pyarrow as pa
import pytest

from paimon_fast.core.literals import normalize
from paimon_fast.core.sqlpredicate import parse_predicate
from paimon_fast.read.arrow_filter import _simple_mask, filter_table, to_arrow_expression


def _table(n=500):
    rng = np.random.default_rng(7)
    f = rng.integers(-5, 6, n).astype(np.float64)
    f[rng.random(n) < 0.05] = np.nan
    return pa.table(
        {
            "i": pa.array(rng.integers(-5, 6, n), pa.int64(), mask=rng.random(n) < 0.1),
            "u": pa.array(rng.integers(0, 10, n), pa.uint16()),
            "f": pa.array(f, mask=rng.random(n) < 0.1),
            "g": pa.array(rng.random(n).astype(np.float32)),
            "s": pa.array([f"s{v}" for v in rng.integers(0, 9, n)], mask=rng.random(n) < 0.1),
            "d": pa.array([f"d{v}" for v in rng.integers(0, 3, n)]).dictionary_encode(),
        }
    )


def _rows(t):
    """The table's rows, a NaN as a string (NaN != NaN), dictionaries decoded."""
    return [tuple("NaN" if isinstance(v, float) and v != v else v for v in r.values()) for r in t.to_pylist()]


FAST = [
    "i = 2",
    "i < 0",
    "i <= -5",
    "i > 4",
    "i >= 3",
    "i BETWEEN -1 AND 1",
    "u < 3",
    "f < 0",
    "f >= 2.5",
    "f BETWEEN -2 AND 2",
    "s = 's3'",
    "s > 's6'",
    "s BETWEEN 's2' AND 's4'",
    "i < 3 AND f > -1 AND s <= 's5'",
    "g < 0.1",  # (normalized to the float32 below 0.1: held exactly)
]
SLOW = ["i != 2", "i IN (1, 2)", "s LIKE 's1%'", "i < 0 OR f > 0", "d = 'd1'", "i IS NULL", "u > -1"]


@pytest.mark.parametrize("where", FAST + SLOW)
def test_the_rows_of_the_expression(where):
    t = _table()
    p = normalize(parse_predicate(where), t.schema, missing="error")
    assert (_simple_mask(p, t) is not None) == (where in FAST)
    want = t.filter(to_arrow_expression(p, t.schema))
    got = filter_table(t, parse_predicate(where))
    assert _rows(got) == _rows(want), where
    assert 0 < want.num_rows < t.num_rows or where in ("u > -1", "i IS NULL")
