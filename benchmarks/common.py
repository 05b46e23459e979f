"""What every benchmark needs: where the data is, what machine ran it, and how to save a report.

A report is one JSON file (every figure and setting, for machines) and one markdown file
(the same, for people) written side by side from an output prefix: ``--out
benchmarks/results/throughput`` gives ``throughput.json`` and ``throughput.md``.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"

CORPORA = {
    "1M": "corpus/gutenberg-1M.txt.xz",
    "10M": "corpus/gutenberg-10M.txt.xz",
    "100M": "corpus/gutenberg-100M.txt.xz",
}
# Environment variables that change what a benchmark measures.
RELEVANT_ENV = (
    "SCBOW_DATA",
    "SCBOW_CACHE_DIR",
    "NUMBA_NUM_THREADS",
    "NUMBA_THREADING_LAYER",
    "NUMBA_DISABLE_JIT",
    "NUMBA_CACHE_DIR",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES",
)


def data_dir() -> Path:
    """``$SCBOW_DATA``, else the shared data directory beside the checkout (never copied in)."""
    env = os.environ.get("SCBOW_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "data"


def corpus_path(name: str) -> Path:
    """Path of a named corpus (``1M``, ``10M``, ``100M``); exits with a hint when it is missing."""
    path = data_dir() / CORPORA[name]
    if not path.is_file():
        sys.exit(f"corpus {name} not found at {path}; set SCBOW_DATA to the shared data directory")
    return path


def _cpuinfo() -> tuple[str | None, int | None]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or None, None
    model = None
    logical = 0
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "processor":
            logical += 1
        elif key == "model name" and model is None:
            model = value.strip()
    return model or platform.processor() or None, logical or None


def _ram_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 2)
    except (OSError, ValueError, IndexError):
        pass
    return None


def parse_threads(text: str) -> list[int]:
    """Thread counts from ``"1,2,4"``, duplicates dropped, in order; ValueError says what is wrong."""
    try:
        threads = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ValueError(f"--threads must be comma-separated integers, got {text!r}") from None
    if not threads or min(threads) < 1:
        raise ValueError("--threads needs at least one thread count, each >= 1")
    return list(dict.fromkeys(threads))


def machine_info() -> dict:
    """CPU model, core counts, RAM, OS and the load average when it was called."""
    model, logical = _cpuinfo()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "cpu_model": model,
        "logical_cores": logical,  # processors listed in /proc/cpuinfo
        "os_cpu_count": os.cpu_count(),
        "usable_cores": usable,  # this process's CPU affinity (containers, taskset)
        "ram_gib": _ram_gib(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        # the machine may be shared: a load above zero before a run means competing work
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }


def versions(*extra: str) -> dict:
    """Versions of python, numpy, numba, llvmlite, scbow and any ``extra`` distributions."""
    out = {"python": platform.python_version()}
    for name in ("numpy", "numba", "llvmlite", *extra):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    try:
        import scbow

        out["scbow"] = scbow.__version__
    except ImportError:
        out["scbow"] = None
    return out


def git_info() -> dict:
    """Commit of the checkout and whether it had uncommitted changes; None outside git."""

    def git(*args):
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()

    try:
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def context() -> dict:
    """Everything about the run that is not a measurement."""
    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": [Path(sys.executable).name, "-m", _module_name(), *sys.argv[1:]],
        "machine": machine_info(),
        "versions": versions(),
        "git": git_info(),
        "env": {k: os.environ[k] for k in RELEVANT_ENV if k in os.environ},
    }


def _module_name() -> str:
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return spec.name if spec is not None else sys.argv[0]


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB (it never goes down)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)


class Timer:
    seconds: float = float("nan")


@contextmanager
def timed():
    """``with timed() as t: ...`` then ``t.seconds`` holds the wall-clock time of the block."""
    t = Timer()
    start = time.perf_counter()
    try:
        yield t
    finally:
        t.seconds = time.perf_counter() - start


def human(x: float | None, digits: int = 2) -> str:
    """12345678 -> '12.35M'; None -> 'n/a'."""
    if x is None:
        return "n/a"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.{digits}f}{unit}"
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def md_table(headers, rows) -> str:
    lines = ["| " + " | ".join(map(str, headers)) + " |", "|" + " --- |" * len(headers)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    return "\n".join(lines)


def context_markdown(ctx: dict) -> str:
    """The machine, versions and checkout of a report as a markdown section."""
    m, v, g = ctx["machine"], ctx["versions"], ctx["git"]
    commit = "n/a" if g["commit"] is None else g["commit"][:12] + (" (uncommitted changes)" if g["dirty"] else "")
    rows = [
        ("date (UTC)", ctx["date_utc"]),
        ("command", "`" + " ".join(ctx["command"]) + "`"),
        ("CPU", m["cpu_model"]),
        ("cores", f"{m['logical_cores']} logical, os.cpu_count {m['os_cpu_count']}, usable {m['usable_cores']}"),
        ("RAM", f"{m['ram_gib']} GiB"),
        ("load average at start (1/5/15 min)", m["load_average_1_5_15"]),
        ("platform", m["platform"]),
        ("versions", ", ".join(f"{k} {val}" for k, val in v.items())),
        ("git commit", commit),
    ]
    if ctx["env"]:
        rows.append(("environment", ", ".join(f"{k}={val}" for k, val in ctx["env"].items())))
    return "## Machine\n\n" + md_table(("", ""), rows)


def write_report(out: os.PathLike, data: dict, markdown: str) -> tuple[Path, Path]:
    """Write ``<out>.json`` and ``<out>.md``, creating the directory; returns both paths."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    json_path = out.with_name(out.name + ".json")
    md_path = out.with_name(out.name + ".md")
    json_path.write_text(json.dumps(data, indent=1, default=str) + "\n")
    md_path.write_text(markdown.rstrip() + "\n")
    return json_path, md_path
