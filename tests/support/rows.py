"""Rows as plain Python values, for comparisons: an Arrow table's rows as sorted tuples, and the
row positions an index result keeps."""


def sorted_rows(table, columns=None):
    """The rows of an Arrow table as sorted tuples of ``columns`` (by default all, in order)."""
    columns = list(columns or table.column_names)
    return sorted(tuple(r[c] for c in columns) for r in table.select(columns).to_pylist())


def result_rows(res, n):
    """The positions an index result keeps of ``n`` rows: its bitmap's, or all of them or none."""
    from paimon_fast.core.result import BitmapResult

    if isinstance(res, BitmapResult):
        return set(res.bitmap)
    return set(range(n)) if res.remain else set()
