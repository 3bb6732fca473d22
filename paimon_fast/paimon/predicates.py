"""Translate predicates between :mod:`paimon_fast.predicate` trees and
pypaimon's ``Predicate`` objects (both directions)."""
from __future__ import annotations

from typing import List, Optional

from ..predicate import And, Leaf, Or, Predicate
from ..translate import Translator

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
        return self.make(method=method, index=self.names.index(p.name), field=p.name,
                         literals=list(p.literals) if p.literals else None)

    def all_of(self, exprs):
        return self.make(method="and", index=None, field=None, literals=exprs)

    def any_of(self, exprs):
        return self.make(method="or", index=None, field=None, literals=exprs)


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

