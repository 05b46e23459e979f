"""The one parser of counts and the one of durations (``scbow.text.units``), as both flags use them."""

from __future__ import annotations

from functools import partial

import pytest

from scbow.text.units import MAX_EXAMPLES, parse_count, parse_duration
from scbow.training.checkpoint import Every, parse_every


@pytest.mark.parametrize("text, expected", [
    ("100k", Every(examples=100_000)), ("100K", Every(examples=100_000)), ("2M", Every(examples=2_000_000)),
    (" 10M ", Every(examples=10_000_000)), ("1e6", Every(examples=1_000_000)), ("2.5e5", Every(examples=250_000)),
    ("1_000", Every(examples=1000)), ("10m", Every(seconds=600.0)), ("1.5m", Every(seconds=90.0)),
    ("2 min", Every(seconds=120.0)), ("1.5h", Every(seconds=5400.0)), ("500000", Every(examples=500_000)),
    ("500_000", Every(examples=500_000)), ("30s", Every(seconds=30.0)), (250, Every(examples=250)),
    # whole in decimal, not in binary floating point: they were read as minutes (4.1M: 4.1 minutes)
    ("4.1M", Every(examples=4_100_000)), ("1.001M", Every(examples=1_001_000)), ("8.3M", Every(examples=8_300_000))])
def test_checkpoint_every_takes_counts_as_eval_every_does(text, expected):
    """One rule for counts: 100k, 2M, 1e6 everywhere; only in --checkpoint-every is a lowercase m minutes."""
    assert parse_every(text) == expected
    if expected.examples and isinstance(text, str):
        assert parse_count(text.replace("_", "")) == expected.examples  # --eval-every reads it alike


@pytest.mark.parametrize("parse, text, expected", [
    *((parse_count, t, n) for t, n in [("200000", 200000), ("200k", 200000), ("1M", 1000000), ("1.5m", 1500000),
                                       ("10m", 10_000_000), ("2e5", 200000), (" 7 ", 7)]),  # --eval-every 10m: millions
    *((parse_duration, t, n) for t, n in [("30s", 30), ("1.5h", 5400), ("2 min", 120), (" 10M ", 600)]),
])
def test_counts_and_durations(parse, text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize("parse, text", [
    *((parse_count, t) for t in ["-5", "0", "abc", "1.5", "k", "", "5x", "0.1k5", "\u0663M"]),  # ASCII digits only
    *((parse_every, t) for t in ["0", "-5", "0s", "abc", "10x", "nan", "infm", "1e5m", "", "m", True,
                                 "1.0000001M"]),  # an uppercase M is never minutes, even when it is not whole
    # a plain count takes only whole positive digits
    *((partial(parse_count, suffixes=False), t) for t in ["0", "-5", "1.5", "abc", "10k", str(MAX_EXAMPLES + 1), "9" * 60]),
    *((parse_duration, t) for t in ["0s", "400d", "1e9h", "9" * 50 + "h", "soon", ""]),
])
def test_bad_values_are_refused(parse, text):
    with pytest.raises(ValueError):
        parse(text)


def test_one_error_line_names_both_forms():
    with pytest.raises(ValueError, match=r"number of examples \(500000, 500k, 2M, 1e6\) or a duration .*"
                                         r"lowercase m is minutes, an uppercase M a million"):
        parse_every("True")
