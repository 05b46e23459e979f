"""A dependency-free progress report on stderr.

On a terminal: one line redrawn in place, fitted to its width (percent and ETA go last). Elsewhere
(a pipe, CI, a cluster job's log): a plain line every ``log_interval`` seconds, as gensim and
fastText log, so a long run shows it is alive without filling the log.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import time

LOG_INTERVAL = 30.0  # seconds between the plain progress lines when stderr is not a terminal


def human(x: float, spec: str = ".2f") -> str:
    """``1.50M``, ``12.00K``, ``950``; with ``spec="g"`` the short form of plot ticks: ``1.5M``, ``500K``."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:{spec}}{unit}"
    return f"{x:{'g' if spec == 'g' else '.0f'}}"


# Where the Python API's runs report (scbow.train): a logger instead of stderr, set by to_logging().
_LOGGER: contextvars.ContextVar = contextvars.ContextVar("scbow_progress_logger", default=None)


@contextlib.contextmanager
def to_logging(logger):
    """Within the block, this thread's :func:`note` and :class:`Progress` lines (plain ones, never
    redrawn) go to ``logger.info`` instead of stderr: the Python API reports through ``logging``."""
    token = _LOGGER.set(logger)
    try:
        yield logger
    finally:
        _LOGGER.reset(token)


def note(line: str) -> None:
    """One line on stderr, flushed (``logger.info`` inside :func:`to_logging`)."""
    logger = _LOGGER.get()
    if logger is not None:
        logger.info(line)
        return
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def clock(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def megabytes(n: int) -> str:
    """``56.5 MB``, or ``1.23 GB`` from a gigabyte on, ``12.3 kB`` or ``31 bytes`` below a tenth of a
    megabyte (where ``0.0 MB`` would say nothing): a size on disk or in memory."""
    if n < 1e3:
        return plural(int(n), "byte")
    if n < 1e5:
        return f"{n / 1e3:,.1f} kB"
    return f"{n / 1e6:,.1f} MB" if n < 1e9 else f"{n / 1e9:,.2f} GB"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 thread``, ``2 threads``, ``1,234 sentences``."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def listed(names, shown: int = 3, sep: str = ", ") -> str:
    """The first ``shown`` of ``names`` joined by ``sep``, then `` and N more`` for the rest."""
    names = [str(n) for n in names]
    return sep.join(names[:shown]) + (f" and {len(names) - shown:,} more" if len(names) > shown else "")


def terminal_width(stream, default: int = 80) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns or default
    except (AttributeError, OSError, ValueError):
        return default


class RunETA:
    """One ETA over a run of parts trained one after the other (the sentence part, then the word part).

    ``part(name, total, done, cost)``: ``total`` units, ``done`` already (a resumed run), ``cost`` of a unit
    relative to the other parts'. ``record(name, done, seconds)``: units done and seconds since the start.
    A part's rate is measured from its second record (the first may hold compiling), until then scaled by
    ``cost`` from the last part measured; with neither, :meth:`remaining` is None rather than wrong.
    """

    def __init__(self):
        self.parts: dict[str, dict] = {}

    def part(self, name: str, total: int, done: int = 0, cost: float | None = None) -> "RunETA":
        self.parts[name] = {"total": total, "done": done, "cost": cost, "base": None, "last": None}
        return self

    def record(self, name: str, done: int, seconds: float) -> None:
        p = self.parts[name]
        p["done"] = done
        p["base" if p["base"] is None else "last"] = (done, seconds)

    def seconds_per_unit(self, name: str) -> float | None:
        """The measured seconds of one unit of part ``name``, or None before it has a measurement."""
        p = self.parts[name]
        if p["base"] is None or p["last"] is None:
            return None
        units, seconds = p["last"][0] - p["base"][0], p["last"][1] - p["base"][1]
        return seconds / units if units > 0 and seconds > 0 else None

    def remaining(self) -> float | None:
        """Seconds left of the whole run, or None when there is nothing to estimate it from."""
        measured = [(name, s) for name, s in ((n, self.seconds_per_unit(n)) for n in self.parts) if s is not None]
        total = 0.0
        for name, p in self.parts.items():
            left = max(p["total"] - p["done"], 0)
            if not left:
                continue
            per_unit = self.seconds_per_unit(name)
            if per_unit is None:  # from the part measured last: the one running now
                known = next(((n, s) for n, s in reversed(measured) if self.parts[n]["cost"]), None)
                if known is None or not p["cost"]:
                    return None
                per_unit = known[1] * p["cost"] / self.parts[known[0]]["cost"]
            total += left * per_unit
        return total


class Progress:
    """``update(done, prefix, suffix, force, total)`` reports progress towards ``total`` (0: unknown; given to
    update: set anew); ``force`` draws now, not at the interval; ``close()`` ends the line. ``quiet=True`` is silent.

    ``initial``: work done before this process started (a resumed run), left out of the rate and the
    ETA. ``eta``: a callable giving the seconds left (None: unknown), such as :meth:`RunETA.remaining`.
    """

    def __init__(self, total: int, unit: str = "ex", quiet: bool = False, stream=None,
                 interval: float = 0.25, log_interval: float | None = None, initial: int = 0, eta=None):
        self.stream = stream or sys.stderr
        self.logger = _LOGGER.get() if stream is None else None
        self.tty = self.logger is None and bool(getattr(self.stream, "isatty", None) and self.stream.isatty())
        self.quiet = quiet
        self.total = total
        self.unit = unit
        self.interval = interval if self.tty else (LOG_INTERVAL if log_interval is None else log_interval)
        self.initial = initial
        self.eta = eta
        self.start = time.perf_counter()
        self._last = self.start  # a plain line only after the first interval: short work stays quiet
        self._width = 0
        self._drawn = False

    def _amount(self, x: float) -> str:
        """``1.50M ex``; bytes as ``150.81 MB`` (not ``150.81M B``)."""
        if self.unit == "B":
            text = human(x)
            return f"{text[:-1]} {text[-1]}B" if text[-1:] in "KMG" else f"{text} B"
        return f"{human(x)} {self.unit}"

    def _texts(self, done: int, prefix: str, suffix: str) -> list[str]:
        """The line from most to least detailed."""
        elapsed = time.perf_counter() - self.start
        rate = (done - self.initial) / elapsed if elapsed > 0 else 0.0
        speed = f"{self._amount(rate)}/s"
        tail = f" {suffix}" if suffix else ""
        if not self.total:
            count = self._amount(done)
            return [f"{prefix}{count} {speed}{tail}", f"{prefix}{count}"]
        frac = min(max(done / self.total, 0.0), 1.0)
        left = self.eta() if self.eta is not None else (self.total - done) / rate if rate > 0 else None
        eta = f"ETA {clock(left)}" if left is not None else "ETA -:--:--"
        pct = f"{frac * 100:5.1f}%"
        bar = "|" + "#" * int(20 * frac) + "-" * (20 - int(20 * frac)) + "|"
        count = f"{human(done)}/{self._amount(self.total)}"
        return [f"{prefix}{pct} {bar} {count} {speed}{tail} {eta}",
                f"{prefix}{pct} {count} {speed}{tail} {eta}",
                f"{prefix}{pct} {speed}{tail} {eta}",
                f"{prefix}{pct} {eta}",
                f"{pct} {eta}"]

    def update(self, done: int, prefix: str = "", suffix: str = "", force: bool = False, total: int | None = None) -> None:
        self.total = self.total if total is None else total
        if self.quiet:
            return
        now = time.perf_counter()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        texts = self._texts(done, prefix, suffix)
        if not self.tty:
            line = f"[{clock(now - self.start)}] {texts[1 if self.total else 0]}"
            if self.logger is not None:
                self.logger.info(line)
            else:
                self.stream.write(line + "\n")
                self.stream.flush()
            return
        room = terminal_width(self.stream) - 1  # the last column would wrap on some terminals
        text = next((t for t in texts if len(t) <= room), texts[-1][:room])
        pad = max(self._width - len(text), 0)
        self._width = len(text)
        self._drawn = True
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()

    def exclude(self, seconds: float) -> None:
        """Leave ``seconds`` spent on other work out of the rate and the ETA."""
        self.start += seconds

    def close(self) -> None:
        if not self.quiet and self.tty and self._drawn:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._drawn = False
