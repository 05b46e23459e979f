"""Speed of ``scbow-numba embed``: raw text lines to a float32 .npy file of sentence embeddings.

    python -m benchmarks.run embed_speed                 # 10M corpus, 1 and 2 threads, 3 repeats
    python -m benchmarks.run embed_speed --corpus 1M --repeats 1 --out /tmp/embed-check

The corpus is decompressed once (raw text: untokenized, one sentence a line); the model is its
vocabulary with random vectors (speed does not depend on the values). Measured: the first
call of the averaging kernels, then ``scbow.use.embedding.embed_file`` end to end as the
command runs it, ``--repeats`` times per thread count, alternating; then the parts once
(reading, tokenizing and looking up; averaging with each kernel).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

import numpy as np

from scbow.config import TrainConfig
from scbow.training import load_corpus
from scbow.use.embedding import embed_file, read_blocks
from scbow.vectors.model import Model

from .common import (
    CORPORA,
    RESULTS_DIR,
    WORK_ROOT,
    context,
    context_markdown,
    corpus_path,
    cpu_seconds,
    human,
    md_table,
    parse_threads,
    peak_rss_mib,
    plain_text,
    say,
    timed,
    write_report,
)
from .targets import TARGETS

GOAL_LINES_PER_MIN = TARGETS["embed_lines_per_min"].value


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run embed_speed", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--corpus", choices=sorted(CORPORA, key=len), default="10M", help="corpus to embed")
    parser.add_argument("--threads", type=parse_threads, default="1,2", help="comma-separated thread counts")
    parser.add_argument("--repeats", type=int, default=3, help="end-to-end runs per thread count")
    parser.add_argument("--dim", type=int, default=TrainConfig().dim, help="embedding dimension")
    parser.add_argument("--work", type=Path, default=WORK_ROOT / "embed",
                        help="where the decompressed corpus is kept")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "embed", help="report prefix (.json and .md)")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    ctx = context()
    import numba


    text = plain_text(args.corpus, args.work)[0]
    corpus = load_corpus([corpus_path(args.corpus)], TrainConfig().min_count, 0)
    vectors = np.random.default_rng(0).standard_normal((len(corpus.vocab), args.dim), dtype=np.float32)
    model = Model(corpus.vocab, vectors)
    size = text.stat().st_size

    say("[1/3] kernel compile (first call)")
    tiny = model.averager.encode(corpus.vocab.words[0] + "\n")
    with timed() as t_serial:
        model.averager.average(tiny, "omit", 1.0, kernel="serial")
    with timed() as t_parallel:
        model.averager.average(tiny, "omit", 1.0, kernel="parallel")
    compile_ = {"serial_first_call_seconds": round(t_serial.seconds, 3),
                "parallel_first_call_seconds": round(t_parallel.seconds, 3),
                "threading_layer": numba.threading_layer()}

    say("[2/3] end to end")
    runs = []
    with tempfile.TemporaryDirectory(prefix="scbow-embed-bench-", dir=args.work) as tmp:
        out = Path(tmp) / "embeddings.npy"
        for repeat in range(args.repeats):
            for threads in args.threads:
                load = os.getloadavg()[0]
                cpu0 = cpu_seconds()  # all threads: what the run cost, whatever the load
                stats = embed_file(model, text, out, threads=threads)
                cpu = cpu_seconds() - cpu0
                runs.append({"repeat": repeat, "threads": threads, "seconds": round(stats.seconds, 3),
                             "cpu_seconds": round(cpu, 3), "lines_per_cpu_min": round(stats.lines / cpu * 60),
                             "lines": stats.lines, "lines_per_min": round(stats.lines / stats.seconds * 60),
                             "tokens_per_s": round(stats.tokens / stats.seconds), "missing": stats.missing,
                             "load_average_1min_before": round(load, 2)})
                say(f"  threads {threads}: {stats.lines:,} lines in {stats.seconds:.2f} s "
                    f"({human(runs[-1]['lines_per_min'])} lines/min, load {load:.2f})")
        output_bytes = out.stat().st_size
        check = np.load(out, mmap_mode="r")
        assert check.shape == (stats.lines, args.dim) and check.dtype == np.float32

    say("[3/3] parts")
    blocks = []
    with timed() as t_encode:
        for lines in read_blocks(text):
            block = "".join(lines)
            blocks.append(model.averager.encode(block if block.endswith("\n") else block + "\n"))
    parts = {"read_tokenize_lookup_seconds": round(t_encode.seconds, 3)}
    for name, parallel in (("average_serial_seconds", False), ("average_parallel_seconds", True)):
        numba.set_num_threads(max(args.threads))
        with timed() as t:
            for encoded in blocks:
                model.averager.average(encoded, "omit", 1.0, kernel="parallel" if parallel else "serial")
        parts[name] = round(t.seconds, 3)
    parts["parallel_threads"] = max(args.threads)
    n_lines = sum(e.lines for e in blocks)
    n_tokens = sum(e.tokens for e in blocks)
    del blocks

    by_threads = {}
    for threads in args.threads:
        rates = [r["lines_per_min"] for r in runs if r["threads"] == threads]
        cpu_rates = [r["lines_per_cpu_min"] for r in runs if r["threads"] == threads]
        by_threads[str(threads)] = {"threads": threads, "runs": len(rates),
                                    "lines_per_cpu_min_median": statistics.median(cpu_rates),
                                    "lines_per_min_median": statistics.median(rates),
                                    "lines_per_min_min": min(rates), "lines_per_min_max": max(rates)}
    default = by_threads.get("1") or next(iter(by_threads.values()))
    report = {
        "settings": {"corpus": args.corpus, "text_file": str(text), "text_bytes": size, "dim": args.dim,
                     "vocab_size": len(model), "threads": args.threads, "repeats": args.repeats},
        "input": {"lines": n_lines, "tokens": n_tokens},
        "output_bytes": output_bytes,
        "compile": compile_,
        "runs": runs,
        "by_threads": by_threads,
        "parts": parts,
        "goal": {"lines_per_min": GOAL_LINES_PER_MIN, "threads": default["threads"],
                 "measured_median": default["lines_per_min_median"],
                 "met": default["lines_per_min_median"] >= GOAL_LINES_PER_MIN},
        "peak_rss_mib": peak_rss_mib(),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "context": ctx,
    }
    markdown = "\n\n".join([
        "# Embedding speed (`scbow-numba embed`)",
        f"Corpus **{args.corpus}** as plain text (`{text.name}`, {size / 1e6:.1f} MB): {n_lines:,} lines, "
        f"{n_tokens:,} tokens. Model: the corpus vocabulary ({len(model):,} words), random {args.dim}-dim "
        f"vectors. Output: {output_bytes / 1e6:.1f} MB .npy.",
        "## Goal\n\n" + md_table(("goal", f"measured (--threads {default['threads']}, median)", "verdict"), [
            (f">= {human(GOAL_LINES_PER_MIN)} sentences/min on 2 cores from raw text",
             f"{human(default['lines_per_min_median'])} lines/min",
             "**met**" if report["goal"]["met"] else "**not met**")])
        + "\n\n`--threads 1`, the default, uses two cores: the tokenizer on one, the serial averaging kernel and "
        "the writes on the other. `--threads 2` swaps in the parallel kernel (2 threads) on that second core's "
        "work; its compile (below) was paid before the runs, as in a long-lived process, not per command.",
        "## End to end (`embed_file`, text file to .npy)\n\n" + md_table(
            ("threads", "runs", "lines/min median", "min", "max", "lines per CPU-minute, median"),
            [(f"{r['threads']} ({'serial' if r['threads'] == 1 else 'parallel'} kernel)", r["runs"],
              human(r["lines_per_min_median"]), human(r["lines_per_min_min"]),
              human(r["lines_per_min_max"]), human(r["lines_per_cpu_min_median"])) for r in by_threads.values()])
        + "\n\nLines per CPU-minute divides by the CPU time the process used (all its threads), so it moves "
        "less with the machine's load than the wall-clock rate; on an idle machine with two free cores the "
        "wall-clock rate can exceed it, since two threads work at once."
        + "\n\nAll runs:\n\n" + md_table(("repeat", "threads", "seconds", "CPU seconds", "lines/min", "tokens/s",
                                            "load before"), [
            (r["repeat"], r["threads"], r["seconds"], r["cpu_seconds"], human(r["lines_per_min"]),
             human(r["tokens_per_s"]),
             r["load_average_1min_before"]) for r in runs]),
        "## Where the time goes (one pass each, warm kernels)\n\n" + md_table(("part", "seconds"), [
            ("read + tokenize + look up (Python, one core)", parts["read_tokenize_lookup_seconds"]),
            ("average, serial kernel", parts["average_serial_seconds"]),
            (f"average, parallel kernel ({parts['parallel_threads']} threads)", parts["average_parallel_seconds"]),
        ]) + "\n\nIn `embed_file` the averaging and writing of a block run in a second thread (the kernel "
        "releases the GIL) while the next block is tokenized, so the end-to-end time is bounded by the "
        "tokenizing, plus the writes and whatever else the machine runs. Averaging is a small part at "
        f"{args.dim} dims, which is why the parallel kernel (used from the second block on with --threads other "
        "than 1) cannot make `embed` much faster here, and its compile costs more than it saves on an input of "
        "this size; it can help where averaging dominates (many dimensions).",
        "## Kernel compile (first call)\n\n" + md_table(("kernel", "seconds"), [
            ("average_lines, serial (cached on disk)", compile_["serial_first_call_seconds"]),
            ("average_lines, parallel (not cacheable)", compile_["parallel_first_call_seconds"])])
        + f"\n\nThreading layer: {compile_['threading_layer']}.",
        f"Peak RSS: {report['peak_rss_mib']} MiB. Load average (1/5/15 min) at the start "
        f"{ctx['machine']['load_average_1_5_15']}, at the end {report['load_average_at_end']}. The machine is shared "
        "with other work: compare ratios within one run, not absolute numbers across runs.",
        context_markdown(ctx),
    ])
    write_report(args.out, report, markdown, echo=True)


if __name__ == "__main__":
    main()
