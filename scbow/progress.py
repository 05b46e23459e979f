"""A dependency-free progress line on stderr, silent when stderr is not a terminal."""

from __future__ import annotations

import sys
import time


def _human(x: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.2f}{unit}"
    return f"{x:.0f}"


def _clock(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
    """``update(done, **fields)`` redraws at most every ``interval`` seconds."""

    def __init__(self, total: int, unit: str = "ex", enabled: bool | None = None, stream=None, interval: float = 0.25):
        self.stream = stream or sys.stderr
        if enabled is None:
            enabled = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.enabled = enabled
        self.total = total
        self.unit = unit
        self.interval = interval
        self.start = time.perf_counter()
        self._last = 0.0
        self._width = 0

    def update(self, done: int, prefix: str = "", suffix: str = "", force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        elapsed = now - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        if self.total:
            frac = min(done / self.total, 1.0)
            bar = "#" * int(20 * frac) + "-" * (20 - int(20 * frac))
            eta = (self.total - done) / rate if rate > 0 else 0.0
            text = (
                f"{prefix}{frac * 100:5.1f}% |{bar}| {_human(done)}/{_human(self.total)} {self.unit} "
                f"{_human(rate)} {self.unit}/s {suffix} ETA {_clock(eta)}"
            )
        else:
            text = f"{prefix}{_human(done)} {self.unit} {_human(rate)} {self.unit}/s {suffix}"
        pad = max(self._width - len(text), 0)
        self._width = len(text)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()

    def exclude(self, seconds: float) -> None:
        """Leave ``seconds`` spent on other work out of the rate and the ETA."""
        self.start += seconds

    def close(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
