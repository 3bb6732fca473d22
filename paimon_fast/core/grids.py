"""The grids of column types: the values a numeric, decimal, date, timestamp or time column
can hold, as exact rationals in grid units (:class:`_Grid` and one subclass per kind of type,
:func:`_grid` picks it), and how a literal lands on one (exactly, or its floor and ceiling).
:mod:`paimon_fast.core.literals` hands these names on."""

from __future__ import annotations

import datetime as _dt
import decimal
import math
from fractions import Fraction
from typing import Optional

import numpy as np
import pyarrow as pa

from ..errors import LiteralTypeError
from .literal_values import _EPOCH, _EPOCH_DATE, _TICKS, DecimalLiteral, epoch_seconds, plain_literal, seconds_of_day

_NAN = "nan"
_DEC = decimal.Context(prec=200)


# ---------------------------------------------------------------- grids


class _Grid:
    """The values a column type can hold, as exact rationals in grid units."""

    integral = True  # the grid is the integers in [lo, hi] (else floats)
    lo: Fraction
    hi: Fraction

    def __init__(self, name, t):
        self.name = name
        self.t = t

    def bad(self, v, why=""):
        return LiteralTypeError(self.name, self.t, v, why)

    def exact(self, v):  # pragma: no cover - abstract
        raise NotImplementedError

    def value(self, n: int):  # pragma: no cover - abstract
        raise NotImplementedError

    # integral grids
    def on(self, q):
        if q.denominator == 1 and self.lo <= q <= self.hi:
            return self.value(int(q))
        return None

    def floor(self, q):
        if q < self.lo:
            return None
        return self.value(int(min(math.floor(q), self.hi)))

    def ceil(self, q):
        if q > self.hi:
            return None
        return self.value(int(max(math.ceil(q), self.lo)))

    def is_max(self, v):
        return v == self.value(int(self.hi))

    def is_min(self, v):
        return v == self.value(int(self.lo))


def _number(g: _Grid, v, allow_str=False):
    """An exact rational (or ``_NAN`` / +-inf floats) of a numeric literal."""
    if isinstance(v, (bool, np.bool_)):
        raise g.bad(v, "a boolean is not a number")
    if isinstance(v, (np.datetime64, np.timedelta64, pa.Scalar)):
        raise g.bad(v, "not a number")
    if isinstance(v, np.generic):
        v = plain_literal(v)
    if isinstance(v, int):
        return Fraction(v)
    if isinstance(v, float):
        if math.isnan(v):
            return _NAN
        if math.isinf(v):
            return v
        return Fraction(v)
    if isinstance(v, str) and allow_str:
        try:
            v = decimal.Decimal(v.strip())
        except decimal.InvalidOperation:
            raise g.bad(v, "not a number") from None
    if isinstance(v, decimal.Decimal):
        if v.is_nan():
            return _NAN
        if v.is_infinite():
            return math.inf if v > 0 else -math.inf
        return Fraction(v)
    if isinstance(v, Fraction):
        return v
    raise g.bad(v, "not a number")


class _IntGrid(_Grid):
    def __init__(self, name, t):
        super().__init__(name, t)
        bits = t.bit_width
        if pa.types.is_signed_integer(t):
            self.lo, self.hi = Fraction(-(1 << (bits - 1))), Fraction((1 << (bits - 1)) - 1)
        else:
            self.lo, self.hi = Fraction(0), Fraction((1 << bits) - 1)

    def exact(self, v):
        q = _number(self, v)
        if isinstance(q, float):  # +-inf: beyond every value, NaN: nothing
            return Fraction(1 << 200) * (1 if q > 0 else -1)
        return q

    def value(self, n):
        return n


class _DecimalGrid(_Grid):
    def __init__(self, name, t):
        super().__init__(name, t)
        self.scale = t.scale
        m = Fraction(10**t.precision - 1)
        self.lo, self.hi = -m, m

    def exact(self, v):
        q = _number(self, v, allow_str=True)
        if isinstance(q, float):
            return Fraction(10**300) * (1 if q > 0 else -1)
        if q is _NAN:
            return q
        return q * 10**self.scale

    def value(self, n):
        return _DEC.scaleb(decimal.Decimal(n), -self.scale)


class _FloatGrid(_Grid):
    integral = False

    def __init__(self, name, t):
        super().__init__(name, t)
        self.np = np.float32 if t.bit_width == 32 else (np.float64 if t.bit_width == 64 else np.float16)

    def exact(self, v):
        if isinstance(v, DecimalLiteral):  # SQL: a decimal literal against a float column is a DOUBLE
            v = float(v)
        return _number(self, v)

    def direct(self, v):
        """``v`` as a float when it is one of this width already (keeps -0.0 and NaN), else None."""
        if isinstance(v, (float, np.floating)):
            f = float(v)
            if math.isnan(f) or float(self.np(f)) == f:
                return f
        return None

    def _fits(self, q):
        """The float of the column's width equal to q, or None."""
        if isinstance(q, float):
            return q  # +-inf
        try:
            with np.errstate(over="ignore"):
                f = self.np(float(q))
        except OverflowError:
            return None
        if not np.isfinite(f) or Fraction(float(f)) != q:
            return None
        return float(f)

    def on(self, q):
        return self._fits(q)

    def _near(self, q):
        try:
            with np.errstate(over="ignore"):
                c = self.np(float(q))
        except OverflowError:
            c = self.np(math.inf if q > 0 else -math.inf)
        if not np.isfinite(c):  # beyond the largest finite value of this width
            c = np.nextafter(c, self.np(0), dtype=self.np)
        return c

    def floor(self, q):
        if isinstance(q, float):
            return q
        with np.errstate(over="ignore"):
            return self._floor(q)

    def ceil(self, q):
        if isinstance(q, float):
            return q
        with np.errstate(over="ignore"):
            return self._ceil(q)

    def _floor(self, q):
        c = self._near(q)
        while Fraction(float(c)) > q:
            c = np.nextafter(c, self.np(-math.inf), dtype=self.np)
            if np.isinf(c):
                return float(c)
        while True:
            n = np.nextafter(c, self.np(math.inf), dtype=self.np)
            if np.isinf(n) or Fraction(float(n)) > q:
                return float(c)
            c = n

    def _ceil(self, q):
        c = self._near(q)
        while Fraction(float(c)) < q:
            c = np.nextafter(c, self.np(math.inf), dtype=self.np)
            if np.isinf(c):
                return float(c)
        while True:
            n = np.nextafter(c, self.np(-math.inf), dtype=self.np)
            if np.isinf(n) or Fraction(float(n)) < q:
                return float(c)
            c = n

    def is_max(self, v):
        return False  # a NaN row is not below +inf: never widen a float range to every row

    def is_min(self, v):
        return False


def _seconds(g: _Grid, v) -> Fraction:
    """Exact seconds since the epoch of a date / timestamp literal (:func:`epoch_seconds`)."""
    try:
        return epoch_seconds(v)
    except ValueError:
        raise g.bad(v, "not an ISO date or timestamp") from None
    except TypeError:
        raise g.bad(v, "not a date or timestamp") from None


class _DateGrid(_Grid):
    def __init__(self, name, t):
        super().__init__(name, t)
        self.lo, self.hi = Fraction(-(1 << 31)), Fraction((1 << 31) - 1)

    def exact(self, v):
        if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            return Fraction(int(v))  # days since the epoch, as Arrow's date32
        return _seconds(self, v) / 86400

    def value(self, n):
        try:
            return _EPOCH_DATE + _dt.timedelta(days=n)
        except OverflowError:
            return n  # beyond Python's dates: days since the epoch, as Arrow's date32 takes them


class _TimestampGrid(_Grid):
    def __init__(self, name, t):
        super().__init__(name, t)
        self.ticks = _TICKS[t.unit]
        self.tz = t.tz
        self.lo, self.hi = Fraction(-(1 << 63)), Fraction((1 << 63) - 1)

    def exact(self, v):
        if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            return Fraction(int(v))  # ticks of the column's unit, as Arrow
        return _seconds(self, v) * self.ticks

    def value(self, n):
        us, rem = divmod(n * 1_000_000, self.ticks)
        if not rem:
            try:
                d = _EPOCH + _dt.timedelta(microseconds=us)
            except OverflowError:
                d = None
            if d is not None:
                return d.replace(tzinfo=_dt.timezone.utc) if self.tz else d
        # finer than a datetime holds (nanoseconds) or beyond its years: a scalar of the column's
        # own type, which every reader takes by its value (the same form whatever is installed)
        return pa.scalar(n, self.t)


class _TimeGrid(_Grid):
    """TIME: ticks of the column's unit since midnight."""

    def __init__(self, name, t):
        super().__init__(name, t)
        self.ticks = _TICKS[t.unit]
        self.lo, self.hi = Fraction(0), Fraction(86400 * self.ticks - 1)

    def exact(self, v):
        if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            return Fraction(int(v))  # ticks of the column's unit, as Arrow
        try:
            return seconds_of_day(v) * self.ticks
        except ValueError:
            raise self.bad(v, "not a time of day (HH:MM[:SS[.fraction]])") from None
        except TypeError:
            raise self.bad(v, "not a time of day") from None

    def value(self, n):
        us, rem = divmod(n * 1_000_000, self.ticks)
        if rem:  # nanoseconds: a scalar of the column's type (datetime.time stops at microseconds)
            return pa.scalar(n, self.t)
        s, us = divmod(us, 1_000_000)
        return _dt.time(s // 3600, s // 60 % 60, s % 60, us)


def _grid(name, t: pa.DataType) -> Optional[_Grid]:
    if pa.types.is_integer(t):
        return _IntGrid(name, t)
    if pa.types.is_floating(t):
        return _FloatGrid(name, t)
    if pa.types.is_decimal(t):
        return _DecimalGrid(name, t)
    if pa.types.is_date(t):
        return _DateGrid(name, t)
    if pa.types.is_timestamp(t):
        return _TimestampGrid(name, t)
    if pa.types.is_time(t):
        return _TimeGrid(name, t)
    return None
