"""Speed of scbow-numba against its peers, in one run: the one speed suite.

    python -m benchmarks.run speed                 # full run: 10M corpus, threads 1..N, 3 repeats
    python -m benchmarks.run speed --quick         # plumbing check: 1M corpus, 1 repeat, no 100M
    python -m benchmarks.run speed --only kernel,inference --repeats 5

Sections (``--only`` picks some; targets of skipped sections read "not measured"):

- ``preprocess``: tokens/s of the whole encode (tokenize, count, encode) of the decompressed
  text and of its first phase (to the encoder's last progress report); an encode from the
  ``.xz`` file as context; the corpus cache built, then reloaded (memory-mapped).
- ``kernel``: compile time, then one epoch of the sentence part at every thread count by
  ``scbow.training.train`` (``TrainResult.seconds``, as ``ab`` measures it), alternating with
  the PyTorch implementation (``benchmarks.torch_scbow``, its own process) at the same
  thread count; scaling; bytes of matrix rows touched per second beside a NumPy copy's GB/s.
- ``wordpart``: one pass of the word part at every thread count (its kernel seconds),
  alternating with one epoch of gensim's skip-gram at the same settings on the same tokens.
- ``e2e``: raw text to saved model, one epoch, 2 threads, fresh processes, empty corpus
  cache: scbow (default dims, and the paper's 300 as context) alternating with gensim
  word2vec CBOW (its own tokenizer, the paper's settings).
- ``inference``: all pairs of the 19 STS sets scored from raw sentences with a trained model.
- ``memory``: peak RSS of a one-epoch training process on the corpus and on 100M, against
  the bytes of the token ids plus the matrix.

Scratch lives in ``benchmarks/.work/speed/``: the decompressed text is kept, a run's caches
and models are removed unless ``--keep-work``. ``--quick`` writes to
``benchmarks/.work/speed/quick`` so that it never replaces the report.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from scbow.config import TrainConfig

from .common import (
    CORPORA,
    REPO_ROOT,
    RESULTS_DIR,
    WORK_ROOT,
    WorkerError,
    context,
    context_markdown,
    corpus_path,
    data_dir,
    definitions_markdown,
    have,
    human,
    md_table,
    parse_threads,
    peak_rss_mib,
    plain_text,
    run_worker,
    say,
    stats,
    timed,
    worker_env,
    write_report,
    write_tokens,
)
from .targets import TARGETS

WORK_DIR = WORK_ROOT / "speed"
SECTIONS = ("preprocess", "kernel", "wordpart", "e2e", "inference", "memory")

# The goals (benchmarks/targets.py): ratios from one run; absolute figures only as context.
T_E2E_RATIO = TARGETS["e2e_over_gensim"].value
T_KERNEL_EPS = TARGETS["kernel_examples_per_s"].value
T_TORCH_RATIO = TARGETS["kernel_over_torch"].value
T_SCALING = TARGETS["scaling_2_threads"].value
T_WORDPART_RATIO = TARGETS["wordpart_over_gensim"].value
T_WORDPART_SCALING = TARGETS["wordpart_scaling_2_threads"].value
T_PREPROCESS = TARGETS["preprocess_tokens_per_s"].value
T_RELOAD_S = TARGETS["cached_reload_s"].value
T_STS_S = TARGETS["sts_all_pairs_s"].value
T_MEMORY_RATIO = TARGETS["memory_over_ids_matrix"].value
TARGET_THREADS = 2
E2E_THREADS = 2
PAPER_DIM = 300
PAPER_STS = {"pairs": 17_608, "seconds": 7.7, "note": "Kenter et al. 2016: 17,608 pairs on one CPU in 7.7 s"}
GENSIM_FILED = {"seconds": 6.8, "raw_words_per_s": 1.83e6,
                "note": "measured when the targets were set: gensim CBOW, 300 dims, one epoch of 10M, 2 workers, "
                        "tokenizing not counted"}
COPY_MB = 48  # a 300-dim matrix of the 10M vocabulary: about 48 MB

DEFINITIONS = {
    "examples_per_s": "training examples / seconds inside the CPU backend's batches of one epoch of "
                      "scbow.training.train (TrainResult.examples / TrainResult.seconds; scbow), or the timed "
                      "optimizer steps (torch); one example = a target, its positives and its negatives",
    "corpus_tokens_per_s": "examples_per_s x mean kept tokens of a target sentence: the rate the corpus is consumed",
    "scaling": "examples_per_s on N threads / examples_per_s on 1 thread (the serial kernel, what --threads 1 "
               "runs); efficiency = scaling / N",
    "row_bytes_per_s": "examples_per_s x tokens per example (all its sentences) x dim x 4 bytes x 3 (each "
                       "token's row read once for the mean, then read and written once by the update)",
    "copy_gb_per_s": "np.copyto of a float32 array: (bytes read + bytes written) / seconds, one thread",
    "e2e_seconds": "in one fresh process, from the start of reading the raw text to the saved model: "
                   "library imports not counted (shown apart with the whole process's wall time); scbow's "
                   "time includes compiling its kernels (the first training call, on a tiny corpus)",
    "preprocess_tokens_per_s": "raw tokens (tokenizer output before the vocabulary cut) / seconds",
    "peak_rss": "VmHWM of the training process, reset after imports and kernel compilation; 'added' is "
                "peak minus the RSS of the idle process (interpreter, libraries, compiled kernels)",
    "spread": "(max - min) / median over the repeats",
}


def run_job(args: list) -> dict:
    """One ``benchmarks.speed_workers`` job in a fresh process (see there)."""
    return run_worker("benchmarks.speed_workers", args)


# -------------------------------------------------------------------------- preprocessing


def encode_phases(path: Path, config: TrainConfig) -> tuple[dict, float, float]:
    """``load_corpus(use_cache=False)`` of ``path``, timed in its two phases: reading and
    tokenizing the text (up to the last progress report, which follows the last block), then
    counting and encoding. Returns (corpus stats, tokenize seconds, whole seconds)."""
    from scbow.training import load_corpus

    last = [0.0]

    def progress(tokens, done, size):
        last[0] = time.perf_counter()

    t0 = time.perf_counter()
    corpus = load_corpus([path], config.min_count, config.max_vocab, use_cache=False, progress=progress)
    whole = time.perf_counter() - t0
    tokenize = (last[0] - t0) if last[0] else whole
    return dict(corpus.stats), tokenize, whole


def bench_preprocess(text: Path, xz: Path, config: TrainConfig, repeats: int, cache_dir: Path) -> dict:
    from scbow.training import load_corpus

    with tempfile.TemporaryDirectory(dir=WORK_DIR) as tmp, timed() as warm:
        tiny_corpus(Path(tmp), config)  # the encoder kernel's compile or cache load is paid here
    tok_rates, enc_rates, enc_secs, tok_secs = [], [], [], []
    raw = kept = None
    for rep in range(repeats):
        say(f"  preprocess: repeat {rep + 1}/{repeats}")
        corpus_stats, s, whole = encode_phases(text, config)
        raw, kept = corpus_stats["raw_tokens"], corpus_stats["tokens"]
        tok_rates.append(raw / s)
        tok_secs.append(s)
        enc_rates.append(raw / whole)
        enc_secs.append(whole)
    say("  preprocess: encode from the .xz file (context), cache build and reload")
    with timed() as txz:
        load_corpus([xz], config.min_count, config.max_vocab, use_cache=False)
    with timed() as build:
        load_corpus([text], config.min_count, config.max_vocab, cache_dir=cache_dir)
    reloads, touches = [], []
    for _ in range(max(repeats, 3)):
        with timed() as t:
            corpus = load_corpus([text], config.min_count, config.max_vocab, cache_dir=cache_dir)
        reloads.append(t.seconds)
        with timed() as t:
            for a in (corpus.tokens, corpus.offsets, corpus.sent_doc, corpus.doc_offsets):
                np.asarray(a).sum()  # read every page
        touches.append(t.seconds)
    cache_bytes = sum(f.stat().st_size for f in Path(corpus.cache_path).iterdir())
    return {
        "raw_tokens": raw,
        "kept_tokens": kept,
        "encoder_warmup_seconds": round(warm.seconds, 3),
        "tokenize_tokens_per_s": stats(tok_rates),
        "tokenize_seconds": stats(tok_secs),
        "encode_tokens_per_s": stats(enc_rates),
        "encode_seconds": stats(enc_secs),
        "count_and_encode_share": round(1 - statistics.median(tok_secs) / statistics.median(enc_secs), 3),
        "encode_xz_seconds": round(txz.seconds, 3),
        "encode_xz_tokens_per_s": round(raw / txz.seconds, 1),
        "cache_build_seconds": round(build.seconds, 3),
        "cache_reload_seconds": stats(reloads),
        "cache_reload_and_read_all_seconds": stats(np.add(reloads, touches)),
        "cache_bytes": cache_bytes,
        "cache_note": "the reload memory-maps the arrays; 'and read all' also reads every page (page cache warm)",
    }


# -------------------------------------------------------------------------- kernel and torch


def example_shape(corpus, config: TrainConfig, n: int = 50_000) -> dict:
    """Tokens per example (all its sentences) and per target, from the examples of ``n`` targets."""
    from scbow.training import first_epoch

    from .torch_scbow import build_members, tokens_per_example

    order = first_epoch(corpus, config)[:n]
    members, n_pos = build_members(order, corpus.sent_doc, corpus.doc_offsets, config.negatives,
                                   config.negative_mode, np.random.default_rng(0))
    lengths = np.diff(np.asarray(corpus.offsets))[order]
    return {"tokens_per_example": round(tokens_per_example(members, corpus.offsets, config.max_length), 3),
            "tokens_per_target": round(float(lengths.mean()), 3),
            "sentences_per_example": round(float(1 + n_pos.mean() + config.negatives), 3),
            "sampled_targets": len(order)}


def copy_gb_per_s(nbytes: int, repeats: int) -> dict:
    src = np.ones(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    secs = []
    for _ in range(repeats):
        with timed() as t:
            np.copyto(dst, src)
        secs.append(t.seconds)
    rates = [2 * src.nbytes / s / 1e9 for s in secs]
    return {"bytes": int(src.nbytes), "gb_per_s": stats(rates)}


def tiny_corpus(tmp: Path, config: TrainConfig):
    """A corpus of a few sentences (the kernels' first call: they load or compile there)."""
    from scbow.training import load_corpus

    tiny = tmp / "tiny.txt"
    tiny.write_text(("the cat sat on the mat .\nthe dog ran to the cat .\na bird sang .\n\n") * 4 * config.min_count)
    return load_corpus([tiny], config.min_count, config.max_vocab, use_cache=False)


def sentence_epoch(corpus, config: TrainConfig, threads: int) -> dict:
    """One epoch of the sentence part on ``threads`` threads, trained by ``scbow.training.train``."""
    from scbow.training import train

    cfg = config.replace(device="cpu", epochs=1, threads=threads, word_passes=0, common_components=-1)
    r = train(corpus, cfg, quiet=True)
    return {"seconds": r.seconds, "examples": r.examples, "mean_loss": float(np.mean(r.losses))}


def compile_times(tiny, config: TrainConfig, threads: list[int]) -> dict:
    """Seconds of the first training call in this process on a tiny corpus (its kernels load from
    numba's on-disk cache, or compile), on 1 thread and on the most threads asked for."""
    from scbow.kernels.cpu import train_batch_serial

    with timed() as serial:
        sentence_epoch(tiny, config, 1)
    # Dispatcher.stats: numba's public counters of on-disk cache hits and misses
    hits = sum(train_batch_serial.stats.cache_hits.values())
    misses = sum(train_batch_serial.stats.cache_misses.values())
    out = {"serial_first_call_seconds": round(serial.seconds, 3),
           "serial_cache": {"hit": hits > 0, "hits": hits, "misses": misses,
                            "note": "hit: loaded from the on-disk cache; miss: compiled, then saved to it"},
           "parallel_first_call_seconds": None, "parallel_threads": None, "tiny_corpus_sentences": tiny.n_sentences}
    if max(threads) > 1:
        with timed() as par:
            sentence_epoch(tiny, config, max(threads))
        out["parallel_first_call_seconds"] = round(par.seconds, 3)
        out["parallel_threads"] = max(threads)
    return out


class TorchPeer:
    """The PyTorch implementation (``benchmarks.torch_scbow``) in its own process, answering one
    measurement per request, after it has checked its loss and gradient against ``scbow.reference``."""

    def __init__(self, corpus_file: Path, cache_dir: Path, dim: int, batches: int, warmup: int, log: Path):
        cmd = [sys.executable, "-m", "benchmarks.torch_scbow", "--corpus", str(corpus_file), "--cache-dir",
               str(cache_dir), "--dim", str(dim), "--batches", str(batches), "--warmup", str(warmup)]
        self.log = open(log, "w")
        self.proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=worker_env(), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.batches = batches
        self.hello = self._read()
        check = self.hello.get("oracle_check") or {}
        if not check.get("passed"):
            self.close()
            raise WorkerError(f"the torch peer's loss and gradient do not match scbow.reference ({check}): "
                              "no ratio is reported against a peer that computes something else")

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=30)
            self.log.flush()
            raise WorkerError(f"the torch worker exited with status {self.proc.returncode}; see {self.log.name}")
        return json.loads(line)

    def measure(self, threads: int) -> dict:
        self.proc.stdin.write(json.dumps({"threads": threads, "batches": self.batches}) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                self.proc.stdin.write(json.dumps({"quit": True}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            self.log.close()


def bench_kernel(corpus, text: Path, cache_dir: Path, config: TrainConfig, threads: list[int], repeats: int,
                 torch_batches: int, torch_warmup: int, run_dir: Path, with_torch: bool = True) -> dict:
    from scbow.training import first_epoch

    order = first_epoch(corpus, config)
    lengths = np.diff(np.asarray(corpus.offsets))[order]
    tokens_per_target = float(np.minimum(lengths, config.max_length).mean() if config.max_length else lengths.mean())
    say("  kernel: compile")
    compile_ = compile_times(tiny_corpus(run_dir, config), config, threads)
    torch, torch_note = None, (None if with_torch else "not run (--no-torch)")
    if with_torch and have("torch"):
        say("  torch: starting its worker (builds the batches before any clock starts)")
        try:
            torch = TorchPeer(text, cache_dir, config.dim, torch_batches, torch_warmup, run_dir / "torch.log")
        except WorkerError as exc:
            torch_note = str(exc)
    elif with_torch:
        torch_note = "torch is not installed (pip install '.[bench]')"
    runs, torch_runs = [], []
    try:
        for rep in range(repeats):
            for n in threads:
                kind = "serial" if n == 1 else "parallel"
                say(f"  kernel: {kind}, {n} thread(s), repeat {rep + 1}/{repeats}")
                r = sentence_epoch(corpus, config, n)
                runs.append({"repeat": rep + 1, "threads": n, "kernel": kind, "seconds": round(r["seconds"], 4),
                             "examples": r["examples"], "examples_per_s": round(r["examples"] / r["seconds"], 1),
                             "mean_loss": round(r["mean_loss"], 5)})
                if torch is not None:
                    say(f"  torch: {n} thread(s), repeat {rep + 1}/{repeats}")
                    tr = torch.measure(n)
                    tr["repeat"] = rep + 1
                    torch_runs.append(tr)
    finally:
        if torch is not None:
            torch.close()
    rows = {}
    for kind, n in dict.fromkeys((r["kernel"], r["threads"]) for r in runs):
        eps = [r["examples_per_s"] for r in runs if r["kernel"] == kind and r["threads"] == n]
        s = stats(eps)
        rows[f"{kind}-{n}"] = {"kernel": kind, "threads": n, "examples_per_s": s,
                               "corpus_tokens_per_s": round(s["median"] * tokens_per_target, 1)}
    base = rows.get("serial-1")
    for row in rows.values():
        if base:
            row["scaling"] = round(row["examples_per_s"]["median"] / base["examples_per_s"]["median"], 3)
            row["efficiency"] = round(row["scaling"] / row["threads"], 3)
    torch_rows = {}
    for n in threads:
        eps = [r["examples_per_s"] for r in torch_runs if r["threads"] == n]
        if eps:
            torch_rows[str(n)] = {"threads": n, "examples_per_s": stats(eps)}
            mine = rows.get(("serial" if n == 1 else "parallel") + f"-{n}")
            if mine:
                torch_rows[str(n)]["scbow_over_torch"] = round(mine["examples_per_s"]["median"] / stats(eps)["median"], 2)
    return {
        "targets_per_epoch": len(order),
        "mean_tokens_per_target": round(tokens_per_target, 3),
        "compile": compile_,
        "runs": runs,
        "rows": rows,
        "torch": {"available": torch is not None, "note": torch_note, "worker": torch.hello if torch else None,
                  "batches_timed": torch_batches, "warmup_batches": torch_warmup, "runs": torch_runs,
                  "rows": torch_rows},
        "order": "each repeat runs, for every thread count in turn, the kernel epoch(s) then the torch batches",
    }


def bench_bandwidth(kernel: dict, shape: dict, dim: int, n_words: int, repeats: int) -> dict:
    per_example = shape["tokens_per_example"] * dim * 4 * 3
    rows = {key: {"threads": row["threads"], "kernel": row["kernel"],
                  "row_gb_per_s": round(row["examples_per_s"]["median"] * per_example / 1e9, 2)}
            for key, row in kernel["rows"].items()}
    return {
        "bytes_per_example": round(per_example, 1),
        "rows": rows,
        "copy_48mb": copy_gb_per_s(COPY_MB * 10**6, repeats),
        "copy_matrix": copy_gb_per_s(n_words * dim * 4, repeats),
        "matrix_bytes": n_words * dim * 4,
        "l3_bytes": l3_bytes(),
    }


def l3_bytes() -> int | None:
    try:
        text = Path("/sys/devices/system/cpu/cpu0/cache/index3/size").read_text().strip()
        return int(text.rstrip("K")) * 1024 if text.endswith("K") else int(text)
    except (OSError, ValueError):
        return None


# -------------------------------------------------------------------------- end to end


def bench_e2e(text: Path, dim: int, repeats: int, run_dir: Path, with_paper_dim: bool, threads: int) -> dict:
    # (row key, system, dims): "scbow" is the defaults (sentence and word part), "scbow-sentence"
    # the sentence part alone (--word-passes 0), one pass like gensim's one epoch of CBOW
    systems = [("scbow", dim), ("scbow-sentence", dim)] + ([("gensim", PAPER_DIM)] if have("gensim") else [])
    gensim_note = None if have("gensim") else "gensim is not installed (pip install '.[bench]')"
    if with_paper_dim and dim != PAPER_DIM:
        systems.append(("scbow", PAPER_DIM))
    runs = []
    for rep in range(repeats):
        for system, d in systems:
            say(f"  end to end: {system}, {d} dims, repeat {rep + 1}/{repeats}")
            out = run_dir / f"e2e-{system}-{d}-{rep}"
            if system.startswith("scbow"):
                args = ["scbow-e2e", text, out, "--cache-dir", out / "empty-cache", "--threads", threads, "--dim", d]
                args += ["--word-passes", "0"] if system == "scbow-sentence" else []
            else:
                args = ["gensim-e2e", text, out, "--threads", threads, "--dim", d]
            r = run_job(args)
            r["repeat"] = rep + 1
            r["system"] = system
            runs.append(r)
    rows = {}
    for system, d in systems:
        mine = [r for r in runs if r["system"] == system and r["dim"] == d]
        rows[f"{system}-{d}"] = {
            "system": system, "dim": d, "seconds": stats([r["seconds"] for r in mine]),
            "process_wall_seconds": stats([r["process_wall_seconds"] for r in mine]),
            "phases": {k: round(statistics.median(r["phases"][k] for r in mine), 3) for k in mine[0]["phases"]},
            "peak_rss_mib": max(r["memory_mib"].get("VmHWM", 0) for r in mine),
        }
    g = rows.get(f"gensim-{PAPER_DIM}")
    if g:
        for row in rows.values():
            row["over_gensim"] = round(row["seconds"]["median"] / g["seconds"]["median"], 3)
            row["wall_over_gensim"] = round(row["process_wall_seconds"]["median"] / g["process_wall_seconds"]["median"], 3)
    model = next((r["model"] for r in runs if r["system"] == "scbow" and r["dim"] == dim), None)
    for row in rows.values():
        row["word_passes"] = next((r.get("word_passes") for r in runs if r["system"] == row["system"]), None)
    return {"threads": threads, "text": str(text), "runs": runs, "rows": rows, "gensim_note": gensim_note,
            "model": model, "order": "Each repeat runs " + ", ".join(f"{s} {d}d" for s, d in systems)}


# -------------------------------------------------------------------------- word part


def bench_wordpart(corpus, config: TrainConfig, threads: list[int], repeats: int, run_dir: Path) -> dict:
    """One pass of the word part at each thread count, alternating with gensim's skip-gram epoch.

    Each run is ``scbow.training.train`` with one word pass after a one-epoch sentence part; the
    pass's seconds are its kernel seconds (the word phase's, read by a hook at the end).
    """
    from scbow.training import Hook, train

    class Seconds(Hook):
        def after_training(self, state, matrices):
            self.seconds = state["word"].seconds

    def one_pass(on, t: int) -> dict:
        cfg = config.replace(device="cpu", epochs=1, threads=t, word_passes=1, common_components=-1)
        hook = Seconds()
        info = train(on, cfg, quiet=True, hooks=[hook]).model.info["training"]["word_part"]
        return {**info, "kernel_seconds": hook.seconds}

    one_pass(tiny_corpus(run_dir, config), threads[0])  # loads (or compiles) the kernels before any clock starts
    tokens_file = run_dir / "wordpart-tokens.txt" if have("gensim") else None
    if tokens_file:
        write_tokens(corpus, tokens_file)
    runs, sample = [], None
    for rep in range(repeats):
        for t in threads:
            say(f"  word part: {t} threads, repeat {rep + 1}/{repeats}")
            part = one_pass(corpus, t)
            sample = part["sample"]
            runs.append({"system": "scbow", "threads": t, "seconds": part["kernel_seconds"]})
            if tokens_file is not None:
                r = run_job(["gensim-skipgram", tokens_file, "--threads", t, "--dim", config.word_dim,
                             "--sample", sample, "--window", config.word_context,
                             "--negative", config.word_noise, "--alpha", config.word_lr])
                runs.append({"system": "gensim", "threads": t, "seconds": r["train_seconds"],
                             "effective_words": r["effective_words"], "gensim": r["gensim"]})
    rows = []
    for t in threads:
        mine = [r["seconds"] for r in runs if r["system"] == "scbow" and r["threads"] == t]
        theirs = [r["seconds"] for r in runs if r["system"] == "gensim" and r["threads"] == t]
        row = {"threads": t, "seconds": stats(mine), "sentences_per_second": corpus.n_sentences / statistics.median(mine)}
        if theirs:
            row["gensim_seconds"] = stats(theirs)
            row["gensim_over_scbow"] = round(statistics.median(theirs) / statistics.median(mine), 3)
        rows.append(row)
    return {"dim": config.word_dim, "window": config.word_context, "negatives": config.word_noise, "sample": sample,
            "raw_tokens": corpus.stats.get("raw_tokens"), "sentences": corpus.n_sentences, "rows": rows,
            "runs": runs, "gensim_note": None if tokens_file else "gensim is not installed (pip install '.[bench]')"}


# -------------------------------------------------------------------------- inference


def bench_inference(model_dir: str | None, corpus, config: TrainConfig, repeats: int) -> dict:
    import scbow
    from scbow.text.tokenize import tokenize
    from scbow.use.evaluate import pair_cosines, read_sts, score_set

    sts_dir = data_dir() / "sts"
    files = sorted(sts_dir.glob("*.tsv"))
    if not files:
        raise WorkerError(f"no STS sets in {sts_dir}")
    sets = [read_sts(f) for f in files]
    pairs = sum(len(s.gold) for s in sets)
    if model_dir is not None:
        with timed() as load:
            model = scbow.load(model_dir)
        source = "the model saved by the first scbow end-to-end run, loaded with scbow.load"
    else:
        from scbow.training import train

        model = train(corpus, config.replace(epochs=1, threads=1), quiet=True).model
        load = None
        source = "trained in this process (one epoch, serial kernel): the end-to-end section did not run"

    def cosines():
        for s in sets:
            pair_cosines(model.encode, s.first, s.second)

    def scores():
        for s in sets:
            score_set(model.encode, s)

    def tokens():
        for s in sets:
            for x in s.first:
                tokenize(x)
            for x in s.second:
                tokenize(x)

    out = {"sets": len(sets), "pairs": pairs, "model_source": source, "vocab_size": len(model), "dim": model.dim,
           "load_seconds": round(load.seconds, 4) if load else None}
    with timed() as cold:
        cosines()
    out["first_call_seconds"] = round(cold.seconds, 4)
    for name, fn in (("cosines", cosines), ("with_correlations", scores), ("tokenize_only", tokens)):
        fn()
        secs = []
        for _ in range(repeats):
            with timed() as t:
                fn()
            secs.append(t.seconds)
        out[name + "_seconds"] = stats(secs)
    out["pairs_per_s"] = round(pairs / out["cosines_seconds"]["median"], 1)
    out["paper"] = dict(PAPER_STS, pairs_per_s=round(PAPER_STS["pairs"] / PAPER_STS["seconds"], 1))
    return out


# -------------------------------------------------------------------------- memory


def bench_memory(corpora: list[tuple[str, Path]], cache_dir: Path, dim: int, run_dir: Path, threads: int) -> dict:
    rows = {}
    for name, path in corpora:
        say(f"  memory: {name}: corpus cache")
        built = run_job(["build-cache", path, "--cache-dir", cache_dir])
        say(f"  memory: {name}: one epoch in a fresh process")
        r = run_job(["scbow-memory", path, run_dir / f"memory-{name}", "--cache-dir", cache_dir,
                        "--threads", threads, "--dim", dim])
        ref = (r["token_bytes"] + r["matrix_bytes"]) / 2**20
        idle = r["idle_mib"].get("VmRSS")
        peak_loop = r["end_of_epoch_mib"].get("VmHWM")
        peak = r["end_mib"].get("VmHWM")
        row = {**r, "corpus": name, "corpus_file": r["corpus"], "cache_build_seconds": built["seconds"],
               "cache_build_peak_rss_mib": built.get("memory_mib", {}).get("VmHWM"), "ids_plus_matrix_mib": round(ref, 1)}
        if peak is not None and idle is not None:
            loop = peak_loop is not None
            row.update(peak_mib=peak, peak_training_loop_mib=peak_loop, added_mib=round(peak - idle, 1),
                       added_training_loop_mib=round(peak_loop - idle, 1) if loop else None,
                       peak_ratio=round(peak / ref, 2), added_ratio=round((peak - idle) / ref, 2),
                       added_training_loop_ratio=round((peak_loop - idle) / ref, 2) if loop else None)
        rows[name] = row
    return {"threads": threads, "dim": dim, "rows": rows}


# -------------------------------------------------------------------------- targets


def _pct(part, whole):
    return f"{part / whole:.0%}" if whole else "n/a"


def check_targets(r: dict, corpus_name: str) -> list[dict]:
    out = []

    def add(name, goal, measured, met, bound, context=""):
        out.append({"target": name, "goal": goal, "measured": measured,
                    "met": None if met is None else bool(met), "bound": bound, "context": context})

    e2e = r.get("e2e")
    dim = r["settings"]["dim"]
    if e2e and f"gensim-{PAPER_DIM}" in e2e["rows"]:
        # like for like: one pass of the sentence objective against one epoch of CBOW
        s = e2e["rows"].get(f"scbow-sentence-{dim}") or e2e["rows"][f"scbow-{dim}"]
        g = e2e["rows"][f"gensim-{PAPER_DIM}"]
        ratio = s["over_gensim"]
        ph = s["phases"]
        total = s["seconds"]["median"]
        gp = g["phases"]
        bound = (f"scbow {total:.1f} s: compile {ph['compile']} s ({_pct(ph['compile'], total)}), encode {ph['encode']} s "
                 f"({_pct(ph['encode'], total)}), kernel {ph['kernel']} s, post-processing {ph['post_process']} s "
                 f"({_pct(ph['post_process'], total)}), save {ph['save']} s; gensim {g['seconds']['median']:.1f} s: "
                 f"tokenize {gp['tokenize']} s, vocabulary {gp['build_vocab']} s, train {gp['train']} s")
        extra = ""
        if f"scbow-{PAPER_DIM}" in e2e["rows"] and dim != PAPER_DIM:
            extra = f"scbow at gensim's {PAPER_DIM} dims: {e2e['rows'][f'scbow-{PAPER_DIM}']['over_gensim']}x"
        full = e2e["rows"].get(f"scbow-{dim}")
        if full is not None and full is not s:
            fp = full["phases"]
            extra += ((extra and "; ") + f"the defaults with the word part ({full.get('word_passes')} passes of skip-gram): "
                      f"{full['seconds']['median']:.1f} s, {full['over_gensim']}x gensim CBOW's epoch; word part "
                      f"{fp.get('word_part', 0)} s, sentence part {fp['kernel']} s")
        add(f"end to end, one epoch, {e2e['threads']} threads: scbow sentence part ({dim} dims) / gensim CBOW "
            f"({PAPER_DIM} dims)",
            f"<= {T_E2E_RATIO}x", f"{ratio}x ({total:.1f} s / {g['seconds']['median']:.1f} s)",
            ratio <= T_E2E_RATIO, bound, extra)
    else:
        add("end to end vs gensim CBOW", f"<= {T_E2E_RATIO}x", "not measured", None,
            (e2e or {}).get("gensim_note") or "section not run")

    k = r.get("kernel")
    row2 = k and k["rows"].get(f"parallel-{TARGET_THREADS}")
    bw = r.get("bandwidth")
    if row2:
        eps = row2["examples_per_s"]["median"]
        bound = ""
        if bw:
            gb = bw["rows"][f"parallel-{TARGET_THREADS}"]["row_gb_per_s"]
            bound = (f"{r['example_shape']['tokens_per_example']:.0f} token rows of {dim} floats per example, "
                     f"read for the means and read+written by the update: {gb} GB/s of rows against a "
                     f"{bw['copy_48mb']['gb_per_s']['median']:.1f} GB/s one-thread copy; matrix "
                     f"{bw['matrix_bytes'] / 1e6:.0f} MB")
        add(f"training kernel, {TARGET_THREADS} threads ({corpus_name})", f">= {human(T_KERNEL_EPS, 0)} examples/s",
            f"{human(eps)} examples/s ({eps / T_KERNEL_EPS:.2f}x the goal)", eps >= T_KERNEL_EPS, bound)
        t = k["torch"]["rows"].get(str(TARGET_THREADS))
        if t:
            ratio = t["scbow_over_torch"]
            t1 = k["torch"]["rows"].get("1")
            ctx = f"1 thread: {t1['scbow_over_torch']}x" if t1 else ""
            add(f"training kernel / PyTorch implementation, {TARGET_THREADS} threads", f">= {T_TORCH_RATIO:g}x",
                f"{ratio}x ({human(eps)} / {human(t['examples_per_s']['median'])} examples/s)", ratio >= T_TORCH_RATIO,
                f"torch takes {1e3 * k['torch']['worker']['batch_size'] / t['examples_per_s']['median']:.1f} ms per "
                f"batch of {k['torch']['worker']['batch_size']} examples (forward, autograd backward, sparse SGD "
                "step), about as long as the kernel takes for "
                f"{eps * k['torch']['worker']['batch_size'] / t['examples_per_s']['median']:,.0f} examples", ctx)
        else:
            add("training kernel / PyTorch implementation", f">= {T_TORCH_RATIO:g}x", "not measured", None,
                k["torch"]["note"] or "no torch run at this thread count")
        if "scaling" in row2:
            sc = row2["scaling"]
            bound = "what bounds the threads (shared cache and memory, the hypervisor, Hogwild's shared rows): NOTES.md"
            add(f"{TARGET_THREADS}-thread scaling (over the 1-thread serial kernel)", f">= {T_SCALING}x", f"{sc}x",
                sc >= T_SCALING, bound)
    else:
        add(f"training kernel, {TARGET_THREADS} threads", f">= {human(T_KERNEL_EPS, 0)} examples/s", "not measured", None,
            "section not run or no 2-thread count")

    w = r.get("wordpart")
    if w:
        by_threads = {row["threads"]: row for row in w["rows"]}
        for t, row in sorted(by_threads.items()):
            ratio = row.get("gensim_over_scbow")
            add(f"word part, one pass, {t} thread{'s' if t > 1 else ''}: gensim skip-gram seconds / scbow seconds",
                f">= {T_WORDPART_RATIO:g}x",
                f"{ratio}x ({row['gensim_seconds']['median']:.1f} s / {row['seconds']['median']:.1f} s)"
                if ratio is not None else "not measured", None if ratio is None else ratio >= T_WORDPART_RATIO,
                "a window at a time: the window's contexts against its centre and shared noise words, each row "
                "read once a window (kernels.cpu.sgns_window)" if ratio is not None else w.get("gensim_note") or "")
        if 1 in by_threads and 2 in by_threads:
            sc = round(by_threads[2]["sentences_per_second"] / by_threads[1]["sentences_per_second"], 3)
            g1, g2 = (by_threads[t].get("gensim_seconds") for t in (1, 2))
            ctx = f"gensim's: {g1['median'] / g2['median']:.3f}x" if g1 and g2 else ""
            add("word part, 2-thread scaling (sentences/s over 1 thread)", f">= {T_WORDPART_SCALING:g}x", f"{sc}x",
                sc >= T_WORDPART_SCALING, "Hogwild on shared rows: the frequent words' output rows move between "
                "the cores", ctx)
    else:
        add("word part vs gensim skip-gram", f">= {T_WORDPART_RATIO:g}x", "not measured", None, "section not run")

    p = r.get("preprocess")
    if p:
        rate = p["encode_tokens_per_s"]["median"]
        tok = p["tokenize_tokens_per_s"]["median"]
        add("preprocessing: tokenize, count, encode (plain text)", f">= {human(T_PREPROCESS, 0)} raw tokens/s",
            f"{human(rate)} tokens/s", rate >= T_PREPROCESS,
            f"reading and tokenizing run at {human(tok)} tokens/s ({_pct(1 - p['count_and_encode_share'], 1)} of the "
            "encode time): one thread scanning each block's whitespace-separated chunks through a compiled "
            "hash table (the regular expression runs once per distinct chunk); counting and encoding are the rest",
            f"from the .xz file: {human(p['encode_xz_tokens_per_s'])} tokens/s")
        rl = p["cache_reload_seconds"]["median"]
        add(f"cached reload of the {corpus_name} corpus", f"< {T_RELOAD_S:g} s", f"{rl:.4f} s", rl < T_RELOAD_S, "",
            f"reading every page too: {p['cache_reload_and_read_all_seconds']['median']:.3f} s")
    else:
        add("preprocessing", f">= {human(T_PREPROCESS, 0)} raw tokens/s", "not measured", None, "section not run")

    inf = r.get("inference")
    if inf:
        s = inf["cosines_seconds"]["median"]
        add(f"all {inf['pairs']:,} pairs of the {inf['sets']} STS sets from raw sentences", f"<= {T_STS_S:g} s",
            f"{s:.3f} s", s <= T_STS_S,
            f"tokenizing the sentences alone: {inf['tokenize_only_seconds']['median']:.3f} s",
            f"paper: {PAPER_STS['seconds']} s for {PAPER_STS['pairs']:,} pairs")
    else:
        add("STS pairs scored", f"<= {T_STS_S:g} s", "not measured", None, "section not run")

    mem = r.get("memory")
    if mem:
        for name, m in mem["rows"].items():
            if "added_ratio" not in m:
                continue
            add(f"peak training memory, {name}: added by training / (token ids + matrix)", f"<= {T_MEMORY_RATIO:g}x",
                f"{m['added_ratio']}x ({m['added_mib']:.0f} MiB / {m['ids_plus_matrix_mib']:.0f} MiB)",
                m["added_ratio"] <= T_MEMORY_RATIO,
                f"the training loop adds {m['added_training_loop_mib']} MiB; the post-processing after it (averages "
                f"of 100,000 sentences, covariance, eigenvectors) brings the peak to {m['added_mib']} MiB",
                f"idle process {m['idle_mib'].get('VmRSS')} MiB")
            add(f"peak training memory, {name}: whole process / (token ids + matrix)", f"<= {T_MEMORY_RATIO:g}x",
                f"{m['peak_ratio']}x ({m['peak_mib']:.0f} MiB / {m['ids_plus_matrix_mib']:.0f} MiB)",
                m["peak_ratio"] <= T_MEMORY_RATIO,
                f"the idle process (interpreter, NumPy, Numba, compiled kernels) is {m['idle_mib'].get('VmRSS')} MiB "
                f"of it; training adds {m['added_mib']} MiB")
    else:
        add("peak training memory", f"<= {T_MEMORY_RATIO:g}x", "not measured", None, "section not run")
    return out


# -------------------------------------------------------------------------- report


def _s(st: dict, fmt=human) -> tuple:
    return fmt(st["median"]), fmt(st["min"]), fmt(st["max"]), f"{st['spread']:.0%}" if st["spread"] is not None else ""


def mib(nbytes) -> str:
    return "n/a" if nbytes is None else f"{nbytes / 2**20:.0f} MiB"


_sec = "{:.3f}".format


def render(r: dict) -> str:
    s = r["settings"]
    parts = [
        "# Speed benchmark",
        f"`{' '.join(r['context']['command'])}`: corpus **{s['corpus']}**, dim {s['dim']}, threads {s['threads']}, "
        f"{s['repeats']} repeat(s) (median, min, max and spread over them), end to end and memory on "
        f"{s['e2e_threads']} threads. Harness wall time {r['harness_seconds']:.0f} s. Load average (1/5/15 min) at the "
        f"start {r['context']['machine']['load_average_1_5_15']}, at the end {r['load_average_at_end']}: a machine "
        "shared with other work gives noisy absolute figures, so the targets are judged on ratios from this one run.",
    ]
    if s["quick"]:
        parts.append("**Quick run** (`--quick`): a small corpus and one repeat, to check the plumbing; its figures "
                     "are not the project's.")
    rows = []
    for t in r["targets"]:
        met = "not measured" if t["met"] is None else ("**yes**" if t["met"] else "**no**")
        note = t["bound"] if t["met"] is False or t["met"] is None else ""
        if t["context"]:
            note = (note + "; " if note else "") + t["context"]
        rows.append((t["target"], t["goal"], t["measured"], met, note))
    parts.append("## Targets\n\n" + md_table(("target", "goal", "measured", "met", "what bounds it / context"), rows))

    k = r.get("kernel")
    if k:
        c = k["compile"]
        parts.append(
            f"## Training kernel\n\nOne epoch of {k['targets_per_epoch']:,} targets "
            f"({k['mean_tokens_per_target']:.2f} kept tokens per target) of the sentence part, trained by "
            "`scbow.training.train`; the time inside the CPU backend's batches (`TrainResult.seconds`).\n\n"
            + md_table(("kernel", "threads", "examples/s median", "min", "max", "spread", "corpus tokens/s", "scaling",
                        "efficiency"),
                       [(row["kernel"], row["threads"], *_s(row["examples_per_s"]), human(row["corpus_tokens_per_s"]),
                         row.get("scaling", ""), row.get("efficiency", "")) for row in k["rows"].values()])
            + "\n\nCompile (the first training call, on a tiny corpus, apart from the figures above): "
            f"1 thread {c['serial_first_call_seconds']} s "
            f"({'kernels loaded from the on-disk cache' if c['serial_cache']['hit'] else 'kernels compiled'}), "
            + (f"{c['parallel_threads']} threads {c['parallel_first_call_seconds']} s (Python threads running the "
               "same cached chunk kernel: nothing left to compile)." if c["parallel_first_call_seconds"] is not None
               else "no run on several threads."))
        t = k["torch"]
        if t["rows"]:
            w = t["worker"]
            parts.append(
                "## PyTorch implementation of the same objective\n\n"
                f"`benchmarks/torch_scbow.py`, torch {w['torch']}: EmbeddingBag means, cosine softmax, autograd, "
                f"plain SGD on the batch-mean loss (weight decay included), batch {w['batch_size']}, "
                f"{'sparse' if w['sparse'] else 'dense'} gradients, `torch.set_num_threads(threads)`; "
                f"{t['batches_timed']} batches timed after {t['warmup_batches']} warm-up batches, batches built "
                "before the clock starts. Same examples as the kernel (target, neighbours, negatives from the "
                "document). The peer computes the paper's plain objective: the per-word step factors of the "
                "frequency weights are one multiply per row in the kernel and are left out of it."
                + (f" Checked before timing: its loss and gradient on {w['oracle_check']['examples']} examples "
                   f"match `scbow.reference` (largest relative error {w['oracle_check']['max_loss_rel_err']:.1e} in "
                   f"the loss, {w['oracle_check']['max_grad_rel_err']:.1e} in the gradient)."
                   if w.get("oracle_check") else "") + "\n\n"
                + md_table(("threads", "examples/s median", "min", "max", "spread", "kernel / torch"),
                           [(row["threads"], *_s(row["examples_per_s"]), f"{row.get('scbow_over_torch', 'n/a')}x")
                            for row in t["rows"].values()]))
        elif t["note"]:
            parts.append(f"## PyTorch implementation\n\nNot measured: {t['note']}")
        bw = r.get("bandwidth")
        if bw:
            sh = r["example_shape"]
            parts.append(
                "## Bandwidth context\n\n"
                f"{sh['sentences_per_example']} sentences and {sh['tokens_per_example']} tokens per example "
                f"(from {sh['sampled_targets']:,} examples): {bw['bytes_per_example'] / 1e3:.1f} KB of rows per "
                f"example. Matrix {bw['matrix_bytes'] / 1e6:.1f} MB; L3 "
                f"{mib(bw['l3_bytes'])}.\n\n"
                + md_table(("", "GB/s"), [
                    *[(f"kernel rows touched, {row['kernel']} {row['threads']} thread(s)", row["row_gb_per_s"])
                      for row in bw["rows"].values()],
                    (f"np.copyto, {bw['copy_48mb']['bytes'] / 1e6:.0f} MB, 1 thread (read + write)",
                     round(bw["copy_48mb"]["gb_per_s"]["median"], 2)),
                    (f"np.copyto, the matrix ({bw['copy_matrix']['bytes'] / 1e6:.1f} MB), 1 thread",
                     round(bw["copy_matrix"]["gb_per_s"]["median"], 2)),
                ]))

    w = r.get("wordpart")
    if w:
        rows = [(row["threads"], *_s(row["seconds"], _sec), human(row["sentences_per_second"]),
                 _sec(row["gensim_seconds"]["median"]) if "gensim_seconds" in row else "n/a",
                 f"{row['gensim_over_scbow']}x" if "gensim_over_scbow" in row else "n/a") for row in w["rows"]]
        gver = next((x.get("gensim") for x in w["runs"] if x["system"] == "gensim"), None)
        parts.append(
            f"## The word part\n\nOne pass of the word part (skip-gram with negative "
            f"sampling, {w['dim']} dims, window {w['window']}, {w['negatives']} noise words, subsampling threshold "
            f"{w['sample']:g}) over the {w['sentences']:,} sentences, trained by `scbow.training.train` (the "
            "pass's kernel seconds, the word phase's `seconds`), alternating with one "
            + (f"epoch of gensim {gver}'s skip-gram with the same settings on the same tokens (its `train` call "
               "alone, the vocabulary built before the clock starts)" if gver else "epoch of gensim (not installed)")
            + ".\n\n"
            + md_table(("threads", "seconds median", "min", "max", "spread", "sentences/s",
                        "gensim seconds", "gensim / scbow"), rows)
            + "\n\nA default run makes `word_passes` such passes after the sentence part's epoch (End to end "
            "below shows both parts of a default run).")

    e = r.get("e2e")
    if e:
        rows = []
        for row in e["rows"].values():
            ph = ", ".join(f"{k} {v}" for k, v in row["phases"].items())
            rows.append((row["system"], row["dim"], *_s(row["seconds"], _sec), row.get("over_gensim", "n/a"),
                         _sec(row["process_wall_seconds"]["median"]), ph, f"{row['peak_rss_mib']:.0f}"))
        g = e["rows"].get(f"gensim-{PAPER_DIM}")
        gen = ""
        if g:
            gr = [x for x in e["runs"] if x["system"] == "gensim"]
            gen = (f"\n\ngensim {gr[0]['gensim']} (compiled routines: FAST_VERSION {gr[0]['fast_version']}): "
                   f"{gr[0]['sentences']:,} non-empty lines, {gr[0]['raw_words']:,} raw words after "
                   f"`simple_preprocess`, training at a median "
                   f"{human(statistics.median(x['train_raw_words_per_s'] for x in gr))} raw words/s "
                   f"(before filing: {GENSIM_FILED['seconds']} s, {human(GENSIM_FILED['raw_words_per_s'])} words/s "
                   "on 10M).")
        parts.append(
            f"## End to end\n\nRaw text (`{Path(e['text']).name}`, decompressed once) to a saved model, one epoch, "
            f"{e['threads']} threads, every run a fresh process (scbow with an empty corpus cache). "
            f"{e['order']}.\n\n"
            + md_table(("system", "dim", "seconds median", "min", "max", "spread", "/ gensim", "process wall",
                        "phases (medians, s)", "peak RSS MiB"), rows) + gen
            + "\n\nscbow is the defaults (one epoch of the sentence part, then the word part's passes of "
            "skip-gram); scbow-sentence the sentence part alone (`--word-passes 0`), one pass over the corpus as "
            "gensim's one epoch of CBOW is. scbow's phases: compile = its first training call on a tiny corpus (loads "
            "the kernels from numba's on-disk cache, compiling them when the cache is empty); kernel = the sentence "
            "part; word_part = its skip-gram passes; post_process = the common-component removal and assembling "
            "the rows. gensim's tokenize = "
            "`simple_preprocess` of every line. Process wall = the whole process, interpreter and imports "
            "included.")
    elif e is None and "e2e" in s["sections"]:
        parts.append("## End to end\n\nNot measured.")

    p = r.get("preprocess")
    if p:
        parts.append(
            f"## Preprocessing\n\n{p['raw_tokens']:,} raw tokens, {p['kept_tokens']:,} kept.\n\n"
            + md_table(("step", "median", "min", "max", "spread"), [
                ("read and tokenize (the encode's first phase), tokens/s", *_s(p["tokenize_tokens_per_s"])),
                ("tokenize, count and encode (`load_corpus(use_cache=False)`, plain text), tokens/s",
                 *_s(p["encode_tokens_per_s"])),
                ("the same, seconds", *_s(p["encode_seconds"], _sec)),
                ("reload of the cached corpus (memory-mapped), seconds", *_s(p["cache_reload_seconds"], _sec)),
                ("reload and read every page, seconds", *_s(p["cache_reload_and_read_all_seconds"], _sec)),
            ])
            + f"\n\nCounting and encoding are {p['count_and_encode_share']:.0%} of the encode time. From the "
            f"`.xz` file (decompression included, once): {p['encode_xz_seconds']} s, "
            f"{human(p['encode_xz_tokens_per_s'])} tokens/s. Cache build: {p['cache_build_seconds']} s, "
            f"{p['cache_bytes'] / 2**20:.1f} MiB. Encoder warm-up (not counted): {p['encoder_warmup_seconds']} s."
            + (f" Decompressing the corpus to the scratch folder: {r['text']['seconds']} s, "
               f"{r['text']['mb_per_s']} MB/s." if not r["text"]["reused"] else ""))

    inf = r.get("inference")
    if inf:
        parts.append(
            f"## Inference\n\n{inf['pairs']:,} pairs in {inf['sets']} STS sets, read once; model: "
            f"{inf['model_source']} ({inf['vocab_size']:,} words, {inf['dim']} dims"
            + (f", load {inf['load_seconds']} s" if inf["load_seconds"] is not None else "") + ").\n\n"
            + md_table(("", "median s", "min", "max", "spread"), [
                ("tokenize, embed, cosine (`pair_cosines` over every set)", *_s(inf["cosines_seconds"], _sec)),
                ("the same plus Pearson and Spearman (`score_set`)", *_s(inf["with_correlations_seconds"], _sec)),
                ("tokenize only (context)", *_s(inf["tokenize_only_seconds"], _sec)),
            ])
            + f"\n\nFirst call (cold): {inf['first_call_seconds']} s. {human(inf['pairs_per_s'])} pairs/s; the "
            f"paper: {inf['paper']['pairs']:,} pairs in {inf['paper']['seconds']} s "
            f"({human(inf['paper']['pairs_per_s'])} pairs/s).")

    m = r.get("memory")
    if m:
        rows = []
        for row in m["rows"].values():
            rows.append((row["corpus"], f"{row['tokens']:,}", f"{row['vocab_size']:,}",
                         f"{row['token_bytes'] / 2**20:.1f}", f"{row['matrix_bytes'] / 2**20:.1f}",
                         row["idle_mib"].get("VmRSS"), row.get("peak_training_loop_mib"), row.get("peak_mib"),
                         row.get("added_training_loop_ratio"), row.get("added_ratio"), row.get("peak_ratio"),
                         row["seconds"]))
        parts.append(
            f"## Memory\n\nOne epoch, {m['threads']} threads, dim {m['dim']}, a fresh process per corpus: kernels "
            "compiled on a tiny corpus, peak reset, then the cached corpus loaded (memory-mapped) and trained "
            "(`scbow.training.train`, post-processing included). MiB.\n\n"
            + md_table(("corpus", "tokens", "vocab", "token ids", "matrix", "idle RSS", "peak, end of epoch",
                        "peak, end", "added/(ids+matrix), epoch", "added/(ids+matrix), end", "peak/(ids+matrix)",
                        "seconds"), rows))

    ab_file = RESULTS_DIR / "ab_speed.json"
    if ab_file.is_file():
        from .ab import medians_table

        ab = json.loads(ab_file.read_text(encoding="utf-8"))
        sides = ab["settings"]
        parts.append(
            "## Against an earlier checkout (A/B)\n\n"
            f"From `benchmarks/results/ab_speed.md` (`python -m benchmarks.run ab`; its own run, "
            f"{ab['context'].get('date_utc', 'date n/a')}): kernel examples/s of commit "
            f"{(sides['after']['commit'] or 'n/a')[:12]} (after) against {(sides['before']['commit'] or 'n/a')[:12]} "
            f"(before) on corpus {sides['corpus_label']}, {sides['rounds']} alternating rounds of fresh processes.\n\n"
            + medians_table(ab))
    if k:
        parts.append("## What was tried on the kernel\n\nThe experiments on the kernel, each with its measured "
                     "effect, are listed in `benchmarks/NOTES.md`; this run measures the kernel as it is.")

    skipped = [x for x in SECTIONS if x not in s["sections"]]
    notes = list(r.get("notes", []))
    if skipped:
        notes.append("sections not run: " + ", ".join(skipped))
    if notes:
        parts.append("## Notes\n\n" + "\n".join(f"- {n}" for n in notes))
    parts.append(definitions_markdown(DEFINITIONS))
    extra = r["context"]
    parts.append(context_markdown(extra) + f"\n\nNumba threads available: {s['numba_num_threads']}; "
                 f"L3: {mib(r.get('l3_bytes'))}.")
    return "\n\n".join(parts)


# -------------------------------------------------------------------------- main


def parse_args(argv=None, prog="python -m benchmarks.run speed") -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="plumbing check: 1M corpus, 1 repeat, few torch batches, no 300-dim end to end, no 100M memory run")
    ap.add_argument("--corpus", choices=sorted(CORPORA, key=len), default=None, help="corpus (default 10M, quick 1M)")
    ap.add_argument("--threads", type=parse_threads, default=None, help="comma-separated kernel thread counts (default 1..N)")
    ap.add_argument("--repeats", type=int, default=None, help="repeats of every timed run (default 3, quick 1)")
    ap.add_argument("--dim", type=int, default=TrainConfig().dim,
                    help="embedding dimension of scbow and torch (default %(default)s)")
    ap.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections (default all): " + ", ".join(SECTIONS))
    ap.add_argument("--skip-100m", action="store_true", help="no memory run on the 100M corpus (it takes minutes)")
    ap.add_argument("--no-paper-dim", action="store_true", help="no extra scbow end-to-end run at 300 dims")
    ap.add_argument("--no-torch", action="store_true", help="no PyTorch peer in the kernel section")
    ap.add_argument("--torch-batches", type=int, default=None, help="torch batches timed (default 300, quick 50)")
    ap.add_argument("--e2e-threads", type=int, default=E2E_THREADS,
                    help="threads of the end-to-end and memory runs (default %(default)s, what the targets are set for)")
    ap.add_argument("--keep-work", action="store_true", help="keep this run's caches and models in the scratch folder")
    ap.add_argument("--out", type=Path, default=None,
                    help="output prefix (default benchmarks/results/speed, quick benchmarks/.work/speed/quick)")
    args = ap.parse_args(argv)
    args.corpus = args.corpus or ("1M" if args.quick else "10M")
    args.repeats = args.repeats or (1 if args.quick else 3)
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    args.torch_batches = args.torch_batches or (50 if args.quick else 300)
    args.out = args.out or (WORK_DIR / "quick" if args.quick else RESULTS_DIR / "speed")
    if args.quick:
        args.skip_100m = True
        args.no_paper_dim = True
    sections = [x.strip() for x in args.only.split(",") if x.strip()]
    bad = [x for x in sections if x not in SECTIONS]
    if bad or not sections:
        ap.error(f"--only: unknown section(s) {', '.join(bad)}; choose from {', '.join(SECTIONS)}")
    args.sections = [x for x in SECTIONS if x in sections]
    args.threads = args.threads and sorted(args.threads)
    return args


def main(argv=None, prog="python -m benchmarks.run speed") -> dict:
    args = parse_args(argv, prog)
    t_start = time.perf_counter()
    import numba

    available = numba.config.NUMBA_NUM_THREADS
    threads = args.threads or list(range(1, available + 1))
    if max(threads) > available:
        sys.exit(f"--threads asks for {max(threads)} threads but numba can use {available}; set NUMBA_NUM_THREADS")
    if args.e2e_threads > available:
        sys.exit(f"--e2e-threads {args.e2e_threads} is more than the {available} threads numba can use here")
    ctx = context("scipy", "gensim", "torch", threads=threads)
    ctx["command"] = [Path(sys.executable).name, *prog.split()[1:], *(argv if argv is not None else sys.argv[1:])]
    config = TrainConfig(dim=args.dim, epochs=1)
    xz = corpus_path(args.corpus)
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=WORK_DIR))
    cache_dir = run_dir / "cache"
    report: dict = {
        "benchmark": "speed",
        "settings": {"corpus": args.corpus, "corpus_file": str(xz), "dim": args.dim, "threads": threads,
                     "repeats": args.repeats, "quick": args.quick, "sections": args.sections,
                     "skip_100m": args.skip_100m, "torch_batches": args.torch_batches,
                     "numba_num_threads": available, "e2e_threads": args.e2e_threads, "config": config.to_dict()},
        "definitions": DEFINITIONS,
        "l3_bytes": l3_bytes(),
        "notes": [],
    }
    def section(name: str) -> bool:
        if name in args.sections:
            say(f"[{name}]")
        return name in args.sections

    try:
        say(f"[speed] scratch {run_dir}; corpus {args.corpus}; sections {', '.join(args.sections)}")
        text, report["text"] = plain_text(args.corpus, WORK_DIR / "text")
        from scbow.training import load_corpus

        if section("preprocess"):
            report["preprocess"] = bench_preprocess(text, xz, config, args.repeats, cache_dir)
        corpus = load_corpus([text], config.min_count, config.max_vocab, cache_dir=cache_dir)
        report["corpus"] = {k: v for k, v in corpus.stats.items() if k != "files"}
        report["example_shape"] = example_shape(corpus, config)
        if section("kernel"):
            report["kernel"] = bench_kernel(corpus, text, cache_dir, config, threads, args.repeats,
                                            args.torch_batches, 5 if args.quick else 20, run_dir, not args.no_torch)
            report["bandwidth"] = bench_bandwidth(report["kernel"], report["example_shape"], args.dim,
                                                  len(corpus.vocab), 10)
        if section("wordpart"):
            report["wordpart"] = bench_wordpart(corpus, config, threads, args.repeats, run_dir)
        if section("e2e"):
            report["e2e"] = bench_e2e(text, args.dim, args.repeats, run_dir, not args.no_paper_dim, args.e2e_threads)
        if section("inference"):
            model = report.get("e2e", {}).get("model")
            report["inference"] = bench_inference(model, corpus, config, max(args.repeats, 5))
        if section("memory"):
            corpora = [(args.corpus, text)]
            if not args.skip_100m and args.corpus != "100M":
                corpora.append(("100M", corpus_path("100M")))
            elif args.skip_100m:
                report["notes"].append("memory on the 100M corpus skipped (--skip-100m or --quick)")
            report["memory"] = bench_memory(corpora, cache_dir, args.dim, run_dir, args.e2e_threads)
    finally:
        if args.keep_work:
            say(f"[speed] kept {run_dir}")
        else:
            shutil.rmtree(run_dir, ignore_errors=True)
    report["harness_seconds"] = round(time.perf_counter() - t_start, 1)
    report["peak_rss_mib_harness"] = peak_rss_mib()
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report["context"] = ctx
    load = ctx["machine"]["load_average_1_5_15"]
    cores = ctx["machine"]["usable_cores"] or available
    if load and max(load[0], report["load_average_at_end"][0]) > 0.5 * cores:
        report["notes"].append(
            f"the machine was busy (1-minute load {load[0]} at the start, {report['load_average_at_end'][0]} at the "
            f"end, {cores} cores): other work competed for the cores, so every figure is low and noisy; runs on "
            "several threads suffer most (spin-waiting OpenMP threads of numba, torch and OpenBLAS lose their "
            "time slices). Rerun on a quiet machine for figures to quote")
    report["targets"] = check_targets(report, args.corpus)
    write_report(args.out, report, render(report), echo=True)
    return report


if __name__ == "__main__":
    main(prog="python -m benchmarks.speed")
