"""SQL LIKE on global index keys, by Java's rules: :func:`like_optimize` turns a pattern
without ``_`` or ``\\`` into equality / prefix / suffix / substring (Java's
``LikeOptimization``); :func:`like_to_regex` and :func:`like_key_predicate` match
the other patterns against UTF-8 keys as Java's regex does.
"""

from __future__ import annotations

import re

_BEGIN = re.compile(r"([^%]+)%")
_END = re.compile(r"%([^%]+)")
_MIDDLE = re.compile(r"%([^%]+)%")
_NONE = re.compile(r"[^%]+")


def like_optimize(pattern: str):
    """Java ``LikeOptimization``: ``("equal" | "starts_with" | "ends_with" | "contains", literal)``
    for patterns without ``_`` and ``\\``, else None."""
    if "_" in pattern or "\\" in pattern:
        return None
    if _NONE.fullmatch(pattern):
        return "equal", pattern
    m = _BEGIN.fullmatch(pattern)
    if m:
        return "starts_with", m.group(1)
    m = _END.fullmatch(pattern)
    if m:
        return "ends_with", m.group(1)
    m = _MIDDLE.fullmatch(pattern)
    if m:
        return "contains", m.group(1)
    return None


# Java's '.' (no DOTALL) matches any code point except line terminators
_JAVA_DOT = "[^\n\r\u0085\u2028\u2029]"


def like_to_regex(pattern: str) -> str:
    """Java ``Like.sqlToRegexLike`` with ``\\`` as escape, as a Python regex."""
    out = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i == n - 1:
                raise ValueError(f"Invalid escape sequence '{pattern}', {i}")
            nxt = pattern[i + 1]
            if nxt not in ("_", "%", "\\"):
                raise ValueError(f"Invalid escape sequence '{pattern}', {i}")
            out.append(re.escape(nxt))
            i += 2
            continue
        if c == "_":
            out.append(_JAVA_DOT)
        elif c == "%":
            out.append("(?s:.*)")
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def like_key_predicate(pattern: str):
    """A predicate on key bytes matching Java's ``Like.test`` for a non-optimizable pattern:
    the byte-level chain checker for ``%``-only patterns, else the regex."""
    if "_" not in pattern and "\\" not in pattern:
        left = not pattern or pattern[0] != "%"
        right = not pattern or pattern[-1] != "%"
        segs = [s.encode("utf-8", "surrogatepass") for s in pattern.split("%") if s]

        def chain(key: bytes) -> bool:
            if len(key) < sum(len(s) for s in segs):
                return False
            if not segs:
                return not (left and right) or len(key) == 0
            if len(segs) == 1:
                s = segs[0]
                if left and right:
                    return key == s
                if left:
                    return key.startswith(s)
                if right:
                    return key.endswith(s)
                return s in key
            pos = 0
            if left:
                if not key.startswith(segs[0]):
                    return False
                pos = len(segs[0])
            else:
                f = key.find(segs[0])
                if f < 0:
                    return False
                pos = f + len(segs[0])
            for s in segs[1:-1]:
                f = key.find(s, pos)
                if f < 0:
                    return False
                pos = f + len(s)
            last = segs[-1]
            if right:
                return key.endswith(last) and len(key) - len(last) >= pos
            return key.find(last, pos) >= 0

        return chain
    rx = re.compile(like_to_regex(pattern))
    return lambda key: rx.fullmatch(key.decode("utf-8", "replace")) is not None
