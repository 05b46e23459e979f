"""The one parser of counts and the one of durations (``scbow.text.units``), as both flags use them."""

from __future__ import annotations

import pytest

from scbow.text.units import MAX_EXAMPLES, parse_count, parse_duration
from scbow.training.checkpoint import Every, parse_every


def test_m_is_millions_for_a_count_and_minutes_for_a_checkpoint_interval():
    assert parse_count("10m") == 10_000_000  # --eval-every 10m
    assert parse_every("10m") == Every(seconds=600.0)  # --checkpoint-every 10m
    assert parse_every("500_000") == Every(examples=500_000) == parse_every(500000)


@pytest.mark.parametrize("text, expected", [
    ("100k", Every(examples=100_000)), ("100K", Every(examples=100_000)), ("2M", Every(examples=2_000_000)),
    (" 10M ", Every(examples=10_000_000)), ("1e6", Every(examples=1_000_000)), ("2.5e5", Every(examples=250_000)),
    ("1_000", Every(examples=1000)), ("10m", Every(seconds=600.0)), ("1.5m", Every(seconds=90.0)),
    ("2 min", Every(seconds=120.0)), ("1.5h", Every(seconds=5400.0)), ("500000", Every(examples=500_000)),
    ("30s", Every(seconds=30.0)), (250, Every(examples=250))])
def test_checkpoint_every_takes_counts_as_eval_every_does(text, expected):
    """One rule for counts: 100k, 2M, 1e6 everywhere; only in --checkpoint-every is a lowercase m minutes."""
    assert parse_every(text) == expected
    if expected.examples and isinstance(text, str):
        assert parse_count(text.replace("_", "")) == expected.examples  # --eval-every reads it alike


@pytest.mark.parametrize("text, expected", [("200000", 200000), ("200k", 200000), ("1M", 1000000), ("1.5m", 1500000),
                                            ("2e5", 200000), (" 7 ", 7)])
def test_counts(text, expected):
    assert parse_count(text) == expected


@pytest.mark.parametrize("text", ["-5", "0", "abc", "1.5", "k", "", "5x", "0.1k5"])
def test_bad_counts(text):
    with pytest.raises(ValueError):
        parse_count(text)


@pytest.mark.parametrize("text", ["0", "-5", "0s", "abc", "10x", "nan", "infm", "1e5m", "", "m"])
def test_bad_checkpoint_intervals(text):
    with pytest.raises(ValueError):
        parse_every(text)


@pytest.mark.parametrize("text", ["0", "-5", "1.5", "abc", "10k", str(MAX_EXAMPLES + 1), "9" * 60])
def test_a_plain_count_takes_only_whole_positive_digits(text):
    with pytest.raises(ValueError):
        parse_count(text, suffixes=False)


@pytest.mark.parametrize("text, seconds", [("30s", 30), ("1.5h", 5400), ("2 min", 120), (" 10M ", 600)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["0s", "400d", "1e9h", "9" * 50 + "h", "soon", ""])
def test_bad_durations(text):
    with pytest.raises(ValueError):
        parse_duration(text)


def test_one_error_line_names_both_forms():
    with pytest.raises(ValueError, match=r"number of examples \(500000, 500k, 2M, 1e6\) or a duration .*"
                                         r"lowercase m is minutes, an uppercase M a million"):
        parse_every("True")
    with pytest.raises(ValueError):
        parse_every(True)


