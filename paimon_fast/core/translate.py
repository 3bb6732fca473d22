"""One walk of the predicate tree for every back end that turns it into its own expressions.

A back end (the exact Arrow filter, Spark columns, pypaimon's predicates) subclasses
:class:`Translator` and says how its engine spells each piece; the walk over AND / OR, the
dispatch on the leaf's op and the SQL rules every back end shares live here once:

* a comparison with a NULL literal, and a string predicate (``LIKE``, ``startswith``...) with a
  NULL pattern, is true for no row (:meth:`Translator.never`);
* ``IN`` ignores NULL literals, ``NOT IN`` with a NULL literal is true for no row, and
  ``NOT IN`` is never true for a NULL value (``NOT IN ()`` is true for every row);
* ``BETWEEN lo AND hi`` is ``>= lo AND <= hi`` (never true with a NULL bound), ``NOT BETWEEN``
  its negation for non-null values (with a NULL bound, true where the other bound decides).

A back end overrides a leaf's ``op_<op>`` method where its engine's semantics differ (Arrow's
IEEE NaN in ``NOT BETWEEN``, say), or :meth:`Translator.leaf` as a whole where the engine has
every leaf natively (pypaimon).
"""

from __future__ import annotations

import functools
import operator
from typing import Any, List

from .predicate import STRING_OPS, And, Leaf, Or, Predicate

#: the comparison leaves, each with the Python operator that spells it on Arrow and Spark expressions
COMPARISONS = {
    "equal": operator.eq,
    "not_equal": operator.ne,
    "less_than": operator.lt,
    "less_or_equal": operator.le,
    "greater_than": operator.gt,
    "greater_or_equal": operator.ge,
}


class Translator:
    """Fold a predicate tree into a back end's expressions.

    A subclass implements the primitives (:meth:`compare`, :meth:`is_null`,
    :meth:`is_not_null`, :meth:`isin`, :meth:`all_of`, :meth:`any_of`, :meth:`negate`,
    :meth:`never`, :meth:`unknown`) and an ``op_<op>`` method for each leaf its engine spells its own way
    (the string and array predicates); the other leaves have SQL's meaning here.
    """

    def translate(self, predicate: Predicate):
        """The back end's expression that is true exactly where ``predicate`` is."""
        if isinstance(predicate, And):
            return self.all_of([self.translate(c) for c in predicate.children])
        if isinstance(predicate, Or):
            return self.any_of([self.translate(c) for c in predicate.children])
        if isinstance(predicate, Leaf):
            return self.leaf(predicate)
        raise TypeError(f"not a predicate: {predicate!r}")

    def leaf(self, p: Leaf):
        """One leaf: a comparison, or the ``op_<op>`` method of its op."""
        if p.op in COMPARISONS:
            return self.never(p) if p.literal is None else self.compare(p.op, p, p.literal)
        if p.op in STRING_OPS and p.literal is None:
            return self.never(p)  # x LIKE NULL is NULL: no row
        method = getattr(self, "op_" + p.op, None)
        if method is None:
            raise TypeError(f"{type(self).__name__} cannot translate the {p.op} predicate {p!r}")
        return method(p)

    # ------------------------------------------------------------ leaves with SQL's meaning
    def op_is_null(self, p: Leaf):
        return self.is_null(p)

    def op_is_not_null(self, p: Leaf):
        return self.is_not_null(p)

    def op_in(self, p: Leaf):
        values = [v for v in p.literals if v is not None]
        return self.isin(p, values) if values else self.never(p)

    def op_not_in(self, p: Leaf):
        if any(v is None for v in p.literals):
            return self.never(p)  # x NOT IN (..., NULL) is never true in SQL
        if not p.literals:
            return self.any_of([self.is_null(p), self.is_not_null(p)])  # NOT (x IN ()) holds for a NULL x too
        return self.all_of([self.negate(self.isin(p, list(p.literals))), self.is_not_null(p)])

    def op_between(self, p: Leaf):
        lo, hi = p.literals
        if lo is None or hi is None:
            return self.never(p)
        return self.all_of([self.compare("greater_or_equal", p, lo), self.compare("less_or_equal", p, hi)])

    def op_not_between(self, p: Leaf):
        # NOT (x >= lo AND x <= hi) for a non-null x: with a NULL bound that side is unknown, so
        # x NOT BETWEEN NULL AND 5 holds for x > 5 (SQL); as a negation rather than x < lo OR x > hi,
        # an IEEE NaN (which compares false) is NOT BETWEEN any bounds
        lo, hi = p.literals
        inside = self.all_of(
            [
                self.unknown(p) if lo is None else self.compare("greater_or_equal", p, lo),
                self.unknown(p) if hi is None else self.compare("less_or_equal", p, hi),
            ]
        )
        return self.all_of([self.negate(inside), self.is_not_null(p)])

    # ------------------------------------------------------------ primitives of a back end
    def compare(self, op: str, p: Leaf, value: Any):  # pragma: no cover - abstract
        """``column <op> value`` for one of :data:`COMPARISONS` (value is not None)."""
        raise NotImplementedError

    def is_null(self, p: Leaf):  # pragma: no cover - abstract
        raise NotImplementedError

    def is_not_null(self, p: Leaf):  # pragma: no cover - abstract
        raise NotImplementedError

    def isin(self, p: Leaf, values: List[Any]):  # pragma: no cover - abstract
        """Membership in ``values`` (no None among them, at least one)."""
        raise NotImplementedError

    # AND / OR / NOT: by default the ``&`` / ``|`` / ``~`` operators, as Arrow and Spark expressions
    # spell them (pypaimon, which has none, overrides all_of and any_of)
    def all_of(self, exprs: list):
        return functools.reduce(operator.and_, exprs)

    def any_of(self, exprs: list):
        return functools.reduce(operator.or_, exprs)

    def negate(self, expr):
        return ~expr

    def never(self, p: Leaf):  # pragma: no cover - abstract
        """An expression true for no row of ``p``'s column."""
        raise NotImplementedError

    def unknown(self, p: Leaf):  # pragma: no cover - abstract
        """SQL's UNKNOWN (a boolean NULL), as a comparison with NULL gives."""
        raise NotImplementedError
