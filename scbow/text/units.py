"""Numbers people type, each parser raising ValueError with a one-line message: counts (``500000``,
``500k``, ``2M``, ``2e5``), durations (``30s``, ``10m``, ``1.5h``), and the gold scores of STS, pairs
and word-pair files (:func:`gold_number`, ``MAX_GOLD``).
"""

from __future__ import annotations

import re
from decimal import Decimal

# examples: far past any run (a 100M-token corpus is 6M examples an epoch)
MAX_EXAMPLES = 10**15
MAX_SECONDS = 366 * 24 * 3600  # a year

_COUNT = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)(?:e(\d+))?\s*([kmg]?)\s*$", re.IGNORECASE | re.ASCII)
_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(s|sec|secs|m|min|mins|h|hr|hrs)")
_UNIT_SECONDS = {"s": 1, "sec": 1, "secs": 1, "m": 60, "min": 60, "mins": 60, "h": 3600, "hr": 3600, "hrs": 3600}


def parse_count(text, suffixes: bool = True, minimum: int = 1, what: str = "examples") -> int:
    """A whole number of ``what`` from ``minimum`` (0 where it means "no limit") to ``MAX_EXAMPLES``.

    With ``suffixes``: ``200000``, ``200k``, ``1M``, ``1.5m``, ``2e5``. Without (where ``m`` means
    minutes, as in ``--checkpoint-every``): digits, with ``_`` and ``,`` allowed as separators.
    """
    kind = "positive whole" if minimum >= 1 else "whole"
    s = str(text)
    if not suffixes:
        digits = s.strip().replace("_", "").replace(",", "")
        if not (digits.isascii() and digits.isdigit()) or len(digits) > 40:
            raise ValueError(f"{s[:40]!r} is not a {kind} number of {what}")
        value = int(digits) if len(digits) <= 16 else MAX_EXAMPLES + 1
    else:
        m = _COUNT.match(s) if len(s) <= 40 else None
        if not m:
            raise ValueError(f"{s[:40]!r} is not a {kind} number of {what} (such as 500000, 500k, 2M, 1e6)")
        exponent = int(m.group(2) or 0) if len(m.group(2) or "") <= 3 else 999
        # exact decimal arithmetic: 4.1M is 4,100,000 (a float makes it 4099999.9999999995, not whole)
        value = Decimal(m.group(1)) * Decimal(10) ** min(exponent, 300) * _SUFFIX[m.group(3).lower()]
    if not value <= MAX_EXAMPLES:
        raise ValueError(f"{s[:40]!r} is more {what} than any run has (at most {MAX_EXAMPLES:.0e})")
    if value < minimum or value != int(value):
        raise ValueError(f"{s[:40]!r} is not a {kind} number of {what} (such as 500000, 500k, 2M, 1e6)")
    return int(value)


def parse_duration(text) -> float:
    """Seconds of a positive duration such as ``30s``, ``10m``, ``1.5h``, at most a year."""
    s = str(text).strip().lower()
    m = _DURATION.fullmatch(s) if len(s) <= 40 else None
    seconds = float(m.group(1)) * _UNIT_SECONDS[m.group(2)] if m else 0.0
    if not 0 < seconds <= MAX_SECONDS:
        raise ValueError(f"{s[:40]!r} is not a duration from a second to a year (examples: 30s, 10m, 2h)")
    return seconds


MAX_GOLD = 1e6  # larger gold scores are damage, and their squares would overflow Pearson's sums


def gold_number(text: str) -> float:
    """A gold score's text as a float; ValueError for what is not a plain ASCII number."""
    if "_" in text or not text.isascii():  # '4_5' is 45 to float(), and so are other scripts' digits
        raise ValueError(text)
    return float(text)
