"""The one parser of counts and the one of durations (``scbow.text.units``), as both flags use them."""

from __future__ import annotations

import pytest

from scbow.text.units import MAX_EXAMPLES, parse_count, parse_duration
from scbow.training.checkpoint import Every, parse_every


def test_m_is_millions_for_a_count_and_minutes_for_a_checkpoint_interval():
    assert parse_count("10m") == 10_000_000  # --eval-every 10m
    assert parse_every("10m") == Every(seconds=600.0)  # --checkpoint-every 10m
    assert parse_every("500_000") == Every(examples=500_000) == parse_every(500000)


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
    with pytest.raises(ValueError, match=r"number of examples \(500000\) or a duration"):
        parse_every("True")
    with pytest.raises(ValueError):
        parse_every(True)
