"""A/B kernel speed: this checkout ("after") against another one ("before"), in alternating fresh processes.

    python -m benchmarks.run ab --base /work/base                      # 10M corpus, threads 1,2, 5 rounds
    python -m benchmarks.run ab --base ../old --corpus 1M --threads 1 --rounds 3
    python -m benchmarks.run ab --base ../old --lines 3000 --rounds 1  # plumbing check on a slice of 1M

Every measurement is one fresh process of one checkout (``benchmarks/ab_worker.py``, run with
``python -P`` and ``PYTHONPATH`` set to it) training one epoch of the sentence part; kernel
examples/s is ``result.examples / result.seconds``. Each checkout first builds its corpus cache
and warms numba's cache untimed at every thread count; then each round runs before, then
after, per thread count, so that a slow spell of a shared machine hits both alike. The report
gives every round, the medians, after / before and each side's spread: a ratio inside the
spread is no difference.
"""

from __future__ import annotations

import argparse
import lzma
import shutil
import statistics
import tempfile
from pathlib import Path

from .common import (
    CORPORA,
    REPO_ROOT,
    RESULTS_DIR,
    WORK_ROOT,
    checkout_commit,
    context,
    context_markdown,
    corpus_path,
    human,
    md_table,
    parse_threads,
    run_worker,
    say,
    stats,
    worker_env,
    write_report,
)

WORKER = Path(__file__).resolve().with_name("ab_worker.py")
WORK_DIR = WORK_ROOT / "ab"
WARM_LINES = 2000  # lines of the corpus in the warm-up run
SIDES = ("before", "after")


def slice_lines(src: Path, n: int, out: Path) -> Path:
    """The first ``n`` lines of a text file (plain or ``.xz``) written to ``out``."""
    opener = lzma.open if src.suffix == ".xz" else open
    with opener(src, "rt", encoding="utf-8", errors="replace") as fin, open(out, "w", encoding="utf-8") as fout:
        for i, line in enumerate(fin):
            if i >= n:
                break
            fout.write(line)
    return out


def parse_args(argv=None, prog="python -m benchmarks.run ab") -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    ap.add_argument("--base", type=Path, required=True, help="the other checkout (\"before\"), e.g. a git worktree")
    ap.add_argument("--after", type=Path, default=REPO_ROOT, help="the checkout measured as \"after\" (default: this one)")
    ap.add_argument("--corpus", choices=sorted(CORPORA, key=len), default="10M", help="corpus (default %(default)s)")
    ap.add_argument("--lines", type=int, default=None,
                    help="train on the first N lines of the 1M corpus instead (a plumbing check)")
    ap.add_argument("--threads", type=parse_threads, default="1,2", help="comma-separated thread counts (default %(default)s)")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per thread count (default %(default)s)")
    ap.add_argument("--dim", type=int, default=None, help="embedding dimension (default: TrainConfig's)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds one process may take")
    ap.add_argument("--out", type=Path, default=None,
                    help="output prefix (default benchmarks/results/ab_speed; with --lines, benchmarks/.work/ab/ab_speed)")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    if args.lines is not None and args.lines < 10:
        ap.error("--lines must be >= 10")
    for side in ("base", "after"):
        root = getattr(args, side)
        if not (root / "scbow" / "__init__.py").is_file():
            ap.error(f"--{side} {root}: no scbow package there")
    args.base, args.after = args.base.resolve(), args.after.resolve()
    if args.out is None:
        args.out = (WORK_DIR / "ab_speed") if args.lines else (RESULTS_DIR / "ab_speed")
    return args


def summarize(runs: list[dict], threads: list[int]) -> dict:
    """Per thread count: each side's rounds and their statistics, the ratio after / before."""
    rows = {}
    for n in threads:
        row = {"threads": n}
        for side in SIDES:
            eps = [r["examples_per_s"] for r in runs if r["side"] == side and r["threads"] == n]
            row[side] = {"rounds": [round(x, 1) for x in eps], **stats(eps)}
        before, after = row["before"], row["after"]
        row["ratio_after_over_before"] = round(after["median"] / before["median"], 4)
        row["ratio_by_round"] = [round(a / b, 4) for a, b in zip(after["rounds"], before["rounds"])]
        # each after run over the before run just ahead of it: paired, so a slow spell of
        # the machine that hits both cancels out
        row["median_round_ratio"] = round(statistics.median(row["ratio_by_round"]), 4) if eps else None
        row["spread_max"] = max(before["spread"] or 0.0, after["spread"] or 0.0)
        rows[str(n)] = row
    return rows


def verdict(row: dict) -> str:
    ratio, spread = row["ratio_after_over_before"], row["spread_max"]
    if len(row["before"]["rounds"]) < 2:
        return "one round: no spread to judge against"
    if abs(ratio - 1) <= spread:
        return f"within run-to-run spread ({spread:.0%})"
    return ("faster" if ratio > 1 else "slower") + f" beyond the run-to-run spread ({spread:.0%})"


def medians_table(r: dict) -> str:
    """The medians of an A/B report as a Markdown table (also shown in the speed report)."""
    rows = []
    for row in r["rows"].values():
        b, a = row["before"], row["after"]
        paired = row.get("median_round_ratio")
        spreads = ("" if x is None else f"{x:.0%}" for x in (b["spread"], a["spread"]))
        rows.append((row["threads"], human(b["median"]), human(a["median"]), f"{row['ratio_after_over_before']:.3f}",
                     "" if paired is None else f"{paired:.3f}", *spreads, verdict(row)))
    return md_table(("threads", "before, examples/s", "after, examples/s", "after / before", "median of round ratios",
                     "spread before", "spread after", "reading"), rows)


def render(r: dict) -> str:
    s = r["settings"]
    rounds = []
    for row in r["rows"].values():
        for i, (b, a, q) in enumerate(zip(row["before"]["rounds"], row["after"]["rounds"], row["ratio_by_round"])):
            rounds.append((row["threads"], i + 1, human(b), human(a), f"{q:.3f}"))
    checkouts = md_table(("", "checkout", "commit", "scbow imported from", "versions"), [
        (side, f"`{s[side]['root']}`", (s[side]["commit"] or "n/a")[:12], f"`{s[side]['scbow_file']}`",
         ", ".join(f"{k} {v}" for k, v in s[side]["versions"].items())) for side in SIDES])
    return "\n\n".join([
        "# A/B kernel speed: before and after",
        f"Kernel examples/s (`result.examples / result.seconds` of one `scbow.training.train` epoch) of two "
        f"checkouts on corpus **{s['corpus_label']}**, threads {', '.join(map(str, s['threads']))}, "
        f"{s['rounds']} round(s). Every run is a fresh process; each round runs before, then after, per thread "
        "count. Numba's cache was warmed for each checkout and thread count by an untimed run first."
        + ("\n\n**Plumbing check** (`--lines`): a tiny corpus; its figures say nothing about speed."
           if s["lines"] else ""),
        "## Medians\n\n" + medians_table(r),
        "## Every round\n\n" + md_table(("threads", "round", "before", "after", "after / before"), rounds),
        "## Checkouts\n\n" + checkouts,
        "## Definitions\n\n- **spread**: (max - min) / median of one side's rounds.\n"
        "- **after / before**: median examples/s of after over that of before; per round, the after run over "
        "the before run just ahead of it.\n"
        "- **median of round ratios**: the median of those per-round ratios (paired: a slow spell that hits "
        "both runs of a round cancels out).",
        context_markdown(r["context"]),
    ])


def main(argv=None, prog="python -m benchmarks.run ab") -> dict:
    args = parse_args(argv, prog)
    roots = {"before": args.base, "after": args.after}
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=WORK_DIR))
    try:
        if args.lines:
            text = slice_lines(corpus_path("1M"), args.lines, work / f"gutenberg-1M-first{args.lines}.txt")
            label = f"first {args.lines:,} lines of 1M"
        else:
            text, label = corpus_path(args.corpus), args.corpus
        tiny = slice_lines(corpus_path("1M"), WARM_LINES, work / "warm.txt")
        extra = ["--dim", args.dim] if args.dim else []

        def job(side: str, threads: int, warm: bool) -> dict:
            flags = ["--threads", threads, "--cache-dir", work / f"cache-{side}", "--expect", roots[side], *extra]
            if warm:
                flags += ["--warm", tiny]
            return run_worker(WORKER, [text, *flags], timeout=args.timeout, env=worker_env(roots[side]), cwd=work,
                              python_args=("-P",))

        info = {}
        for side in SIDES:
            for n in args.threads:
                say(f"[ab] warm-up: {side}, {n} thread(s)")
                w = job(side, n, warm=True)
            info[side] = {"root": str(roots[side]), "commit": checkout_commit(roots[side]),
                          "scbow_file": w["scbow_file"], "versions": w["versions"]}
        runs = []
        for rnd in range(args.rounds):
            for n in args.threads:
                for side in SIDES:
                    say(f"[ab] round {rnd + 1}/{args.rounds}: {side}, {n} thread(s)")
                    r = job(side, n, warm=False)
                    if not r["examples_per_s"]:
                        raise SystemExit(f"the {side} run on {n} threads trained no example")
                    runs.append({"round": rnd + 1, "side": side, "threads": n, "examples": r["examples"],
                                 "seconds": round(r["seconds"], 4), "examples_per_s": round(r["examples_per_s"], 1),
                                 "process_wall_seconds": r["process_wall_seconds"]})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report = {
        "benchmark": "ab_speed",
        "settings": {"corpus": args.corpus if not args.lines else "1M", "lines": args.lines, "corpus_label": label,
                     "threads": args.threads, "rounds": args.rounds, "dim": args.dim,
                     "order": "per round and thread count: before, then after; every run a fresh process",
                     **info},
        "runs": runs,
        "rows": summarize(runs, args.threads),
        "context": context(threads=args.threads),
    }
    report["median_examples_per_s"] = {n: {side: statistics.median(x["examples_per_s"] for x in runs
                                                                   if x["threads"] == n and x["side"] == side)
                                           for side in SIDES} for n in args.threads}
    write_report(args.out, report, render(report), echo=True)
    return report


if __name__ == "__main__":
    main(prog="python -m benchmarks.run ab")
