"""The progress line and counts (scbow.progress): fitted to the terminal, alive in logs, honest
after a resume."""

from __future__ import annotations

import io
import re

import pytest

from scbow import progress as progress_mod
from scbow.progress import Progress, megabytes, plural


class FakeTTY(io.StringIO):  # its width: the columns fixture
    def isatty(self):
        return True


@pytest.fixture
def columns(monkeypatch):
    def set_width(n):
        monkeypatch.setattr(progress_mod, "terminal_width", lambda stream, default=80: n)
    return set_width


def drawn_lines(stream) -> list[str]:
    return [part.rstrip() for part in stream.getvalue().split("\r") if part.strip()]


@pytest.mark.parametrize("width", [40, 60, 80, 120, 200])
def test_the_progress_line_fits_the_terminal_and_keeps_the_eta(columns, width):
    columns(width)
    stream = FakeTTY()
    bar = Progress(6_000_000, unit="ex", stream=stream, interval=0)
    bar.start -= 10  # ten seconds in: a rate and an ETA to show
    for done in (1_000_000, 3_000_000):
        bar.update(done, prefix="epoch 1/1 ", suffix="loss 1.2345")
    lines = drawn_lines(stream)
    assert len(lines) == 2  # no line drawn would pass the checks below
    for line in lines:
        assert len(line) <= width - 1, line
        assert "ETA" in line and "%" in line
    if width >= 120:
        assert "|" in lines[-1] and "loss 1.2345" in lines[-1]  # all parts fit


def test_off_a_terminal_plain_lines_come_at_intervals_and_a_resumed_run_rates_its_own(columns):
    stream = io.StringIO()
    bar = Progress(0, unit="ex", stream=stream, log_interval=0)  # the total given by update, as commands learn it
    for done in (100, 500, 1000):
        bar.update(done, prefix="epoch 1/1 ", suffix="loss 1.0", total=1000)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 and "\r" not in stream.getvalue()
    assert re.match(r"\[0:00:\d\d\] epoch 1/1 +50\.0% 500/1\.00K ex ", lines[1]), lines[1]
    quiet = io.StringIO()
    bytes_line = io.StringIO()
    Progress(0, unit="B", stream=bytes_line, log_interval=0).update(150_810_000)
    assert re.search(r"150\.81 MB [\d.]+ [KMG]?B/s", bytes_line.getvalue()), bytes_line.getvalue()  # not "150.81M B"
    bar = Progress(1000, unit="ex", stream=quiet)  # the default interval: a short run prints nothing
    bar.update(500)
    assert quiet.getvalue() == ""
    silent = io.StringIO()
    Progress(1000, stream=silent, quiet=True, log_interval=0).update(500)
    assert silent.getvalue() == ""
    assert plural(1, "thread") == "1 thread" and plural(2, "thread") == "2 threads"
    assert plural(1, "corpus", "corpora") == "1 corpus" and plural(3, "corpus", "corpora") == "3 corpora"
    columns(200)
    stream = FakeTTY()
    bar = Progress(1_000_000, unit="ex", stream=stream, interval=0, initial=900_000)
    bar.start -= 10
    bar.update(950_000, prefix="epoch 1/1 ")
    line = drawn_lines(stream)[-1]
    assert "5.00K ex/s" in line  # 50,000 examples in 10 s, not 950,000
    assert "ETA 0:00:10" in line  # 50,000 left at 5,000 a second


def test_one_eta_for_a_run_of_two_parts_runs_on_across_their_boundary():
    """RunETA on a fake clock: the sentence part's 1,000 examples at 10 a second, then the word part's
    3,000 sentences at 20 a second, a sentence estimated at twice an example's cost until measured."""
    from scbow.progress import RunETA

    eta = RunETA().part("sentence", 1000, cost=1.0).part("word", 3000, cost=2.0)
    assert eta.remaining() is None  # nothing measured: no number
    eta.record("sentence", 100, 10.0)  # the first batch is the baseline (it may hold compiling)
    assert eta.remaining() is None
    eta.record("sentence", 200, 20.0)  # 0.1 s an example; a sentence estimated at 0.2 s
    assert eta.remaining() == pytest.approx(800 * 0.1 + 3000 * 0.2)
    eta.record("sentence", 1000, 100.0)
    at_boundary = eta.remaining()
    assert at_boundary == pytest.approx(3000 * 0.2)  # the word part still to come is in the ETA
    eta.record("word", 300, 15.0)  # the word part's baseline: still the estimate, no restart
    assert eta.remaining() == pytest.approx(2700 * 0.2)
    eta.record("word", 600, 30.0)  # measured: 0.05 s a sentence
    assert eta.remaining() == pytest.approx(2400 * 0.05)
    eta.record("word", 3000, 150.0)
    assert eta.remaining() == 0.0
    # a resumed run inside the word part: the sentence part is done, the word part not yet measured
    resumed = RunETA().part("sentence", 1000, 1000, 1.0).part("word", 3000, 1500, 2.0)
    assert resumed.remaining() is None
    # a part with work left and no cost to scale by is not guessed
    assert RunETA().part("a", 10, cost=None).part("b", 10, cost=None).remaining() is None


def test_a_progress_line_shows_the_eta_it_is_given(columns):
    columns(200)
    stream = FakeTTY()
    left = [None]
    bar = Progress(1000, unit="ex", stream=stream, interval=0, eta=lambda: left[0])
    bar.start -= 10
    bar.update(500, prefix="epoch 1/1 ")
    assert "ETA -:--:--" in drawn_lines(stream)[-1]  # unknown, not the line's own 0:00:10
    left[0] = 3725.0
    bar.update(600, prefix="epoch 1/1 ")
    assert drawn_lines(stream)[-1].count("ETA") == 1 and "ETA 1:02:05" in drawn_lines(stream)[-1]


def test_sizes_say_something_however_small():
    assert [megabytes(n) for n in (1, 31, 999, 1_000, 99_949, 100_000, 56_500_000, 1_230_000_000)] == [
        "1 byte", "31 bytes", "999 bytes", "1.0 kB", "99.9 kB", "0.1 MB", "56.5 MB", "1.23 GB"]
