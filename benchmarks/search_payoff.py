"""When an index pays off: ``neighbors --in FILE`` (a scan: every line embedded per query) against
``embed`` + ``index`` once, then ``neighbors --index`` per query.

    python -m benchmarks.run search_payoff                        # gutenberg-1M and -10M as plain text
    python -m benchmarks.run search_payoff --sizes 1M --model M   # plumbing

Each step is the command a user types, in a fresh process, timed from outside (so compile, model
loading and reading the index are in it, as a user pays them). The scan and the indexed query are
timed ``--repeats`` times (median); the build once. Break-even: the build's seconds over what an
indexed query saves against a scan.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import RESULTS_DIR, WORK_ROOT, context, context_markdown, md_table, plain_text, say, write_report

QUERY = "the old man walked slowly down the road to the village"


def _timed(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from scbow.cli import main; main()", *args], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _model(work: Path, given: Path | None) -> Path:
    if given is not None:
        return given
    model = work / "model-10M"
    if not (model / "vectors.npy").is_file():
        source, _ = plain_text("10M", work)
        say("training the default model on gutenberg-10M")
        _timed(["train", str(source), "-o", str(model), "-q"])
    return model


def measure(model: Path, name: str, work: Path, repeats: int) -> dict:
    text, _ = plain_text(name, work)
    lines = sum(1 for _ in open(text, "rb"))
    m = ["-m", str(model)]
    say(f"{name}: a scan with neighbors --in ({repeats} times)")
    scans = [_timed(["neighbors", *m, "--sentence", QUERY, "--in", str(text)]) for _ in range(repeats)]
    rows, index = work / f"{name}.npy", work / f"{name}.index"
    for path in (rows, index):
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
    say(f"{name}: embed, then index")
    embed = _timed(["embed", *m, str(text), "-o", str(rows), "-q"])
    build = _timed(["index", str(rows), "--text", str(text), *m, "-o", str(index), "-q"])
    say(f"{name}: neighbors --index ({repeats} times)")
    queries = [_timed(["neighbors", *m, "--sentence", QUERY, "--index", str(index)]) for _ in range(repeats)]
    scan, query = statistics.median(scans), statistics.median(queries)
    return {"corpus": name, "lines": lines, "scan_s": round(scan, 2), "scans": [round(s, 2) for s in scans],
            "embed_s": round(embed, 2), "index_s": round(build, 2), "query_s": round(query, 2),
            "queries": [round(s, 2) for s in queries],
            "break_even_queries": round((embed + build) / (scan - query), 1) if scan > query else None}


def markdown(report: dict) -> str:
    rows = [(r["corpus"], f"{r['lines']:,}", r["scan_s"], r["embed_s"], r["index_s"], r["query_s"],
             r["break_even_queries"]) for r in report["results"]]
    return "\n".join([
        "# When an index pays off: `neighbors --in` against `embed` + `index` + `neighbors --index`", "",
        f"Command: `python -m benchmarks.run search_payoff`. Model: {report['model_about']}. Each step is the "
        "command a user types, in a fresh process, timed from outside (compile, loading the model and opening "
        f"the index included); scans and indexed queries are the median of {report['repeats']}, the build is one "
        f"run. Query: \"{QUERY}\".", "",
        md_table(("corpus", "lines", "neighbors --in s (a scan)", "embed s", "index s", "neighbors --index s",
                  "break-even queries"), rows), "",
        "Break-even queries: (embed + index) / (scan - indexed query), the number of queries of one file after "
        "which building the index has cost less than scanning it each time. A scan costs time in proportion to "
        "the lines; an indexed query about the same at any size (most of it is starting the process and loading "
        "the model).", "",
        f"Load average (1/5/15 min) at the start {report['context']['machine']['load_average_1_5_15']}, at the end "
        f"{report.get('load_at_end')}: on a machine shared with other work every time here is an upper bound, and "
        "the scans and the build ran under different loads, so the break-even is good to a factor of about two.", "",
        context_markdown(report["context"])])


def main(argv=None, prog=None) -> None:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["1M", "10M"], choices=["1M", "10M", "100M"])
    parser.add_argument("--model", type=Path, default=None, help="model directory (default: the defaults on 10M)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, default=WORK_ROOT / "search_payoff")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "search_payoff")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    model = _model(args.work, args.model)
    from benchmarks.ann_index import _model_about

    results = [measure(model, name, args.work, args.repeats) for name in args.sizes]
    for r in results:
        say(f"{r['corpus']}: scan {r['scan_s']} s, build {r['embed_s']} + {r['index_s']} s, "
            f"indexed query {r['query_s']} s: pays off after {r['break_even_queries']} queries")
    report = {"results": results, "repeats": args.repeats, "model": str(model), "model_about": _model_about(model),
              "load_at_end": [round(x, 2) for x in os.getloadavg()],
              "context": context("faiss-cpu", threads=2)}
    write_report(args.out, report, markdown(report), echo=True)


if __name__ == "__main__":
    main()
