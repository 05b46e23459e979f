"""What every suite shares, defined once: data paths, the machine and checkout of a run
(:func:`context`), reports (:func:`write_report`: ``<out>.json`` and ``<out>.md``), the one
progress line (:func:`say`), memory (:func:`memory_mib`), statistics of repeats, fresh-process
workers and the markdown helpers. Nothing here imports numba, torch or ``scbow.training``.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
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

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"
WORK_ROOT = REPO_ROOT / "benchmarks" / ".work"

CORPORA = {"1M": "corpus/gutenberg-1M.txt.xz", "10M": "corpus/gutenberg-10M.txt.xz", "100M": "corpus/gutenberg-100M.txt.xz"}
# Environment variables that change what a benchmark measures.
RELEVANT_ENV = ("SCBOW_DATA", "SCBOW_CACHE_DIR", "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER", "NUMBA_DISABLE_JIT",
                "NUMBA_CACHE_DIR", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "CUDA_VISIBLE_DEVICES")


def data_dir() -> Path:
    """``$SCBOW_DATA``, else the shared data beside the checkout: the library's rule."""
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


def write_tokens(corpus, path: Path) -> None:
    """The corpus's kept tokens as words, one sentence a line (what gensim and Sent2Vec train on)."""
    words = np.array(corpus.vocab.words, dtype=object)
    offsets = np.asarray(corpus.offsets)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for s0 in range(0, corpus.n_sentences, 200_000):  # sentences per block
            s1 = min(s0 + 200_000, corpus.n_sentences)
            lo, hi = int(offsets[s0]), int(offsets[s1])
            out = np.empty(2 * (hi - lo), dtype=object)
            out[0::2] = words[np.asarray(corpus.tokens[lo:hi])]
            seps = np.full(hi - lo, " ", dtype=object)
            seps[offsets[s0 + 1 : s1 + 1] - lo - 1] = "\n"
            out[1::2] = seps
            fh.write("".join(out.tolist()))


def parse_threads(text: str) -> list[int]:
    """Thread counts from ``"1,2,4"``, duplicates dropped, in order (an argparse ``type``)."""
    try:
        threads = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated integers, got {text!r}") from None
    if not threads or min(threads) < 1:
        raise argparse.ArgumentTypeError("needs at least one thread count, each >= 1")
    return list(dict.fromkeys(threads))


def machine_info() -> dict:
    """CPU model, core counts, RAM, OS and the load average when it was called."""
    try:
        cpuinfo = [line.partition(":") for line in Path("/proc/cpuinfo").read_text().splitlines()]
    except OSError:
        cpuinfo = []
    model = next((v.strip() for k, _, v in cpuinfo if k.strip() == "model name"), None)
    logical = sum(k.strip() == "processor" for k, _, _ in cpuinfo)
    try:
        ram = next(round(int(line.split()[1]) / 2**20, 2) for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal:"))
    except (OSError, ValueError, IndexError, StopIteration):
        ram = None
    return {
        "cpu_model": model or platform.processor() or None,
        "logical_cores": logical or None,  # processors listed in /proc/cpuinfo
        "os_cpu_count": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,  # this process's
        "ram_gib": ram,
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


def context(*extra_versions: str, threads=None) -> dict:
    """Everything about the run that is not a measurement: date, command, machine, the thread
    counts measured (``threads``) and available, versions (plus ``extra_versions``), checkout."""
    main = sys.modules.get("__main__")
    module = main.__spec__.name if getattr(main, "__spec__", None) is not None else sys.argv[0]
    try:
        import numba

        available = numba.config.NUMBA_NUM_THREADS
    except ImportError:
        available = None
    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": [Path(sys.executable).name, "-m", module, *sys.argv[1:]],
        "machine": machine_info(),
        "threads": {"measured": threads, "numba_available": available},
        "versions": versions(*extra_versions),
        "git": git_info(),
        "env": {k: os.environ[k] for k in RELEVANT_ENV if k in os.environ},
    }


def say(message: str) -> None:
    """A progress line on stderr, with the time of day (reports go to files and stdout)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def memory_mib() -> dict:
    """``VmRSS`` (resident now) and ``VmHWM`` (peak resident) of this process, in MiB; where
    ``/proc/self/status`` is missing (macOS) the peak comes from ``getrusage``, without ``VmRSS``."""
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
        out["VmHWM"] = round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)  # macOS bytes, Linux KiB
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


def cpu_seconds(children: bool = False) -> float:
    """User + system CPU seconds of this process, all its threads (or of its finished children)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def stats(values) -> dict:
    """Median, min, max, count and relative spread ((max - min) / median) of a list of numbers."""
    values = [float(v) for v in values]
    med = statistics.median(values)
    return {"median": round(med, 6), "min": round(min(values), 6), "max": round(max(values), 6), "n": len(values),
            "spread": round((max(values) - min(values)) / med, 4) if med else None}


def have(module: str) -> bool:
    """Whether ``module`` can be imported (without importing it)."""
    return importlib.util.find_spec(module) is not None


class WorkerError(RuntimeError):
    """A fresh-process worker failed or printed no result."""


def worker_env(pythonpath: os.PathLike | str | None = None) -> dict:
    """This environment, with ``pythonpath`` (default: this checkout) first on ``PYTHONPATH``."""
    first = str(pythonpath if pythonpath is not None else REPO_ROOT)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [first, os.environ.get("PYTHONPATH")]))}


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


def md_table(headers, rows) -> str:
    lines = ["| " + " | ".join(map(str, headers)) + " |", "|" + " --- |" * len(headers)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    return "\n".join(lines)


def definitions_markdown(definitions: dict) -> str:
    return "## Definitions\n\n" + "\n".join(f"- **{k}**: {v}" for k, v in definitions.items())


def context_markdown(ctx: dict) -> str:
    """The machine, versions and checkout of a report as a markdown section."""
    m, v, g, threads = ctx["machine"], ctx["versions"], ctx["git"], ctx.get("threads")
    commit = "n/a" if g["commit"] is None else g["commit"][:12] + (" (uncommitted changes)" if g["dirty"] else "")
    if threads:
        measured = threads.get("measured")
        measured = ", ".join(map(str, measured)) if isinstance(measured, (list, tuple)) else str(measured)
        threads = f"measured: {measured}; numba can use {threads.get('numba_available')}"
    rows = [
        ("date (UTC)", ctx["date_utc"]),
        ("command", "`" + " ".join(ctx["command"]) + "`"),
        ("CPU", m["cpu_model"]),
        ("cores", f"{m['logical_cores']} logical, os.cpu_count {m['os_cpu_count']}, usable {m['usable_cores']}"),
        ("RAM", f"{m['ram_gib']} GiB"),
        ("threads", threads or "n/a"),
        ("load average at start (1/5/15 min)", m["load_average_1_5_15"]),
        ("platform", m["platform"]),
        ("versions", ", ".join(f"{k} {val}" for k, val in v.items())),
        ("git commit", commit),
    ]
    if ctx["env"]:
        rows.append(("environment", ", ".join(f"{k}={val}" for k, val in ctx["env"].items())))
    return "## Machine\n\n" + md_table(("", ""), rows)


def write_report(out: os.PathLike, data: dict, markdown: str, echo: bool = False) -> tuple[Path, Path]:
    """Write ``<out>.json`` and ``<out>.md`` (a report without a ``context`` gets one here);
    ``echo``: also print the markdown and say where both went."""
    out = Path(out)
    data.setdefault("context", context())
    out.parent.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out.with_name(out.name + ".json"), out.with_name(out.name + ".md")
    json_path.write_text(json.dumps(data, indent=1, default=str) + "\n")
    md_path.write_text(markdown.rstrip() + "\n")
    if echo:
        print(markdown)
    say(f"saved {json_path} and {md_path}")
    return json_path, md_path
