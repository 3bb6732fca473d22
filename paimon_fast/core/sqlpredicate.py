"""A SQL-like ``WHERE`` text -> :class:`paimon_fast.core.predicate.Predicate`.

    parse_predicate("country = 'DE' AND (score > 90 OR id IN (1, 2))")

Grammar (keywords are case-insensitive)::

    expr       := term (OR term)*
    term       := factor (AND factor)*
    factor     := NOT factor | '(' expr ')' | comparison
    comparison := column ( ('=' | '!=' | '<>' | '<' | '<=' | '>' | '>=') literal
                         | [NOT] IN '(' literal (',' literal)* ')'
                         | IS [NOT] NULL
                         | [NOT] BETWEEN literal AND literal
                         | LIKE 'pattern' )
                | literal op column                     (mirrored: 5 < x  ->  x > 5)
                | array_contains '(' column ',' literal ')'
                | (arrays_overlap | array_contains_all) '(' column ',' array '(' [literal (',' literal)*] ')' ')'
    column     := name | "quoted name" | `quoted name`
    literal    := 'string' ('' escapes a quote) | number | TRUE | FALSE | NULL
                | DATE 'yyyy-mm-dd' | TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.fffffffff][+hh:mm]'

``NOT`` is pushed down to the leaves (De Morgan), so it works wherever Paimon
has the negated leaf; ``NOT LIKE`` and ``NOT`` over a LIKE have no Paimon form
and are rejected.  ``LIKE 'abc%'``, ``'%abc'`` and ``'%abc%'`` (no other
wildcard or escape) become ``starts_with`` / ``ends_with`` / ``contains`` as
Paimon's Spark connector pushes them; other patterns stay ``like``.
``NULL`` is a literal with SQL's meaning: ``x = NULL``, ``x != NULL``, ``x < NULL``,
``x NOT IN (1, NULL)`` and ``BETWEEN`` with a NULL bound are never true (no rows);
``x IN (1, NULL)`` is ``x IN (1)``.  ``x IS [NOT] NULL`` asks for (non-)null rows.
Numbers read as Spark SQL reads them: ``5`` an integer, ``1.255`` a decimal (exact on DECIMAL
columns, the nearest DOUBLE on FLOAT / DOUBLE ones: :class:`paimon_fast.core.literals.DecimalLiteral`),
``1e3`` a DOUBLE.  ``TIMESTAMP '...'`` keeps every fraction digit: a ``datetime`` up to the
microsecond, a nanosecond pyarrow timestamp scalar past it (UTC when the text has an offset).
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import List, Tuple

from ..errors import PredicateError
from .literals import DecimalLiteral, parse_timestamp
from .predicate import And, Leaf, Or, Predicate

__all__ = ["parse_predicate", "PredicateSyntaxError"]


class PredicateSyntaxError(PredicateError):
    """The text is not a predicate this parser understands (message says where); a
    :class:`~paimon_fast.errors.PredicateError`, so a ``ValueError``."""


_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<str>'(?:[^']|'')*')
  | (?P<qid>"(?:[^"]|"")*"|`(?:[^`]|``)*`)
  | (?P<num>[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<op><=|>=|<>|!=|==|=|<|>)
  | (?P<punct>[(),])
  | (?P<word>[A-Za-z_][A-Za-z0-9_.$]*)
    """,
    re.VERBOSE,
)

_KEYWORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "LIKE", "TRUE", "FALSE", "DATE", "TIMESTAMP"}
_CMP = {
    "=": "equal",
    "==": "equal",
    "!=": "not_equal",
    "<>": "not_equal",
    "<": "less_than",
    "<=": "less_or_equal",
    ">": "greater_than",
    ">=": "greater_or_equal",
}
_MIRROR = {
    "equal": "equal",
    "not_equal": "not_equal",
    "less_than": "greater_than",
    "greater_than": "less_than",
    "less_or_equal": "greater_or_equal",
    "greater_or_equal": "less_or_equal",
}


_ARRAY_FUNCS = ("array_contains", "arrays_overlap", "array_contains_all")


def _tokenize(text: str) -> List[Tuple[str, object, int]]:
    toks = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m:
            raise PredicateSyntaxError(f"unexpected character {text[pos]!r} at offset {pos} in {text!r}")
        kind = m.lastgroup
        s = m.group()
        if kind == "str":
            toks.append(("lit", s[1:-1].replace("''", "'"), pos))
        elif kind == "qid":
            q = s[0]
            toks.append(("id", s[1:-1].replace(q + q, q), pos))
        elif kind == "num":
            if any(c in s for c in "eE"):
                v = float(s)  # 1e3: a DOUBLE literal
            elif "." in s:
                v = DecimalLiteral(s)  # 1.255: exact on DECIMAL columns, the nearest DOUBLE on floats
            else:
                v = int(s)
            toks.append(("lit", v, pos))
        elif kind == "op":
            toks.append(("op", s, pos))
        elif kind == "punct":
            toks.append((s, s, pos))
        elif kind == "word":
            up = s.upper()
            toks.append(("kw", up, pos) if up in _KEYWORDS else ("id", s, pos))
        pos = m.end()
    toks.append(("end", None, len(text)))
    return toks


class _Parser:
    def __init__(self, text):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    # ------------------------------------------------------------ helpers
    def peek(self, k=0):
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def fail(self, what, tok=None):
        tok = tok or self.peek()
        shown = "end of input" if tok[0] == "end" else repr(self.text[tok[2] : tok[2] + 20])
        raise PredicateSyntaxError(f"{what} at offset {tok[2]} (found {shown}) in {self.text!r}")

    def is_kw(self, word, k=0):
        t = self.peek(k)
        return t[0] == "kw" and t[1] == word

    def expect_kw(self, word):
        if not self.is_kw(word):
            self.fail(f"expected {word}")
        self.next()

    def expect(self, kind):
        if self.peek()[0] != kind:
            self.fail(f"expected {kind!r}")
        return self.next()

    # ------------------------------------------------------------ grammar
    def parse(self) -> Predicate:
        p = self.expr()
        if self.peek()[0] != "end":
            self.fail("unexpected text after the predicate")
        return p

    def expr(self):
        parts = [self.term()]
        while self.is_kw("OR"):
            self.next()
            parts.append(self.term())
        return Or.of(*parts)

    def term(self):
        parts = [self.factor()]
        while self.is_kw("AND"):
            self.next()
            parts.append(self.factor())
        return And.of(*parts)

    def factor(self):
        if self.is_kw("NOT"):
            tok = self.next()
            inner = self.factor()
            try:
                return inner.negate()
            except TypeError as e:
                self.fail(f"NOT cannot apply here: {e}", tok)
        if self.peek()[0] == "(":
            self.next()
            p = self.expr()
            self.expect(")")
            return p
        return self.comparison()

    def literal(self):
        t = self.peek()
        if t[0] == "lit":
            self.next()
            return t[1]
        if t[0] == "kw" and t[1] in ("TRUE", "FALSE"):
            self.next()
            return t[1] == "TRUE"
        if t[0] == "kw" and t[1] in ("DATE", "TIMESTAMP") and self.peek(1)[0] == "lit":
            self.next()
            s = self.next()[1]
            try:
                if t[1] == "DATE":
                    return _dt.date.fromisoformat(str(s))
                return parse_timestamp(str(s))  # every fraction digit kept (nanoseconds too)
            except ValueError:
                self.fail(f"bad {t[1]} literal {s!r}", t)
        if t[0] == "kw" and t[1] == "NULL":
            self.next()
            return None  # SQL NULL: a comparison with it is never true (x = NULL: no rows)
        self.fail("expected a literal")

    def column(self):
        t = self.peek()
        if t[0] != "id":
            self.fail("expected a column name")
        self.next()
        return t[1]

    def array_function(self):
        fn = str(self.next()[1]).lower()
        self.expect("(")
        name = self.column()
        self.expect(",")
        if fn == "array_contains":
            vals = (self.literal(),)
        else:
            t = self.peek()
            if not (t[0] == "id" and str(t[1]).lower() == "array" and self.text[t[2]] not in '"`'):
                self.fail(f"{fn} needs array(literal, ...) as its second argument")
            self.next()
            self.expect("(")
            vals = []
            if self.peek()[0] != ")":
                vals.append(self.literal())
                while self.peek()[0] == ",":
                    self.next()
                    vals.append(self.literal())
            self.expect(")")
            vals = tuple(vals)
        self.expect(")")
        return Leaf(fn, name, vals)

    def comparison(self):
        t = self.peek()
        if (
            t[0] == "id"
            and str(t[1]).lower() in _ARRAY_FUNCS
            and self.text[t[2]] not in '"`'
            and self.peek(1)[0] == "("
        ):
            return self.array_function()
        if t[0] != "id":
            # literal op column
            lit = self.literal()
            op = self.expect("op")[1]
            name = self.column()
            return Leaf(_MIRROR[_CMP[op]], name, (lit,))
        name = self.column()
        t = self.peek()
        if t[0] == "op":
            self.next()
            return Leaf(_CMP[t[1]], name, (self.literal(),))
        negated = False
        if self.is_kw("NOT"):
            self.next()
            negated = True
            if not (self.is_kw("IN") or self.is_kw("BETWEEN") or self.is_kw("LIKE")):
                self.fail("expected IN, BETWEEN or LIKE after NOT")
        if self.is_kw("IN"):
            self.next()
            self.expect("(")
            vals = [self.literal()]
            while self.peek()[0] == ",":
                self.next()
                vals.append(self.literal())
            self.expect(")")
            return Leaf("not_in" if negated else "in", name, tuple(vals))
        if self.is_kw("BETWEEN"):
            self.next()
            lo = self.literal()
            self.expect_kw("AND")
            hi = self.literal()
            return Leaf("not_between" if negated else "between", name, (lo, hi))
        if self.is_kw("LIKE"):
            tok = self.next()
            if negated:
                self.fail("NOT LIKE has no Paimon predicate", tok)
            pat = self.literal()
            if pat is None:
                return Leaf("like", name, (None,))  # LIKE NULL: no row
            if not isinstance(pat, str):
                self.fail("LIKE needs a string pattern", tok)
            return like_leaf(name, pat)
        if self.is_kw("IS"):
            self.next()
            neg = False
            if self.is_kw("NOT"):
                self.next()
                neg = True
            self.expect_kw("NULL")
            return Leaf("is_not_null" if neg else "is_null", name)
        self.fail(f"expected a comparison after column {name!r}")


def like_leaf(name: str, pattern: str) -> Leaf:
    """``LIKE pattern`` as the simplest Paimon leaf (starts_with / ends_with / contains / like)."""
    if "\\" not in pattern and "_" not in pattern:
        inner = pattern.strip("%")
        if "%" not in inner and inner:
            lead, trail = pattern.startswith("%"), pattern.endswith("%")
            if pattern == inner + "%" or (trail and not lead and pattern.rstrip("%") == inner):
                return Leaf("starts_with", name, (inner,))
            if lead and not trail and pattern.lstrip("%") == inner:
                return Leaf("ends_with", name, (inner,))
            if lead and trail:
                return Leaf("contains", name, (inner,))
    return Leaf("like", name, (pattern,))


def parse_predicate(text) -> Predicate:
    """Parse a SQL-like WHERE expression; a :class:`Predicate` is returned unchanged.

    Raises :class:`PredicateSyntaxError` (a ValueError) saying where the text is wrong.
    """
    if isinstance(text, Predicate):
        return text
    if not isinstance(text, str) or not text.strip():
        raise PredicateSyntaxError(f"empty or non-string predicate: {text!r}")
    return _Parser(text).parse()
