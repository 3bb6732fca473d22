"""Translate predicates between :mod:`paimon_fast.core.predicate` trees and
pypaimon's ``Predicate`` objects (both directions)."""

from __future__ import annotations

from typing import List, Optional

import pyarrow as pa

from ..core.predicate import ARRAY_OPS, And, Leaf, Or, Predicate, relax
from ..core.translate import Translator

# our op -> pypaimon method
TO_PYPAIMON = {
    "equal": "equal",
    "not_equal": "notEqual",
    "less_than": "lessThan",
    "less_or_equal": "lessOrEqual",
    "greater_than": "greaterThan",
    "greater_or_equal": "greaterOrEqual",
    "in": "in",
    "not_in": "notIn",
    "is_null": "isNull",
    "is_not_null": "isNotNull",
    "between": "between",
    "not_between": "notBetween",
    "starts_with": "startsWith",
    "ends_with": "endsWith",
    "contains": "contains",
    "like": "like",
}
FROM_PYPAIMON = {v: k for k, v in TO_PYPAIMON.items()}


def _field_names(fields_or_table) -> List[str]:
    if fields_or_table is None:
        return []
    if hasattr(fields_or_table, "field_names"):
        return list(fields_or_table.field_names)
    if hasattr(fields_or_table, "fields"):
        fields_or_table = fields_or_table.fields
    return [f if isinstance(f, str) else f.name for f in fields_or_table]


class PypaimonTranslator(Translator):
    """Predicates as pypaimon ``Predicate`` objects: pypaimon has every leaf we have but the
    ARRAY ones, so each leaf maps to its method by name."""

    def __init__(self, names: List[str]):
        from pypaimon.common.predicate import Predicate as PPredicate

        self.names = names
        self.make = PPredicate

    def leaf(self, p: Leaf):
        if p.name not in self.names:
            raise ValueError(f"field {p.name!r} is not in the table ({self.names})")
        method = TO_PYPAIMON.get(p.op)
        if method is None:
            raise TypeError(f"cannot translate {p!r} to a pypaimon predicate (pypaimon has no {p.op})")
        return self.make(
            method=method,
            index=self.names.index(p.name),
            field=p.name,
            literals=list(p.literals) if p.literals else None,
        )

    def all_of(self, exprs):
        return self.make(method="and", index=None, field=None, literals=exprs)

    def any_of(self, exprs):
        return self.make(method="or", index=None, field=None, literals=exprs)


# comparisons that NaN satisfies (IEEE, as pyarrow.compute and the exact filter): min / max
# statistics leave NaN out (pypaimon takes them with pyarrow's min / max), so they cannot
# rule these out in a file holding NaN
_NAN_TRUE_OPS = ("not_equal", "not_in", "not_between")


def _bad_escape(pattern: str) -> bool:
    """Does a LIKE pattern escape something other than %, _ or a backslash, or end in one?"""
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            if i + 1 == len(pattern) or pattern[i + 1] not in "%_\\":
                return True
            i += 1
        i += 1
    return False


def _plannable(leaf: Leaf, float_columns) -> bool:
    """Can pypaimon's planner (partition and min/max tests) take this leaf safely?"""
    if leaf.op in ARRAY_OPS:
        return False  # pypaimon has no ARRAY predicates
    if leaf.op not in ("is_null", "is_not_null") and any(v is None for v in leaf.literals):
        return False  # a null literal: pypaimon compares it with the min / max and raises
    if leaf.op in _NAN_TRUE_OPS and leaf.name in float_columns:
        return False
    if leaf.op == "like" and _bad_escape(leaf.literal):
        return False  # pypaimon raises on an escape before anything but % _ \ (ours: the character itself)
    if any(isinstance(v, pa.Scalar) for v in leaf.literals):
        # a value no Python object holds exactly (a nanosecond timestamp or time, normalised to a
        # pyarrow scalar of the column's type): pypaimon compares statistics with Python values
        return False
    return True


def for_planning(predicate: Optional[Predicate], fields_or_table=None) -> Optional[Predicate]:
    """The predicate handed to pypaimon's planner: ``predicate`` (normalised) with every
    leaf pypaimon cannot plan with exactly taken as TRUE (None: nothing is left):
    ARRAY ops, null literals, ``!=`` / ``NOT IN`` / ``NOT BETWEEN`` on FLOAT / DOUBLE
    columns of ``fields_or_table`` (a pypaimon table or its DataFields), which NaN rows
    satisfy though the statistics leave NaN out, and LIKE patterns with an escape
    pypaimon rejects.

    The result is implied by ``predicate``, so planning with it never drops a file
    or partition holding a matching row; the rows are filtered exactly afterwards."""
    fields = getattr(fields_or_table, "fields", fields_or_table) or ()
    floats = {f.name for f in fields if str(getattr(f, "type", "")).startswith(("FLOAT", "DOUBLE"))}
    return relax(predicate, lambda leaf: not _plannable(leaf, floats))


def to_pypaimon(predicate: Predicate, fields_or_table) -> "object":
    """A pypaimon ``Predicate`` for ``predicate``; field indexes are resolved
    against ``fields_or_table`` (a pypaimon table, a list of DataFields or of names).

    Raises ``ValueError`` for a field the table does not have.
    """
    return PypaimonTranslator(_field_names(fields_or_table)).translate(predicate)


def from_pypaimon(predicate) -> Optional[Predicate]:
    """Our predicate tree for a pypaimon ``Predicate`` (None stays None).

    Raises ``ValueError`` for a method we do not know."""
    if predicate is None:
        return None
    m = predicate.method
    if m in ("and", "or"):
        children = [from_pypaimon(c) for c in predicate.literals or ()]
        return And.of(*children) if m == "and" else Or.of(*children)
    op = FROM_PYPAIMON.get(m)
    if op is None:
        raise ValueError(f"pypaimon predicate method {m!r} has no paimon_fast equivalent")
    return Leaf(op, predicate.field, tuple(predicate.literals or ()))


def as_predicate(predicate) -> Optional[Predicate]:
    """Accept ours, a pypaimon ``Predicate`` or None."""
    if predicate is None or isinstance(predicate, Predicate):
        return predicate
    if hasattr(predicate, "method") and hasattr(predicate, "literals"):
        return from_pypaimon(predicate)
    raise TypeError(f"not a predicate: {predicate!r}")
