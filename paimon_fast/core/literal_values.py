"""Literals read by their value: the plain Python value a literal of any form holds
(:func:`plain_literal`), exact seconds since the epoch of a date or timestamp literal
(:func:`epoch_seconds`), exact seconds since midnight of a time of day (:func:`seconds_of_day`),
ISO timestamp text with every fraction digit (:func:`parse_timestamp`), and
:class:`DecimalLiteral` (a number with a decimal point in SQL text).
:mod:`paimon_fast.core.literals` hands these names on."""

from __future__ import annotations

import datetime as _dt
import decimal
import re
from fractions import Fraction

import numpy as np
import pyarrow as pa

_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_TICKS = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}


class DecimalLiteral(decimal.Decimal):
    """A number written with a decimal point in SQL text (``x = 1.255``), as Spark SQL reads one:
    exact against DECIMAL and integer columns (``1.255`` on a DECIMAL(9, 3) column is 1.255, not
    the double nearest it), the nearest DOUBLE against FLOAT / DOUBLE columns (``x = 0.1`` on a
    DOUBLE column holds for the double 0.1).  Everywhere else it is a ``decimal.Decimal``."""

    __slots__ = ()


def _utc_naive(d: _dt.datetime) -> _dt.datetime:
    if d.tzinfo is not None:
        d = d.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return d


# ---------------------------------------------------------------- literals read by their value
#
# Every literal form is read by the value it holds, never through a conversion that needs an
# optional package: pyarrow's ``as_py()`` of a nanosecond timestamp or time needs pandas (and
# truncates a time to microseconds with it), Python's ``fromisoformat`` drops digits past the
# microsecond (3.11+) or refuses them (3.10).  So a TimestampScalar is read by ``.value`` and its
# unit, a numpy datetime64 by its integer and its own unit, ISO text by its digits.

_NP_UNIT_SECONDS = {
    "W": Fraction(604800),
    "D": Fraction(86400),
    "h": Fraction(3600),
    "m": Fraction(60),
    "s": Fraction(1),
    "ms": Fraction(1, 10**3),
    "us": Fraction(1, 10**6),
    "ns": Fraction(1, 10**9),
    "ps": Fraction(1, 10**12),
    "fs": Fraction(1, 10**15),
    "as": Fraction(1, 10**18),
}
_ISO = re.compile(
    r"(?P<y>[+-]?\d{4,})-(?P<mo>\d{2})-(?P<d>\d{2})"
    r"(?:[T ](?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:[.,](?P<f>\d+))?)?)?"
    r"\s*(?P<tz>Z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)?"
)
_ISO_TIME = re.compile(r"(?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:[.,](?P<f>\d+))?)?")


def plain_literal(v):
    """A literal as the plain Python value it holds, read by its value.

    pyarrow scalars of numbers, decimals, booleans, strings and binaries become ``int``,
    ``float``, ``decimal.Decimal``, ``bool``, ``str``, ``bytes``; numpy scalars likewise
    (``np.float32(0.1)`` is the float32's exact value as a ``float``, a ``longdouble`` a
    :class:`fractions.Fraction`); null scalars and ``NaT`` are ``None``.  Temporal pyarrow scalars
    and numpy ``datetime64`` are returned as they are: :func:`epoch_seconds` and
    :func:`seconds_of_day` read them by value and unit against the column's type.
    """
    if v is None or isinstance(v, (str, int, float, decimal.Decimal, bytes)):
        return v
    if isinstance(v, pa.Scalar):
        if not v.is_valid:
            return None
        t = v.type
        if pa.types.is_dictionary(t):
            return plain_literal(v.value)
        if pa.types.is_temporal(t) or pa.types.is_nested(t):
            return v
        x = v.as_py()  # numbers, decimals, booleans, strings, binaries: no optional package involved
        return plain_literal(x) if isinstance(x, np.generic) else x
    if isinstance(v, (np.datetime64, np.timedelta64)):
        return None if np.isnat(v) else v
    if isinstance(v, np.generic):
        x = v.item()
        if isinstance(x, np.floating):  # longdouble: wider than a Python float
            return Fraction(*x.as_integer_ratio()) if np.isfinite(x) else float(x)
        return x
    if type(v).__name__ == "NaTType":
        return None
    return v


def _iso_fraction(digits) -> Fraction:
    return Fraction(int(digits), 10 ** len(digits)) if digits else Fraction(0)


def _iso_parts(text: str):
    """``(seconds since the epoch as written, UTC offset in seconds or None)`` of ISO text
    (``2020-01-01``, ``2020-01-01 10:00:00.123456789``, ``...Z``, ``...+03:00``), every fraction
    digit kept; None if it is not such text."""
    m = _ISO.fullmatch(text)
    if m is None:
        return None
    try:
        day = _dt.date(int(m["y"]), int(m["mo"]), int(m["d"]))
    except ValueError:
        return None
    h, mi, sec = int(m["h"] or 0), int(m["mi"] or 0), int(m["s"] or 0)
    if h > 23 or mi > 59 or sec > 59:
        return None
    local = Fraction((day - _EPOCH_DATE).days * 86400 + h * 3600 + mi * 60 + sec) + _iso_fraction(m["f"])
    tz = m["tz"]
    if not tz:
        return local, None
    if tz == "Z":
        return local, 0
    digits = tz[1:].replace(":", "")
    off = int(digits[0:2]) * 3600 + int(digits[2:4] or 0) * 60 + int(digits[4:6] or 0)
    return local, -off if tz[0] == "-" else off


def _iso_seconds(text: str):
    """Exact seconds since the epoch (UTC for text with an offset) of ISO text, or None."""
    parts = _iso_parts(text)
    if parts is None:
        return None
    local, off = parts
    return local - (off or 0)


def parse_timestamp(text: str):
    """A SQL ``TIMESTAMP '...'`` literal read exactly: a ``datetime`` (with a fixed-offset zone
    when the text has one) when it fits the microsecond, else a nanosecond pyarrow timestamp
    scalar (UTC when the text has an offset).  Raises ``ValueError`` for text that is not one."""
    s = text.strip()
    parts = _iso_parts(s)
    if parts is None:
        return _dt.datetime.fromisoformat(s)  # other ISO forms this Python reads, or its ValueError
    local, off = parts
    us = local * 1_000_000
    if us.denominator == 1:
        d = _EPOCH + _dt.timedelta(microseconds=int(us))
        return d if off is None else d.replace(tzinfo=_dt.timezone(_dt.timedelta(seconds=off)))
    ns = (local - (off or 0)) * 10**9
    if ns.denominator != 1:
        raise ValueError(f"{text!r} is finer than the nanosecond")
    return pa.scalar(int(ns), pa.timestamp("ns", tz=None if off is None else "UTC"))


def epoch_seconds(v) -> Fraction:
    """Exact seconds since 1970-01-01 (UTC for values with a time zone) of a date or timestamp
    literal of any form: ``datetime.date`` / ``datetime`` (a ``pandas.Timestamp`` with its
    nanoseconds), numpy ``datetime64`` of any unit, pyarrow timestamp (any unit, with or
    without a time zone) and date scalars, ISO text, ``(epoch millis, nanos of the milli)``.

    Raises ``TypeError`` for anything else (and ``ValueError`` for unreadable text)."""
    if isinstance(v, str):
        s = v.strip()
        q = _iso_seconds(s)
        if q is not None:
            return q
        try:  # other ISO forms Python reads (week dates, ...)
            d = _dt.datetime.fromisoformat(s) if ("T" in s or " " in s or ":" in s) else _dt.date.fromisoformat(s)
        except ValueError:
            try:
                return Fraction(pa.scalar(s).cast(pa.timestamp("ns")).value, 10**9)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise ValueError(f"{v!r} is not an ISO date or timestamp") from None
        return epoch_seconds(d)
    if isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, (int, np.integer)) for x in v):
        return Fraction(int(v[0]), 1000) + Fraction(int(v[1]), 10**9)  # (epoch millis, nanos of the milli)
    if isinstance(v, np.datetime64):
        if np.isnat(v):
            raise TypeError("NaT is not a value")
        unit, count = np.datetime_data(v.dtype)
        if unit in ("Y", "M"):  # calendar units: a whole number of days each
            v, unit, count = v.astype("datetime64[D]"), "D", 1
        if unit == "generic":
            raise TypeError(f"{v!r} has no unit")
        return int(v.astype(np.int64)) * count * _NP_UNIT_SECONDS[unit]
    if isinstance(v, _dt.datetime):
        extra_ns = getattr(v, "nanosecond", 0)  # pandas.Timestamp
        d = _utc_naive(v) - _EPOCH
        return Fraction(d.days * 86400 + d.seconds) + Fraction(d.microseconds, 10**6) + Fraction(extra_ns, 10**9)
    if isinstance(v, _dt.date):
        return Fraction((v - _EPOCH_DATE).days * 86400)
    if isinstance(v, pa.Scalar) and v.is_valid:
        t = v.type
        if pa.types.is_timestamp(t):
            return Fraction(v.value, _TICKS[t.unit])
        if pa.types.is_date32(t):
            return Fraction(v.value * 86400)
        if pa.types.is_date64(t):
            return Fraction(v.value, 1000)
    raise TypeError(f"{v!r} is not a date or timestamp")


def seconds_of_day(v) -> Fraction:
    """Exact seconds since midnight of a time-of-day literal: ``datetime.time`` (its time zone, if
    any, is ignored, as Arrow's time types have none), pyarrow time32 / time64 scalars of any unit,
    ``HH:MM[:SS[.fraction]]`` text.  Raises ``TypeError`` for anything else."""
    if isinstance(v, _dt.time):
        return Fraction(v.hour * 3600 + v.minute * 60 + v.second) + Fraction(v.microsecond, 10**6)
    if isinstance(v, pa.Scalar) and v.is_valid and pa.types.is_time(v.type):
        return Fraction(v.value, _TICKS[v.type.unit])
    if isinstance(v, str):
        m = _ISO_TIME.fullmatch(v.strip())
        if m and int(m["h"]) < 24 and int(m["mi"]) < 60 and int(m["s"] or 0) < 60:
            return Fraction(int(m["h"]) * 3600 + int(m["mi"]) * 60 + int(m["s"] or 0)) + _iso_fraction(m["f"])
        raise ValueError(f"{v!r} is not a time of day (HH:MM[:SS[.fraction]])")
    raise TypeError(f"{v!r} is not a time of day")
