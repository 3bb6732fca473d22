"""Predicate trees over field names, built with Python operators.

    from paimon_fast import field
    p = (field("a") == 3) & (field("b").isin(["x", "y"]) | field("c").is_null())

Leaves carry an ``op`` from :data:`OPS` and literals as plain Python values;
index readers convert literals to their own key encoding.  A None literal is
SQL's NULL: ``field("a") == None`` (and ``!=``, ``<``..., ``IN``/``NOT IN`` with a
NULL, ``BETWEEN`` with a NULL bound, a NULL ``LIKE`` / ``startswith`` pattern) is never true,
as in Java Paimon, SQL, PySpark and pyarrow; ``.is_null()`` / ``.is_not_null()`` ask for
(non-)null rows.  ``~p`` negates a predicate where Paimon has the negated leaf (``=``/``!=``, ``<``/``>=``,
``IN``/``NOT IN``, ``IS NULL``/``IS NOT NULL``, AND/OR by De Morgan); string
predicates have no negation and raise ``TypeError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Tuple

# op -> number of literals (None = a list)
OPS = {
    "equal": 1,
    "not_equal": 1,
    "less_than": 1,
    "less_or_equal": 1,
    "greater_than": 1,
    "greater_or_equal": 1,
    "in": None,
    "not_in": None,
    "is_null": 0,
    "is_not_null": 0,
    "between": 2,
    "not_between": 2,
    "starts_with": 1,
    "ends_with": 1,
    "contains": 1,
    "like": 1,
    "array_contains": 1,
    "arrays_overlap": None,
    "array_contains_all": None,
}

ARRAY_OPS = frozenset({"array_contains", "arrays_overlap", "array_contains_all"})
#: the string predicates: one pattern, a ``str`` (``bytes`` taken as UTF-8) or None (SQL's NULL)
STRING_OPS = frozenset({"starts_with", "ends_with", "contains", "like"})

_NEGATION = {
    "equal": "not_equal",
    "not_equal": "equal",
    "less_than": "greater_or_equal",
    "greater_or_equal": "less_than",
    "less_or_equal": "greater_than",
    "greater_than": "less_or_equal",
    "in": "not_in",
    "not_in": "in",
    "is_null": "is_not_null",
    "is_not_null": "is_null",
    "between": "not_between",
    "not_between": "between",
}

_SQL = {
    "equal": "=",
    "not_equal": "!=",
    "less_than": "<",
    "less_or_equal": "<=",
    "greater_than": ">",
    "greater_or_equal": ">=",
}


class Predicate:
    """Base class of predicate nodes."""

    def __and__(self, other: "Predicate") -> "Predicate":
        return And.of(self, other)

    def __or__(self, other: "Predicate") -> "Predicate":
        return Or.of(self, other)

    def __invert__(self) -> "Predicate":
        return self.negate()

    def negate(self) -> "Predicate":  # pragma: no cover - abstract
        raise NotImplementedError

    def fields(self) -> set:
        """Names of the fields this predicate refers to."""
        raise NotImplementedError

    def leaves(self):
        raise NotImplementedError

    def __bool__(self):
        raise TypeError("a predicate has no truth value; use & | ~ instead of and / or / not")


@dataclass(frozen=True, eq=True)
class Leaf(Predicate):
    """One comparison: ``op`` applied to field ``name`` with ``literals``."""

    op: str
    name: str
    literals: Tuple[Any, ...] = ()

    def __post_init__(self):
        if self.op not in OPS:
            raise ValueError(f"unknown predicate op {self.op!r}")
        n = OPS[self.op]
        if n is not None and len(self.literals) != n:
            raise ValueError(f"{self.op} takes {n} literal(s), got {len(self.literals)}")
        if self.op in STRING_OPS and not isinstance(self.literals[0], (str, bytes, type(None))):
            # None is SQL's NULL pattern: true for no row, and no index answers it (as Java)
            raise TypeError(f"{self.op} needs a string literal, got {type(self.literals[0]).__name__}")

    @property
    def literal(self):
        return self.literals[0]

    def negate(self):
        neg = _NEGATION.get(self.op)
        if neg is None:
            raise TypeError(f"{self.op} cannot be negated (Paimon has no negated form)")
        return Leaf(neg, self.name, self.literals)

    def fields(self):
        return {self.name}

    def leaves(self):
        yield self

    def __repr__(self):
        r = _lit_repr
        if self.op in _SQL:
            return f"{self.name} {_SQL[self.op]} {r(self.literal)}"
        if self.op in ("in", "not_in"):
            return f"{self.name} {'IN' if self.op == 'in' else 'NOT IN'} {_list_repr(self.literals)}"
        if self.op in ("arrays_overlap", "array_contains_all"):
            return f"{self.op}({self.name}, {_list_repr(self.literals)})"
        if self.op in ("is_null", "is_not_null"):
            return f"{self.name} IS {'NULL' if self.op == 'is_null' else 'NOT NULL'}"
        if self.op in ("between", "not_between"):
            kw = "BETWEEN" if self.op == "between" else "NOT BETWEEN"
            return f"{self.name} {kw} {r(self.literals[0])} AND {r(self.literals[1])}"
        return f"{self.op}({self.name}, {r(self.literal)})"


def _lit_repr(v) -> str:
    try:
        return repr(v)
    except ValueError:  # a pyarrow nanosecond time's repr converts it, which needs pandas: show its value
        return f"<{type(v).__name__} {getattr(v, 'value', '?')} {getattr(v, 'type', '')}>"


def _list_repr(lits) -> str:
    return "[" + ", ".join(map(_lit_repr, lits)) + "]"


@dataclass(frozen=True)
class And(Predicate):
    children: Tuple[Predicate, ...]

    @staticmethod
    def of(*preds) -> Predicate:
        flat = []
        for p in preds:
            if not isinstance(p, Predicate):
                raise TypeError(f"cannot combine a predicate with {type(p).__name__}")
            flat.extend(p.children if isinstance(p, And) else (p,))
        return flat[0] if len(flat) == 1 else And(tuple(flat))

    def negate(self):
        return Or.of(*(c.negate() for c in self.children))

    def fields(self):
        return set().union(*(c.fields() for c in self.children))

    def leaves(self):
        for c in self.children:
            yield from c.leaves()

    def __repr__(self):
        return "(" + " AND ".join(map(repr, self.children)) + ")"


@dataclass(frozen=True)
class Or(Predicate):
    children: Tuple[Predicate, ...]

    @staticmethod
    def of(*preds) -> Predicate:
        flat = []
        for p in preds:
            if not isinstance(p, Predicate):
                raise TypeError(f"cannot combine a predicate with {type(p).__name__}")
            flat.extend(p.children if isinstance(p, Or) else (p,))
        return flat[0] if len(flat) == 1 else Or(tuple(flat))

    def negate(self):
        return And.of(*(c.negate() for c in self.children))

    def fields(self):
        return set().union(*(c.fields() for c in self.children))

    def leaves(self):
        for c in self.children:
            yield from c.leaves()

    def __repr__(self):
        return "(" + " OR ".join(map(repr, self.children)) + ")"


@dataclass(frozen=True)
class TopN:
    """``ORDER BY name [DESC] NULLS FIRST|LAST LIMIT k`` as Paimon's TopN.

    ``strict`` means this is the only sort key, so ties at the k-th value are
    trimmed to exactly k rows (Java's semantics).
    """

    name: str
    k: int
    descending: bool = True
    nulls_first: bool = False
    strict: bool = True


class Field:
    """A reference to a column, with operators that build predicate leaves."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        if not isinstance(name, str) or not name:
            from ..errors import InvalidArgumentError

            raise InvalidArgumentError(f"a column name must be a non-empty string, got {name!r}")
        self.name = name

    def __eq__(self, v):  # type: ignore[override]
        """``= v`` with SQL's meaning: ``field == None`` is an ``equal(null)`` leaf, true for
        no row (as in Java Paimon, SQL, PySpark and pyarrow); ask for nulls with :meth:`is_null`."""
        return Leaf("equal", self.name, (v,))

    def __ne__(self, v):  # type: ignore[override]
        """``!= v``; ``field != None`` is a ``not_equal(null)`` leaf, true for no row
        (use :meth:`is_not_null` for the non-null rows)."""
        return Leaf("not_equal", self.name, (v,))

    def __lt__(self, v):
        return Leaf("less_than", self.name, (v,))

    def __le__(self, v):
        return Leaf("less_or_equal", self.name, (v,))

    def __gt__(self, v):
        return Leaf("greater_than", self.name, (v,))

    def __ge__(self, v):
        return Leaf("greater_or_equal", self.name, (v,))

    __hash__ = None  # type: ignore[assignment]

    def equal(self, v):
        """``= v`` (the same leaf as ``==``; a None literal matches no row)."""
        return Leaf("equal", self.name, (v,))

    def not_equal(self, v):
        return Leaf("not_equal", self.name, (v,))

    def isin(self, values):
        return Leaf("in", self.name, tuple(values))

    def notin(self, values):
        return Leaf("not_in", self.name, tuple(values))

    is_in = isin
    not_in = notin

    def is_null(self):
        return Leaf("is_null", self.name)

    def is_not_null(self):
        return Leaf("is_not_null", self.name)

    def between(self, lo, hi):
        return Leaf("between", self.name, (lo, hi))

    def not_between(self, lo, hi):
        return Leaf("not_between", self.name, (lo, hi))

    def startswith(self, prefix):
        return Leaf("starts_with", self.name, (prefix,))

    def endswith(self, suffix):
        return Leaf("ends_with", self.name, (suffix,))

    def contains(self, sub):
        return Leaf("contains", self.name, (sub,))

    def like(self, pattern):
        """SQL LIKE with ``%`` / ``_`` wildcards and ``\\`` as the escape character."""
        return Leaf("like", self.name, (pattern,))

    starts_with = startswith
    ends_with = endswith

    # ARRAY columns (Spark SQL's names) --------------------------------------------
    def array_contains(self, value):
        """Rows whose array holds ``value`` (Spark's ``array_contains``; a None value: no rows)."""
        return Leaf("array_contains", self.name, (value,))

    def arrays_overlap(self, values):
        """Rows whose array shares an element with ``values`` (None literals never match;
        an empty list: no rows)."""
        return Leaf("arrays_overlap", self.name, tuple(values))

    def array_contains_all(self, values):
        """Rows whose array holds every one of ``values`` (any None literal: no rows; an
        empty list: every non-null array)."""
        return Leaf("array_contains_all", self.name, tuple(values))

    def top(self, k, nulls_first=False, strict=True) -> TopN:
        return TopN(self.name, k, True, nulls_first, strict)

    def bottom(self, k, nulls_first=False, strict=True) -> TopN:
        return TopN(self.name, k, False, nulls_first, strict)

    def __repr__(self):
        return f"field({self.name!r})"


def has_ops(predicate, ops) -> bool:
    """Does any leaf of ``predicate`` use one of ``ops``?"""
    return predicate is not None and any(leaf.op in ops for leaf in predicate.leaves())


def relax(predicate, ops=ARRAY_OPS):
    """``predicate`` with every leaf whose op is in ``ops`` (or, ``ops`` being a function,
    every leaf it is true of) taken as TRUE (None: nothing is left): a predicate implied
    by the original, for planners that do not know those ops (pypaimon has no ARRAY
    predicates); the rows are then filtered exactly."""
    if predicate is None:
        return None
    if isinstance(predicate, Leaf):
        return None if (ops(predicate) if callable(ops) else predicate.op in ops) else predicate
    kids = [relax(c, ops) for c in predicate.children]
    if isinstance(predicate, And):
        kids = [k for k in kids if k is not None]
        return And.of(*kids) if kids else None
    if any(k is None for k in kids):
        return None
    return Or.of(*kids)


def field(name: str) -> Field:
    """A column reference: ``field("a") == 3``."""
    return Field(name)
