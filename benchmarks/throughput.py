"""Throughput of scbow-numba on this machine: preprocessing, kernel compile, training kernel, end to end.

    python -m benchmarks.throughput                  # 10M corpus, 1 and 2 threads, 3 repeats
    python -m benchmarks.throughput --corpus 1M --repeats 1 --out /tmp/throughput-check

Prints a markdown report and saves it with every figure and setting as
``<out>.json`` and ``<out>.md`` (default ``benchmarks/results/throughput``).

What is measured, in order:

1. xz decompression alone (``lzma``) of the corpus file, as context for 2.
2. Preprocessing: ``load_corpus(..., use_cache=False)`` from the raw file, after a warm-up
   on a tiny file so that the encoder's compile (or cache load) is not counted.
3. The on-disk corpus cache: a first call builds it, a second call reloads it (memory-mapped).
4. Compile time of the first call of ``train_batch_serial`` (cached on disk) and of
   ``train_batch_parallel`` (threads over the same cached chunk kernel), each on a tiny batch.
5. The training kernel over one epoch of shuffled targets, batch by batch as
   ``scbow.trainer.train`` drives it, ``--repeats`` times per thread count, thread counts
   alternating. Only the kernel calls are timed, as in ``train``.
6. End to end: raw text to a saved model, one epoch on 2 threads, through
   ``scbow.trainer.train(use_cache=False)`` and ``scbow.formats.save_model``. The kernels are
   already compiled in this process, so compile time (4.) is not included.
"""

from __future__ import annotations

import argparse
import lzma
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

from scbow.config import TrainConfig
from scbow.trainer import kernel_params

from .common import (
    CORPORA,
    RESULTS_DIR,
    context,
    context_markdown,
    corpus_path,
    human,
    md_table,
    parse_threads,
    peak_rss_mib,
    timed,
    write_report,
)

# Targets the project set itself; the report says whether this machine meets them.
TARGET_KERNEL_EXAMPLES_PER_S = 120_000  # on 2 threads
TARGET_KERNEL_THREADS = 2
TARGET_PREPROCESS_TOKENS_PER_S = 1_000_000  # raw tokens per second, uncached encode
END_TO_END_THREADS = 2
COMPILE_BATCH = 64  # examples in the first (compiling) kernel call

DEFINITIONS = {
    "raw_tokens": "tokenizer output of the whole corpus before the vocabulary cut (corpus.stats['raw_tokens'])",
    "preprocess_tokens_per_s": "raw_tokens / seconds of load_corpus(use_cache=False), decompression included",
    "examples_per_s": "training examples (target + positives + negatives) / seconds spent inside the batch kernel calls",
    "corpus_tokens_per_s": (
        "examples_per_s * mean kept tokens per target sentence; one epoch visits every trainable "
        "sentence once as target, so this is the rate at which the corpus is consumed, not the "
        "number of token vectors read (each example also reads its positives and negatives)"
    ),
    "scaling_efficiency": "examples_per_s(N threads) / (N * examples_per_s(1 thread)), medians",
    "kernel_for_threads": "1 thread runs train_batch_serial, N > 1 train_batch_parallel (N Python threads), as scbow.train does",
}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.throughput", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--corpus", choices=sorted(CORPORA, key=len), default="10M", help="corpus to measure on")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts for the kernel runs")
    parser.add_argument("--repeats", type=int, default=3, help="kernel epochs per thread count")
    parser.add_argument("--dim", type=int, default=TrainConfig().dim, help="embedding dimension")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "throughput",
                        help="output prefix: writes <out>.json and <out>.md")
    args = parser.parse_args(argv)
    try:
        args.threads = parse_threads(args.threads)
    except ValueError as exc:
        parser.error(str(exc))
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    return args


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bench_decompress(path: Path) -> dict:
    """Seconds to decompress ``path`` alone: the floor under any encode of an xz corpus."""
    size = 0
    with timed() as t:
        with lzma.open(path, "rb") as fh:
            while chunk := fh.read(1 << 23):
                size += len(chunk)
    return {
        "seconds": round(t.seconds, 3),
        "compressed_bytes": path.stat().st_size,
        "decompressed_bytes": size,
        "decompressed_mb_per_s": round(size / 1e6 / t.seconds, 1),
    }


def warm_encoder(config: TrainConfig, tmp: Path) -> dict:
    """Encode a tiny file once, so the encoder kernel's compile or cache load is paid here."""
    from scbow.corpus import load_corpus

    tiny = tmp / "warmup.txt"
    tiny.write_text("the cat sat on the mat .\nthe dog ran .\n\n" * config.min_count)
    with timed() as t:
        load_corpus([tiny], config.min_count, config.max_vocab, use_cache=False)
    return {"seconds": round(t.seconds, 3)}


def bench_preprocess(path: Path, config: TrainConfig) -> dict:
    from scbow.corpus import load_corpus

    with timed() as t:
        corpus = load_corpus([path], config.min_count, config.max_vocab, use_cache=False)
    raw = corpus.stats["raw_tokens"]
    return {
        "seconds": round(t.seconds, 3),
        "raw_tokens": raw,
        "raw_tokens_per_s": round(raw / t.seconds, 1),
        "kept_tokens": corpus.stats["tokens"],
        "kept_tokens_per_s": round(corpus.stats["tokens"] / t.seconds, 1),
        "peak_rss_mib_after": peak_rss_mib(),
    }


def bench_cache(path: Path, config: TrainConfig, cache_dir: Path):
    """Build the corpus cache, then time its reload; returns the reloaded corpus too."""
    from scbow.corpus import load_corpus

    with timed() as build:
        load_corpus([path], config.min_count, config.max_vocab, cache_dir=cache_dir)
    with timed() as reload:
        corpus = load_corpus([path], config.min_count, config.max_vocab, cache_dir=cache_dir)
    cache_bytes = sum(f.stat().st_size for f in Path(corpus.cache_path).iterdir())
    return corpus, {
        "build_seconds": round(build.seconds, 3),
        "reload_seconds": round(reload.seconds, 4),
        "cache_bytes": cache_bytes,
        "note": "reload memory-maps the arrays; pages are read when training touches them",
    }


class KernelBench:
    """The arrays and parameters ``scbow.trainer.train`` hands the batch kernel, for one epoch."""

    def __init__(self, corpus, config: TrainConfig):
        from scbow.trainer import corpus_weights, step_rates, trainable_targets

        self.config = config
        self.n_words = len(corpus.vocab)
        # the frequency weights of the initial rows and the per-word step factors, as train() makes them
        self.weights = corpus_weights(corpus, config)
        self.rate = step_rates(self.weights, corpus.vocab.counts, config)
        self.tokens = np.ascontiguousarray(corpus.tokens)
        self.offsets = np.ascontiguousarray(corpus.offsets)
        self.sent_doc = np.ascontiguousarray(corpus.sent_doc)
        self.doc_offsets = np.ascontiguousarray(corpus.doc_offsets)
        targets = trainable_targets(corpus)
        # the order of the first epoch of train()
        self.order = np.random.default_rng([config.seed, 1]).permutation(targets)
        lengths = np.diff(self.offsets)[targets]
        if config.max_length:
            lengths = np.minimum(lengths, config.max_length)
        self.tokens_per_target = float(lengths.mean())
        self._private = {}  # thread count -> private_kernel

    def kernel(self, threads: int):
        from scbow.kernels.cpu import train_batch_parallel, train_batch_serial

        return train_batch_serial if threads == 1 else train_batch_parallel

    def folded(self, rows: int) -> "KernelBench":
        """A copy whose token ids are folded into the ``rows`` most frequent words
        (``id % rows``): the same examples and row count per example, on a matrix slice
        that stays in the core's cache (a diagnostic of what cache misses cost)."""
        import copy

        other = copy.copy(self)
        other._private = {}
        other.tokens = (self.tokens % rows).astype(self.tokens.dtype)
        return other

    def private_kernel(self, threads: int):
        """``train_batch_parallel`` with one private matrix per chunk: the same work on
        ``threads`` threads with no row shared between them (a diagnostic, not training).

        The matrix argument is ignored; chunk c updates copy c. Made once per thread
        count: the copies and the threads are reused by every later call.
        """
        from concurrent.futures import ThreadPoolExecutor

        from scbow.kernels.cpu import train_chunk
        from scbow.trainer import init_vectors

        made = self._private
        if threads in made:
            return made[threads]
        copies = [init_vectors(self.n_words, self.config, self.weights) for _ in range(threads)]
        pool = ThreadPoolExecutor(threads)

        def kernel(W, *rest):
            futures = [pool.submit(train_chunk, copies[c], *rest[:-1], c, rest[-1]) for c in range(threads)]
            for f in futures:
                f.result()

        made[threads] = kernel
        return kernel

    def params(self, threads: int, total: int):
        fparams, iparams = kernel_params(self.config, threads, total)
        return fparams, iparams, np.zeros((threads, 2), dtype=np.float64)

    def run(self, kernel, threads: int, n_targets: int | None = None) -> dict:
        """Train a fresh matrix on the first ``n_targets`` targets (all: one epoch)."""
        from scbow.kernels import cpu as K
        from scbow.trainer import BATCH, init_vectors

        n = len(self.order) if n_targets is None else min(n_targets, len(self.order))
        W = init_vectors(self.n_words, self.config, self.weights)
        fparams, iparams, stats = self.params(threads, n)
        args = (W, self.tokens, self.offsets, self.sent_doc, self.doc_offsets, self.order, self.rate, fparams, iparams,
                stats)
        seconds = 0.0
        examples = 0
        loss_sum = 0.0
        for lo in range(0, n, BATCH):
            iparams[K.P_LO] = lo
            iparams[K.P_HI] = min(lo + BATCH, n)
            iparams[K.P_DONE] = lo
            with timed() as t:
                kernel(*args)
            seconds += t.seconds
            examples += int(stats[:, 1].sum())
            loss_sum += stats[:, 0].sum()
        return {"seconds": seconds, "examples": examples, "mean_loss": loss_sum / max(examples, 1)}


def _serial_cache_state() -> dict:
    """Whether the on-disk cache of the serial kernel has an index file (numba internals)."""
    from scbow.kernels.cpu import train_batch_serial

    try:
        cache = train_batch_serial._cache
        return {"cache_dir": str(cache.cache_path), "index_present": Path(cache._cache_file._index_path).is_file()}
    except AttributeError:
        return {"cache_dir": None, "index_present": None}


def bench_compile(bench: KernelBench, threads: list[int]) -> dict:
    """Time the first call of each batch kernel on a tiny batch; the serial one may load from cache."""
    from scbow.kernels.cpu import train_batch_parallel, train_batch_serial

    before = _serial_cache_state()
    serial = bench.run(train_batch_serial, 1, COMPILE_BATCH)["seconds"]
    hits = sum(train_batch_serial.stats.cache_hits.values())
    misses = sum(train_batch_serial.stats.cache_misses.values())
    parallel_threads = max(threads)
    parallel = bench.run(train_batch_parallel, parallel_threads, COMPILE_BATCH)["seconds"]

    return {
        "serial_first_call_seconds": round(serial, 3),
        "serial_cache": {
            **before,
            "hit": hits > 0,
            "hits": hits,
            "misses": misses,
            "note": "hit: loaded from the on-disk cache; miss: compiled, then saved to it",
        },
        "parallel_first_call_seconds": round(parallel, 3),
        "parallel_cache": "Python threads over the cached chunk kernel: nothing of its own to compile",
        "parallel_threads": parallel_threads,
        "batch_examples": COMPILE_BATCH,
        "note": "first-call time includes running the tiny batch, a negligible share",
    }


def bench_kernel(bench: KernelBench, threads: list[int], repeats: int) -> dict:
    runs = []
    for rep in range(repeats):
        for n in threads:
            say(f"  kernel: {n} thread(s), repeat {rep + 1}/{repeats}")
            r = bench.run(bench.kernel(n), n)
            if not np.isfinite(r["mean_loss"]):
                raise SystemExit(f"the loss became {r['mean_loss']} in the kernel run on {n} threads")
            runs.append({
                "threads": n,
                "repeat": rep + 1,
                "kernel": "serial" if n == 1 else "parallel",
                "seconds": round(r["seconds"], 4),
                "examples": r["examples"],
                "examples_per_s": round(r["examples"] / r["seconds"], 1),
                "mean_loss": round(float(r["mean_loss"]), 5),
            })
    by_threads = {}
    for n in threads:
        eps = [r["examples_per_s"] for r in runs if r["threads"] == n]
        med = statistics.median(eps)
        by_threads[str(n)] = {
            "threads": n,
            "kernel": "serial" if n == 1 else "parallel",
            "runs": len(eps),
            "examples_per_s_median": round(med, 1),
            "examples_per_s_min": min(eps),
            "examples_per_s_max": max(eps),
            "corpus_tokens_per_s_median": round(med * bench.tokens_per_target, 1),
            "seconds_median": round(statistics.median(r["seconds"] for r in runs if r["threads"] == n), 4),
        }
    if "1" in by_threads:
        base = by_threads["1"]["examples_per_s_median"]
        for row in by_threads.values():
            row["scaling_efficiency"] = round(row["examples_per_s_median"] / (row["threads"] * base), 3)
    return {
        "targets_per_epoch": len(bench.order),
        "mean_tokens_per_target": round(bench.tokens_per_target, 3),
        "batch": _batch(),
        "order": "rounds over the thread counts, each round running every count once: " + ",".join(map(str, threads)),
        "runs": runs,
        "by_threads": by_threads,
        "peak_rss_mib_after": peak_rss_mib(),
    }


def _batch() -> int:
    from scbow.trainer import BATCH

    return BATCH


def bench_end_to_end(path: Path, config: TrainConfig, out_dir: Path, threads: int) -> dict:
    from scbow.formats import save_model
    from scbow.trainer import train

    with timed() as total:
        result = train([path], config.replace(epochs=1, threads=threads), quiet=True, use_cache=False)
        with timed() as save:
            save_model(result.model, out_dir / "model")
    return {
        "threads": threads,
        "epochs": 1,
        "seconds": round(total.seconds, 3),
        "kernel_seconds": round(result.seconds, 3),
        "save_seconds": round(save.seconds, 3),
        "other_seconds": round(total.seconds - result.seconds - save.seconds, 3),
        "examples": result.examples,
        "note": "other = reading and encoding the corpus plus setup; kernels were already compiled in this process",
        "peak_rss_mib_after": peak_rss_mib(),
    }


def check_targets(report: dict) -> list[dict]:
    row = report["kernel"]["by_threads"].get(str(TARGET_KERNEL_THREADS))
    kernel = None if row is None else row["examples_per_s_median"]
    prep = report["preprocessing"]["encode"]["raw_tokens_per_s"]

    def verdict(value, target):
        return "not measured" if value is None else ("met" if value >= target else "not met")

    return [
        {
            "name": f"training kernel on {TARGET_KERNEL_THREADS} threads",
            "target": f">= {human(TARGET_KERNEL_EXAMPLES_PER_S, 0)} examples/s",
            "measured": kernel,
            "unit": "examples/s (median)",
            "verdict": verdict(kernel, TARGET_KERNEL_EXAMPLES_PER_S),
        },
        {
            "name": "preprocessing (uncached encode)",
            "target": f">= {human(TARGET_PREPROCESS_TOKENS_PER_S, 0)} raw tokens/s",
            "measured": prep,
            "unit": "raw tokens/s",
            "verdict": verdict(prep, TARGET_PREPROCESS_TOKENS_PER_S),
        },
    ]


def render(report: dict) -> str:
    s, c, p, k, comp, e2e = (report[key] for key in
                             ("settings", "corpus", "preprocessing", "kernel", "compile", "end_to_end"))
    enc, dec, cache = p["encode"], p["decompress"], p["cache"]
    parts = [
        "# Throughput benchmark",
        f"Corpus **{s['corpus']}** (`{s['corpus_file']}`): {c['raw_tokens']:,} raw tokens, "
        f"{c['tokens']:,} kept tokens, {c['sentences']:,} sentences, {c['documents']:,} documents, "
        f"vocabulary {c['vocab_size']:,} (min count {c['min_count']}). "
        f"dim {s['dim']}, threads {s['threads']}, repeats {s['repeats']}, kernel batch {k['batch']:,} examples.",
        "## Targets\n\n" + md_table(
            ("target", "goal", "measured", "verdict"),
            [(t["name"], t["target"], f"{human(t['measured'])} {t['unit']}" if t["measured"] is not None else "n/a",
              f"**{t['verdict']}**") for t in report["targets"]]),
        "## Preprocessing\n\n" + md_table(("step", "seconds", "rate"), [
            ("xz decompression alone (context)", dec["seconds"],
             f"{dec['decompressed_mb_per_s']} MB/s of text ({dec['decompressed_bytes'] / 1e6:.1f} MB)"),
            ("encode raw text, no cache (`load_corpus(use_cache=False)`)", enc["seconds"],
             f"{human(enc['raw_tokens_per_s'])} raw tokens/s, {human(enc['kept_tokens_per_s'])} kept tokens/s"),
            ("encode and write the cache (first call)", cache["build_seconds"], ""),
            ("reload the cache (second call)", cache["reload_seconds"], f"{cache['cache_bytes'] / 2**20:.1f} MiB memory-mapped"),
        ]) + f"\n\nDecompression is {dec['seconds'] / enc['seconds']:.0%} of the uncached encode. "
        f"Encoder warm-up (compile or cache load, not counted above): {p['warmup']['seconds']} s.",
        "## Kernel compile (first call)\n\n" + md_table(("kernel", "seconds", "on-disk cache"), [
            ("train_batch_serial", comp["serial_first_call_seconds"],
             ("hit (existed, loaded)" if comp["serial_cache"]["hit"] else "miss (compiled, then saved)")
             + f"; index file present before: {comp['serial_cache']['index_present']}"),
            (f"train_batch_parallel ({comp['parallel_threads']} threads)", comp["parallel_first_call_seconds"],
             "threads over the serial kernel's cached chunk"),
        ]) + f"\n\n`import numba`: {report['numba_import_seconds']} s.",
        "## Training kernel (one epoch)\n\n"
        f"{k['targets_per_epoch']:,} targets per epoch, {k['mean_tokens_per_target']:.2f} kept tokens per target sentence.\n\n"
        + md_table(("threads", "kernel", "runs", "examples/s median", "min", "max", "corpus tokens/s", "epoch s", "efficiency"), [
            (r["threads"], r["kernel"], r["runs"], human(r["examples_per_s_median"]), human(r["examples_per_s_min"]),
             human(r["examples_per_s_max"]), human(r["corpus_tokens_per_s_median"]), r["seconds_median"],
             r.get("scaling_efficiency", "n/a")) for r in k["by_threads"].values()])
        + "\n\nAll runs:\n\n" + md_table(("repeat", "threads", "seconds", "examples/s", "mean loss"), [
            (r["repeat"], r["threads"], r["seconds"], human(r["examples_per_s"]), r["mean_loss"]) for r in k["runs"]]),
        "## End to end\n\n"
        f"Raw text to saved model, one epoch on {e2e['threads']} threads, no corpus cache: **{e2e['seconds']} s** "
        f"(kernel {e2e['kernel_seconds']} s, save {e2e['save_seconds']} s, reading/encoding and setup "
        f"{e2e['other_seconds']} s). Kernels were already compiled in this process; add the compile times above "
        "for a cold start.",
        f"Peak RSS of the benchmark process: {report['peak_rss_mib']} MiB. Load average (1/5/15 min) at the "
        f"start {report['context']['machine']['load_average_1_5_15']}, at the end {report['load_average_at_end']}.",
        "## Definitions\n\n" + "\n".join(f"- **{key}**: {text}" for key, text in DEFINITIONS.items()),
        context_markdown(report["context"]),
    ]
    return "\n\n".join(parts)


def main(argv=None) -> None:
    args = parse_args(argv)
    ctx = context()
    path = corpus_path(args.corpus)
    config = TrainConfig(dim=args.dim, epochs=1)
    with timed() as numba_import:
        import numba
    available = numba.config.NUMBA_NUM_THREADS
    if max(args.threads) > available:
        sys.exit(f"--threads asks for {max(args.threads)} threads but numba can use {available}; "
                 "set NUMBA_NUM_THREADS")
    e2e_threads = min(END_TO_END_THREADS, available)

    with tempfile.TemporaryDirectory(prefix="scbow-bench-") as tmp:
        tmp = Path(tmp)
        say(f"[1/6] xz decompression of {path.name}")
        decompress = bench_decompress(path)
        say("[2/6] preprocessing (uncached encode)")
        warmup = warm_encoder(config, tmp)
        encode = bench_preprocess(path, config)
        say("[3/6] corpus cache: build, then reload")
        corpus, cache = bench_cache(path, config, tmp / "cache")
        bench = KernelBench(corpus, config)
        say("[4/6] kernel compile")
        compile_ = bench_compile(bench, args.threads)
        say(f"[5/6] training kernel: threads {args.threads}, {args.repeats} repeat(s)")
        kernel = bench_kernel(bench, args.threads, args.repeats)
        say(f"[6/6] end to end on {e2e_threads} threads")
        e2e = bench_end_to_end(path, config, tmp, e2e_threads)

    report = {
        "benchmark": "throughput",
        "settings": {
            "corpus": args.corpus,
            "corpus_file": str(path),
            "threads": args.threads,
            "repeats": args.repeats,
            "dim": args.dim,
            "end_to_end_threads": e2e_threads,
            "numba_num_threads": available,
            "out": str(args.out),
            "config": config.to_dict(),
        },
        "corpus": {k: v for k, v in corpus.stats.items() if k != "files"},
        "preprocessing": {"decompress": decompress, "warmup": warmup, "encode": encode, "cache": cache},
        "numba_import_seconds": round(numba_import.seconds, 3),
        "compile": compile_,
        "kernel": kernel,
        "end_to_end": e2e,
        "peak_rss_mib": peak_rss_mib(),
        # with the start value in context.machine: shows competing load on a shared machine
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "definitions": DEFINITIONS,
        "context": ctx,
    }
    report["targets"] = check_targets(report)
    markdown = render(report)
    json_path, md_path = write_report(args.out, report, markdown)
    print(markdown)
    say(f"saved {json_path} and {md_path}")


if __name__ == "__main__":
    main()
