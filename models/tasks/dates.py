"""Human-written date formats rendered from a ``datetime.date`` (the sources of the dates task).

Every format is written out by hand instead of with ``strftime`` so the month and weekday names
never depend on the machine's locale. Every format is unambiguous: the US order (month first) only
appears with ``/`` and the year last, the European order (day first) only with ``.`` or a month
name, and the two-digit year only for 1950-2049 (50..99 -> 19xx, 00..49 -> 20xx).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
MONTHS_ABBR = [m[:3] for m in MONTHS]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
WEEKDAYS_ABBR = [w[:3] for w in WEEKDAYS]

# Two-digit years are read with this pivot, so they are only generated inside the window.
TWO_DIGIT_YEAR_MIN, TWO_DIGIT_YEAR_MAX = 1950, 2049


def _ordinal(n: int) -> str:
    if 11 <= n % 100 <= 13:
        return f"{n}th"
    return str(n) + {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _month(d: _dt.date) -> str:
    return MONTHS[d.month - 1]


def _mon(d: _dt.date) -> str:
    return MONTHS_ABBR[d.month - 1]


# name -> renderer; the names are stable identifiers (tests and docs refer to them).
DATE_FORMATS: dict[str, Callable[[_dt.date], str]] = {
    "d_mon_yyyy": lambda d: f"{d.day} {_mon(d)} {d.year}",                  # 30 Nov 2026
    "month_d_yyyy": lambda d: f"{_month(d)} {d.day}, {d.year}",              # November 30, 2026
    "zh": lambda d: f"{d.year}年{d.month}月{d.day}日",                        # 2026年11月30日
    "mm/dd/yy": lambda d: f"{d.month:02d}/{d.day:02d}/{d.year % 100:02d}",   # 11/30/26
    "dd.mm.yyyy": lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}",           # 30.11.2026
    "weekday_month_d_yyyy":                                             # Monday, November 30, 2026
        lambda d: f"{WEEKDAYS[d.weekday()]}, {_month(d)} {d.day}, {d.year}",
    "yyyy/mm/dd": lambda d: f"{d.year}/{d.month:02d}/{d.day:02d}",           # 2026/11/30
    "mon_d_yyyy_lower": lambda d: f"{_mon(d).lower()} {d.day} {d.year}",     # nov 30 2026
    "m/d/yyyy": lambda d: f"{d.month}/{d.day}/{d.year}",                     # 11/30/2026
    "d_month_yyyy_upper": lambda d: f"{d.day} {_month(d).upper()} {d.year}", # 30 NOVEMBER 2026
    "dth_of_month_yyyy":                                                    # 30th of November 2026
        lambda d: f"{_ordinal(d.day)} of {_month(d)} {d.year}",
    "wkd_d_mon_yyyy":                                                       # Mon 30 Nov 2026
        lambda d: f"{WEEKDAYS_ABBR[d.weekday()]} {d.day} {_mon(d)} {d.year}",
}

_TWO_DIGIT_FORMATS = frozenset({"mm/dd/yy"})


def format_allowed(fmt: str, d: _dt.date) -> bool:
    """Whether ``fmt`` can render ``d`` unambiguously (two-digit years only inside 1950-2049)."""
    if fmt not in DATE_FORMATS:
        raise ValueError(f"unknown date format {fmt!r}; known: {', '.join(DATE_FORMATS)}")
    return fmt not in _TWO_DIGIT_FORMATS or TWO_DIGIT_YEAR_MIN <= d.year <= TWO_DIGIT_YEAR_MAX


def format_date(d: _dt.date, fmt: str) -> str:
    """``d`` written in the named format, e.g. ``format_date(date(2026, 11, 30), "zh")``."""
    if not format_allowed(fmt, d):
        raise ValueError(f"format {fmt!r} cannot write the year {d.year} unambiguously")
    return DATE_FORMATS[fmt](d)


def iso(d: _dt.date) -> str:
    """The target: ``YYYY-MM-DD``."""
    return d.isoformat()
