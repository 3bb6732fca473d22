"""What every file index format is: a writer fed column batches in row order that returns
Java's bytes, and a reader answering predicate leaves (REMAIN / SKIP / a row bitmap);
:func:`evaluate_tree` combines leaf answers as Paimon's ``FileIndexPredicate`` does."""

from __future__ import annotations

from typing import Callable

from ..core.literals import is_never, normalize_leaf, widen_to_keys
from ..core.predicate import And, Leaf, Or, Predicate
from ..core.result import REMAIN, SKIP, FileIndexResult
from ..io.source import Source
from ..core.types import DataType
from .options import Options


class FileIndexWriter:
    """Base class of index writers: feed column batches in row order, then ``finish()``."""

    index_type = "?"

    def __init__(self, dtype: DataType, options: Options):
        self.dtype = dtype
        self.options = options
        self.row_count = 0

    def write_batch(self, values) -> None:
        """Add a column batch (pyarrow / numpy / Python sequence; None = null)."""
        raise NotImplementedError

    def write(self, value) -> None:
        """Add one value (convenience; use :meth:`write_batch` for speed)."""
        self.write_batch([value])

    def finish(self) -> bytes:
        """The serialized index, byte-identical to Java's ``serializedBytes()``."""
        raise NotImplementedError


#: every comparison a reader holding each row's value (bit slices, code ranges) answers exactly
COMPARISON_OPS = frozenset(
    {
        "equal",
        "in",
        "less_than",
        "less_or_equal",
        "greater_than",
        "greater_or_equal",
        "between",
        "is_null",
        "is_not_null",
    }
)


class FileIndexReader:
    """Base class of index readers: a visitor over predicate leaves.

    Subclasses override ``visit_<op>`` methods (``visit_equal``, ``visit_in``...);
    an op without a method is answered REMAIN (the index cannot tell).
    """

    index_type = "?"

    def __init__(self, dtype: DataType, source: Source, options: Options):
        self.dtype = dtype
        self.source = source
        self.options = options

    def visit(self, leaf: Leaf) -> FileIndexResult:
        """Answer one leaf; its literals are first normalised to this index's
        column type (:func:`paimon_fast.core.literals.normalize_leaf`), so ``x < 5.5``
        on an INT index is asked as ``x <= 5`` and ``x = 5.5`` as no row."""
        widen = self.widen_coarse_keys
        last = self.__dict__.get("_last_norm")  # (a held reader is asked the same bound leaf each plan)
        if last is not None and last[0] is leaf and last[1] == widen:
            norm = last[2]
        else:
            norm = normalize_leaf(leaf, self._arrow_type(), ieee=False)
            grid = self._coarse_keys()
            if grid:
                norm = widen_to_keys(norm, grid)
            self.__dict__["_last_norm"] = (leaf, widen, norm)
        if norm is not leaf:
            if is_never(norm):  # no value of the column type satisfies the leaf
                return SKIP
            return evaluate_tree(norm, self.visit_normalized)
        return self.visit_normalized(leaf)

    #: the ops whose row bitmaps are exactly the rows where the leaf holds (SQL semantics), not a
    #: superset of them; readers of exact structures (bitmap, BSI, range bitmap) name theirs
    exact_ops: frozenset = frozenset()
    #: of those, the ones exact on string columns too (ranges compare keys as Java does)
    exact_string_ops: frozenset = frozenset({"equal", "in", "is_null", "is_not_null"})

    def answers_exactly(self, leaf: Leaf) -> bool:
        """Is a row bitmap this reader gives for ``leaf`` exactly the rows where it holds, so that
        a reader may take its rows without evaluating the predicate on them?  Never for FLOAT /
        DOUBLE (the index orders NaN and -0.0 as Java does, the exact filter as IEEE) nor for
        columns keyed coarser than their values (TIMESTAMP(7..9), TIME(4..9): the leaf is
        widened); else for the reader's :attr:`exact_ops`."""
        if leaf.op not in self.exact_ops:
            return False
        d = self.dtype
        root = getattr(d, "root", None)
        if root in ("FLOAT", "DOUBLE") or self._coarse_keys():
            return False
        if root in ("CHAR", "VARCHAR", "STRING", "BINARY", "VARBINARY", "BYTES"):
            return leaf.op in self.exact_string_ops
        return True

    def visit_normalized(self, leaf: Leaf) -> FileIndexResult:
        """Answer a leaf whose literals are already exact values of the column type."""
        fn = getattr(self, "visit_" + leaf.op, None)
        return REMAIN if fn is None else fn(leaf)

    #: TIMESTAMP(7..9) columns are keyed by microseconds, TIME(4..9) by milliseconds: widen leaves
    #: so that no row whose value matches is skipped (:func:`paimon_fast.core.literals.widen_to_keys`);
    #: False gives Java's own answers over the keys (e.g. ``!=`` drops rows in the literal's microsecond)
    widen_coarse_keys = True

    def _coarse_keys(self):
        """The keys' grid (per second) when Paimon's file indexes key this column's values coarser
        than they are: TIMESTAMP(7..9) by microseconds, TIME(4..9) by milliseconds; else None."""
        d = self.dtype
        if not self.widen_coarse_keys:
            return None
        if getattr(d, "is_timestamp", False) and (d.precision or 0) > 6:
            return 1_000_000
        if getattr(d, "root", None) == "TIME" and (d.precision or 0) > 3:
            return 1_000
        return None

    def _arrow_type(self):
        t = self.__dict__.get("_arrow_t", False)
        if t is False:
            try:
                t = self.dtype.to_arrow()
            except Exception:
                t = None
            self.__dict__["_arrow_t"] = t
        return t

    def evaluate(self, predicate: Predicate) -> FileIndexResult:
        """Answer a predicate whose leaves all refer to this index's column
        (the field names are not checked)."""
        return evaluate_tree(predicate, self.visit)

    def describe(self) -> dict:
        """What ``paimon-fast inspect`` shows about this index."""
        return {"index_type": self.index_type, "type": str(self.dtype), "size": self.source.size}


class EmptyFileIndexReader(FileIndexReader):
    """An index over no values (start = -1 in the container), as Java's
    ``EmptyFileIndexReader``: value predicates SKIP; ``is_null``, ``!=`` and
    ``NOT IN`` REMAIN (Java does not override them)."""

    index_type = "empty"

    _SKIP_OPS = frozenset(
        {
            "equal",
            "in",
            "is_not_null",
            "less_than",
            "less_or_equal",
            "greater_than",
            "greater_or_equal",
            "between",
            "starts_with",
            "ends_with",
            "contains",
            "like",
        }
    )

    def visit(self, leaf):
        return SKIP if leaf.op in self._SKIP_OPS else REMAIN


def evaluate_tree(predicate: Predicate, visit_leaf: Callable[[Leaf], FileIndexResult]) -> FileIndexResult:
    """Combine leaf answers as Paimon's ``FileIndexPredicate`` does (AND short-circuits on SKIP)."""
    if isinstance(predicate, Leaf):
        return visit_leaf(predicate)
    if isinstance(predicate, Or):
        res = None
        for c in predicate.children:
            r = evaluate_tree(c, visit_leaf)
            res = r if res is None else res.or_(r)
        return REMAIN if res is None else res
    if isinstance(predicate, And):
        res = None
        for c in predicate.children:
            r = evaluate_tree(c, visit_leaf)
            res = r if res is None else res.and_(r)
            if not res.remain:
                return res
        return REMAIN if res is None else res
    raise TypeError(f"not a predicate: {predicate!r}")
