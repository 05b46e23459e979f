"""What every benchmark needs, defined once: data paths, the machine, reports, progress lines,
memory, statistics of repeats and fresh-process workers.

- Data: :func:`data_dir` (``$SCBOW_DATA`` or ``../shared/data``), :func:`corpus_path`.
- A report is one JSON file (every figure and setting, for machines) and one markdown file
  (the same, for people) written side by side from an output prefix by :func:`write_report`:
  ``--out benchmarks/results/speed`` gives ``speed.json`` and ``speed.md``. Both record the
  machine, the thread counts, the versions and the checkout (:func:`context`).
- :func:`say`: the one progress line on stderr.
- :func:`memory_mib`: the one memory measurement (``VmRSS`` and ``VmHWM``, the peak, of this
  process); :func:`peak_rss_mib` is its peak; :func:`reset_peak` starts a new peak.
- :func:`run_worker`: one job of a ``benchmarks`` module in a fresh Python process, its last
  stdout line read as JSON.

Nothing here imports numba, torch or ``scbow.training``: the suites do, through its public names.
"""

from __future__ import annotations

import datetime
import json
import lzma
import os
import platform
import resource
import shutil
import statistics
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
    """``$SCBOW_DATA``, else the shared data directory beside the checkout (never copied in):
    the library's one rule (:func:`scbow.use.data.data_dir`)."""
    from scbow.use.data import data_dir as library_data_dir

    return library_data_dir()


def corpus_path(name: str) -> Path:
    """Path of a named corpus (``1M``, ``10M``, ``100M``); exits with a hint when it is missing."""
    path = data_dir() / CORPORA[name]
    if not path.is_file():
        sys.exit(f"corpus {name} not found at {path}; set SCBOW_DATA to the shared data directory")
    return path


def plain_text(name: str, work: Path, lines: int | None = None) -> tuple[Path, dict]:
    """The corpus ``name`` (its first ``lines`` lines) as plain text in ``work``, decompressed once
    and reused while the source file is unchanged; and what it took."""
    src = corpus_path(name)
    work.mkdir(parents=True, exist_ok=True)
    out = work / (src.name.removesuffix(".xz") if lines is None else f"{name}-{lines}.txt")
    stamp = out.with_name(out.name + ".source")
    st = src.stat()
    want = f"{src.resolve()} {st.st_size} {st.st_mtime_ns} {lines}"
    if out.is_file() and stamp.is_file() and stamp.read_text() == want:
        return out, {"reused": True, "bytes": out.stat().st_size}
    say(f"decompressing {src.name}{'' if lines is None else f' (first {lines:,} lines)'} into {work}")
    tmp = out.with_name(out.name + ".tmp")
    t0 = time.perf_counter()
    with lzma.open(src, "rb") as fin, open(tmp, "wb") as fout:
        if lines is None:
            shutil.copyfileobj(fin, fout, 1 << 23)
        else:
            for _, line in zip(range(lines), fin):
                fout.write(line)
    seconds = time.perf_counter() - t0
    os.replace(tmp, out)
    stamp.write_text(want)
    size = out.stat().st_size
    return out, {"reused": False, "bytes": size, "seconds": round(seconds, 3), "mb_per_s": round(size / 1e6 / seconds, 1)}


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


def checkout_commit(root: os.PathLike = REPO_ROOT) -> str | None:
    """The commit checked out at ``root``, read from its ``.git`` files (no git process); None
    outside git. Works for a main checkout and for a linked worktree (``.git`` is a file)."""
    root = Path(root)
    try:
        git = root / ".git"
        if git.is_file():  # a worktree: "gitdir: <path>"
            git = Path(git.read_text().split(":", 1)[1].strip())
            if not git.is_absolute():
                git = (root / git).resolve()
        common = git
        if (git / "commondir").is_file():
            common = (git / (git / "commondir").read_text().strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head
        ref = head.split(":", 1)[1].strip()
        for base in (git, common):
            if (base / ref).is_file():
                return (base / ref).read_text().strip()
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                if line.endswith(" " + ref):
                    return line.split()[0]
    except (OSError, IndexError):
        pass
    return None


def git_info(root: os.PathLike = REPO_ROOT) -> dict:
    """Commit of the checkout and whether it had uncommitted changes; None outside git.

    ``dirty`` asks ``git status`` (read-only, no optional locks taken, so it never gets in
    the way of a commit running beside it); ``SCBOW_BENCH_NO_GIT=1`` skips that question.
    """
    commit = checkout_commit(root)
    dirty = None
    if commit is not None and not os.environ.get("SCBOW_BENCH_NO_GIT"):
        try:
            dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                        capture_output=True, text=True, timeout=10, check=True,
                                        env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"}).stdout.strip())
        except (OSError, subprocess.SubprocessError):
            dirty = None
    return {"commit": commit, "dirty": dirty}


def numba_threads() -> int | None:
    """Threads numba may use here (``NUMBA_NUM_THREADS``, default the cores); None without numba."""
    try:
        import numba
    except ImportError:
        return None
    return numba.config.NUMBA_NUM_THREADS


def context(*extra_versions: str, threads=None) -> dict:
    """Everything about the run that is not a measurement: date, command, machine, the thread
    counts measured (``threads``) and available, versions (plus ``extra_versions``), checkout."""
    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": [Path(sys.executable).name, "-m", _module_name(), *sys.argv[1:]],
        "machine": machine_info(),
        "threads": {"measured": threads, "numba_available": numba_threads()},
        "versions": versions(*extra_versions),
        "git": git_info(),
        "env": {k: os.environ[k] for k in RELEVANT_ENV if k in os.environ},
    }


def _module_name() -> str:
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return spec.name if spec is not None else sys.argv[0]


def say(message: str) -> None:
    """A progress line on stderr, flushed, with the time of day: the one way every suite tells
    what it is doing (reports go to files and stdout, progress to stderr)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def memory_mib() -> dict:
    """``VmRSS`` (resident now) and ``VmHWM`` (peak resident) of this process, in MiB.

    Read from ``/proc/self/status``; where that is missing (macOS), the peak comes from
    ``getrusage`` and there is no ``VmRSS``.
    """
    out = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = round(int(value.split()[0]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    if "VmHWM" not in out:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        # Linux reports KiB, macOS bytes
        out["VmHWM"] = round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)
    return out


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (or since :func:`reset_peak`), in MiB."""
    return memory_mib()["VmHWM"]


def reset_peak() -> bool:
    """Reset the peak (``VmHWM``) to the current RSS (Linux >= 4.0); False where not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def stats(values) -> dict:
    """Median, min, max, count and relative spread ((max - min) / median) of a list of numbers."""
    values = [float(v) for v in values]
    med = statistics.median(values)
    return {"median": round(med, 6), "min": round(min(values), 6), "max": round(max(values), 6), "n": len(values),
            "spread": round((max(values) - min(values)) / med, 4) if med else None}


def have(module: str) -> bool:
    """Whether ``module`` can be imported (without importing it)."""
    import importlib.util

    return importlib.util.find_spec(module) is not None


class WorkerError(RuntimeError):
    """A fresh-process worker failed or printed no result."""


def worker_env(pythonpath: os.PathLike | str | None = None) -> dict:
    """This environment, with ``pythonpath`` (default: this checkout) first on ``PYTHONPATH``."""
    env = dict(os.environ)
    first = str(pythonpath if pythonpath is not None else REPO_ROOT)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [first, env.get("PYTHONPATH")]))
    return env


def run_worker(module: str, args: list, timeout: float = 1800, env: dict | None = None,
               cwd: os.PathLike | None = None, python_args: tuple = ()) -> dict:
    """Run ``python [python_args] -m module args`` (or the script ``module`` when it ends in
    ``.py``) in a fresh process; its last stdout line as JSON, plus ``process_wall_seconds``.
    Raises :class:`WorkerError` with the tail of its stderr."""
    target = [str(module)] if str(module).endswith(".py") else ["-m", module]
    cmd = [sys.executable, *python_args, *target, *map(str, args)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd or REPO_ROOT, env=env or worker_env(), capture_output=True, text=True,
                          timeout=timeout)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise WorkerError(f"{' '.join(cmd[1:])} failed with status {proc.returncode}:\n{tail}")
    lines = proc.stdout.strip().splitlines()
    if not lines:
        raise WorkerError(f"{' '.join(cmd[1:])} printed no result")
    result = json.loads(lines[-1])
    result["process_wall_seconds"] = round(wall, 3)
    return result


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


def read_word_pairs(path) -> list[tuple[str, str, float]]:
    """A word-similarity file (``word<TAB>word<TAB>score``, ``#`` comments): lower-cased pairs and scores."""
    pairs = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        a, b, score = line.split("\t")
        pairs.append((a.lower(), b.lower(), float(score)))
    return pairs


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
        ("threads", _threads_text(ctx.get("threads"))),
        ("load average at start (1/5/15 min)", m["load_average_1_5_15"]),
        ("platform", m["platform"]),
        ("versions", ", ".join(f"{k} {val}" for k, val in v.items())),
        ("git commit", commit),
    ]
    if ctx["env"]:
        rows.append(("environment", ", ".join(f"{k}={val}" for k, val in ctx["env"].items())))
    return "## Machine\n\n" + md_table(("", ""), rows)


def _threads_text(threads: dict | None) -> str:
    if not threads:
        return "n/a"
    measured = threads.get("measured")
    text = "measured: " + (", ".join(map(str, measured)) if isinstance(measured, (list, tuple)) else str(measured))
    return text + f"; numba can use {threads.get('numba_available')}"


def write_report(out: os.PathLike, data: dict, markdown: str, echo: bool = False) -> tuple[Path, Path]:
    """Write ``<out>.json`` and ``<out>.md``, creating the directory; returns both paths.

    ``echo``: also print the markdown on stdout and say where both were saved.

    A report without a ``context`` gets one here, so that every report says what ran it.
    """
    out = Path(out)
    data.setdefault("context", context())
    out.parent.mkdir(parents=True, exist_ok=True)
    json_path = out.with_name(out.name + ".json")
    md_path = out.with_name(out.name + ".md")
    json_path.write_text(json.dumps(data, indent=1, default=str) + "\n")
    md_path.write_text(markdown.rstrip() + "\n")
    if echo:
        print(markdown)
        say(f"saved {json_path} and {md_path}")
    return json_path, md_path
