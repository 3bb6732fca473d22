"""Predicates bound to a schema: the one place where literals are normalised.

A predicate as a user writes it names columns and holds literals in any form (``5.5``, ``"2024-01-02"``,
a numpy scalar).  :func:`bind` fixes it to a schema: every column must be there, and every literal
becomes an exact value of its column's type, with SQL's numeric answers
(:func:`paimon_fast.core.literals.normalize`: ``x < 5.5`` on INT is ``x <= 5``).

Every engine back end takes a bound predicate: the Arrow filter
(:func:`paimon_fast.read.arrow_filter.to_arrow_expression`, ``filter_table``), Spark columns
(:func:`paimon_fast.spark.columns.to_spark_column`), pypaimon's planner
(:func:`paimon_fast.paimon.predicates.to_pypaimon`) and the Hudi pruning.  Each calls :func:`bind`
on what it is given: a predicate already bound to the same column types comes back as it is, with
no work, so a read binds once, where it meets the table's schema, and hands the result on.

A bound predicate is a tree of ordinary nodes (a :class:`BoundLeaf` is a
:class:`~paimon_fast.core.predicate.Leaf`, ...), so every walker reads it unchanged; only its
root is marked, with the types it was bound to and the predicate as it was given.  Binding it to
other types (a file written with an older schema) starts again from the literals as given, not from
their normalised form: ``x < 5.5`` bound to INT is ``x <= 5``, which on DOUBLE means something else.
Combining or negating bound predicates gives plain ones, to be bound again (the "no row" form of a
leaf does not negate like the leaf: negate first, then bind).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from . import literals as _literals
from .predicate import And, Leaf, Or, Predicate


class Bound:
    """The mark of a bound predicate's root: ``bound_types`` (``{column: Arrow type or None}``
    for the columns it names; None: the column was not in the schema, ``missing="keep"``) and
    ``bound_source`` (the predicate as given)."""

    __slots__ = ()

    def plain(self) -> Predicate:
        """The same predicate as an unmarked node."""
        raise NotImplementedError

    def __eq__(self, other):  # equal to the same predicate, bound or not
        if isinstance(other, Bound):
            other = other.plain()
        return self.plain() == other

    def __hash__(self):
        return hash(self.plain())

    def fits(self, types: Mapping[str, Any], missing: str) -> bool:
        """Binding to ``types`` would give this predicate back: every column it names that
        ``types`` has was bound to that very type, and a column ``types`` lacks is allowed
        (``missing="keep"``: its leaves stay as they are, here as they were bound)."""
        for name, was in self.bound_types.items():
            now = types.get(name)
            if now is None:
                if missing == "error":
                    return False  # binding says so
            elif was is None or not (was is now or was.equals(now)):
                return False
        return True


@dataclass(frozen=True, eq=False, repr=False)
class BoundLeaf(Bound, Leaf):
    """A :class:`~paimon_fast.core.predicate.Leaf` bound to a schema (see the module doc)."""

    bound_types: Mapping[str, Any] = field(default=None, compare=False)
    bound_source: Optional[Predicate] = field(default=None, compare=False)

    def plain(self) -> Leaf:
        return Leaf(self.op, self.name, self.literals)

    __hash__ = Bound.__hash__
    __eq__ = Bound.__eq__


@dataclass(frozen=True, eq=False, repr=False)
class BoundAnd(Bound, And):
    """An :class:`~paimon_fast.core.predicate.And` bound to a schema (see the module doc)."""

    bound_types: Mapping[str, Any] = field(default=None, compare=False)
    bound_source: Optional[Predicate] = field(default=None, compare=False)

    def plain(self) -> And:
        return And(self.children)

    __hash__ = Bound.__hash__
    __eq__ = Bound.__eq__


@dataclass(frozen=True, eq=False, repr=False)
class BoundOr(Bound, Or):
    """An :class:`~paimon_fast.core.predicate.Or` bound to a schema (see the module doc)."""

    bound_types: Mapping[str, Any] = field(default=None, compare=False)
    bound_source: Optional[Predicate] = field(default=None, compare=False)

    def plain(self) -> Or:
        return Or(self.children)

    __hash__ = Bound.__hash__
    __eq__ = Bound.__eq__


def bind(predicate: Optional[Predicate], schema, *, missing: str = "error") -> Optional[Predicate]:
    """``predicate`` bound to ``schema`` (a pyarrow Schema, or ``{column: Arrow or Paimon type}``):
    its literals made exact values of their columns' types (see the module doc).

    Returns ``predicate`` itself when it is already bound to the same column types.  A column
    ``schema`` lacks raises :class:`~paimon_fast.errors.ColumnNotFoundError`; ``missing="keep"``
    keeps its leaves as they are.  A literal that cannot be compared with its column at all raises
    :class:`~paimon_fast.errors.LiteralTypeError`.  None stays None.
    """
    if predicate is None:
        return None
    types = _literals.arrow_types(schema)
    if isinstance(predicate, Bound) and predicate.fits(types, missing):
        return predicate
    if not isinstance(predicate, Predicate):
        raise TypeError(f"not a predicate: {predicate!r}")
    predicate = as_given(predicate)
    out = _literals.normalize(predicate, types, missing=missing)
    seen = {name: types.get(name) for name in predicate.fields()}
    if isinstance(out, Leaf):
        return BoundLeaf(out.op, out.name, out.literals, bound_types=seen, bound_source=predicate)
    if isinstance(out, And):
        return BoundAnd(out.children, bound_types=seen, bound_source=predicate)
    return BoundOr(out.children, bound_types=seen, bound_source=predicate)


def as_given(predicate: Predicate) -> Predicate:
    """``predicate`` with every bound part replaced by the predicate it was bound from (the
    literals as given), so that binding it to other types starts from them."""
    if isinstance(predicate, Bound):
        return as_given(predicate.bound_source)
    if isinstance(predicate, (And, Or)):
        kids = [as_given(c) for c in predicate.children]
        if any(a is not b for a, b in zip(kids, predicate.children)):
            return (And if isinstance(predicate, And) else Or).of(*kids)
    return predicate


def is_bound(predicate, schema, *, missing: str = "error") -> bool:
    """True when :func:`bind` would return ``predicate`` itself (bound to these column types)."""
    return isinstance(predicate, Bound) and predicate.fits(_literals.arrow_types(schema), missing)
