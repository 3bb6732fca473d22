"""Index answers and how they combine, as Paimon's ``FileIndexResult``.

* :data:`REMAIN`: the file (or row range) may contain matches; read it.
* :data:`SKIP`: the index proves no row matches.
* :class:`BitmapResult`: exactly these row positions may match (pyroaring ``BitMap``).
* :data:`UNSUPPORTED`: the index cannot answer this predicate (global index).

Combination follows Java: ``REMAIN & x = x``, ``REMAIN | x = REMAIN``,
``SKIP & x = SKIP``, ``SKIP | x = x``; two bitmaps intersect / unite; a
bitmap with a non-bitmap result keeps the bitmap when the other remains
(AND) or becomes REMAIN (OR).
"""

from __future__ import annotations

from pyroaring import BitMap


class FileIndexResult:
    """Base class; :attr:`remain` says whether the file must still be read."""

    __slots__ = ()

    @property
    def remain(self) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def and_(self, other: "FileIndexResult") -> "FileIndexResult":
        return self if other.remain else SKIP

    def or_(self, other: "FileIndexResult") -> "FileIndexResult":
        return REMAIN if other.remain else self

    def __and__(self, other):
        return self.and_(other)

    def __or__(self, other):
        return self.or_(other)

    def __bool__(self):
        return self.remain


class _Remain(FileIndexResult):
    __slots__ = ()

    @property
    def remain(self):
        return True

    def and_(self, other):
        return other

    def or_(self, other):
        return self

    def __repr__(self):
        return "REMAIN"


class _Skip(FileIndexResult):
    __slots__ = ()

    @property
    def remain(self):
        return False

    def and_(self, other):
        return self

    def or_(self, other):
        return other

    def __repr__(self):
        return "SKIP"


class _Unsupported(FileIndexResult):
    """The index cannot answer; combines like REMAIN (read everything)."""

    __slots__ = ()

    @property
    def remain(self):
        return True

    def and_(self, other):
        return other

    def or_(self, other):
        return self

    def __repr__(self):
        return "UNSUPPORTED"


REMAIN = _Remain()
SKIP = _Skip()
UNSUPPORTED = _Unsupported()


class BitmapResult(FileIndexResult):
    """Exact row positions that may match. ``bitmap`` may be built lazily."""

    __slots__ = ("_bitmap", "_thunk")

    def __init__(self, bitmap=None, thunk=None):
        if bitmap is None and thunk is None:
            raise ValueError("BitmapResult needs a bitmap or a thunk")
        self._bitmap = bitmap
        self._thunk = thunk

    @classmethod
    def of_ranges(cls, ranges) -> "BitmapResult":
        """The rows of ``ranges``: ``(start, stop, ...)`` tuples (what follows stop is ignored)."""
        bm = BitMap()
        for r in ranges:
            bm.add_range(r[0], r[1])
        return cls(bm)

    @property
    def bitmap(self) -> BitMap:
        if self._bitmap is None:
            self._bitmap = self._thunk()
            self._thunk = None
        return self._bitmap

    @property
    def remain(self):
        return len(self.bitmap) > 0

    def and_(self, other):
        if isinstance(other, BitmapResult):
            return BitmapResult(self.bitmap & other.bitmap)
        return super().and_(other)

    def or_(self, other):
        if isinstance(other, BitmapResult):
            return BitmapResult(self.bitmap | other.bitmap)
        return super().or_(other)

    def __eq__(self, other):
        return isinstance(other, BitmapResult) and self.bitmap == other.bitmap

    __hash__ = None

    def __len__(self):
        return len(self.bitmap)

    def __repr__(self):
        b = self.bitmap
        return f"BitmapResult({len(b)} rows{': ' + str(list(b)) if len(b) <= 10 else ''})"
