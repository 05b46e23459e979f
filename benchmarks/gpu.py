"""GPU throughput: ``--device cuda`` against the CPU path on all cores, kernel only and end to end.

    python -m benchmarks.run gpu                      # gutenberg-10M repeated 10 times, 1 epoch, dim 100
    python -m benchmarks.run gpu --repeat 2 --epochs 1 --out /tmp/gpu-check

Needs an NVIDIA GPU and numba-cuda (``pip install '.[cuda]'``); exits with the reason when
either is missing. The corpus is encoded once and tiled ``--repeat`` times in memory (about
100M tokens by default). Each device (CPU first) is warmed up on 2,000 sentences (its
kernels compiled), then trains ``--epochs`` epochs and saves the model: kernel examples/s
count the seconds inside the backend's batch calls, end to end the wall time of ``train()``
and the save. The STS-B dev Pearson of each model is a sanity check that both learned the
same thing. ``--allow-simulator`` runs in Numba's CUDA simulator: plumbing only.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from scbow.config import TrainConfig

from .common import (
    CORPORA,
    RESULTS_DIR,
    context,
    context_markdown,
    corpus_path,
    data_dir,
    definitions_markdown,
    human,
    md_table,
    peak_rss_mib,
    say,
    timed,
    write_report,
)
from .targets import TARGETS

WARMUP_SENTENCES = 2000
DEFINITIONS = {
    "kernel_examples_per_s": "examples / seconds inside the backend's batch calls (TrainResult.seconds)",
    "end_to_end_examples_per_s": "examples / wall seconds of train() on the encoded corpus plus save_model",
    "cpu": "the Numba CPU path, train_batch_parallel on every core numba may use (--threads 0)",
    "cuda": "the numba.cuda path (--device cuda), kernels already compiled by the warm-up",
}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run gpu", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--corpus", choices=sorted(CORPORA, key=len), default="10M", help="corpus to tile")
    parser.add_argument("--repeat", type=int, default=10, help="copies of the corpus, one after the other")
    parser.add_argument("--epochs", type=int, default=1, help="epochs of each timed run")
    parser.add_argument("--dim", type=int, default=TrainConfig().dim, help="embedding dimension")
    parser.add_argument("--devices", default="cpu,cuda", help="comma-separated devices to measure")
    parser.add_argument("--sentences", type=int, default=0, help="use only the first N sentences (0: all)")
    parser.add_argument("--allow-simulator", action="store_true",
                        help="run in the CUDA simulator (plumbing check only; implies --sentences 60)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "gpu", help="output prefix: <out>.json and <out>.md")
    args = parser.parse_args(argv)
    args.devices = [d.strip() for d in args.devices.split(",") if d.strip()]
    if not args.devices or set(args.devices) - {"cpu", "cuda"}:
        parser.error("--devices takes cpu and/or cuda")
    if args.repeat < 1 or args.epochs < 1:
        parser.error("--repeat and --epochs must be >= 1")
    if args.allow_simulator:
        args.sentences = args.sentences or 60
    return args


def require_gpu(allow_simulator: bool) -> dict:
    """Exit with the reason unless a real GPU can train; returns what it is."""
    from scbow.training import cuda_problem

    problem = cuda_problem()
    if problem:
        sys.exit(f"benchmarks.gpu needs an NVIDIA GPU: {problem}")
    from numba import cuda
    from numba.core import config

    if config.ENABLE_CUDASIM:
        if not allow_simulator:
            sys.exit("benchmarks.gpu: NUMBA_ENABLE_CUDASIM=1, the CUDA simulator, measures nothing; unset it "
                     "(or pass --allow-simulator to check the script's plumbing)")
        return {"name": "CUDA simulator (numbers mean nothing)", "simulator": True}
    device = cuda.get_current_device()  # pragma: no cover - needs a GPU
    free, total = cuda.current_context().get_memory_info()
    return {"name": device.name.decode() if isinstance(device.name, bytes) else str(device.name),
            "compute_capability": list(device.compute_capability),
            "multiprocessors": device.MULTIPROCESSOR_COUNT,
            "memory_gib": round(total / 2**30, 1), "free_gib_at_start": round(free / 2**30, 1),
            "simulator": False}


def tile_corpus(corpus, times: int, sentences: int = 0):
    """The corpus's first ``sentences`` sentences (0: all), repeated ``times`` times as new documents."""
    from scbow.training import Corpus

    offsets = np.asarray(corpus.offsets, dtype=np.int64)
    sent_doc = np.asarray(corpus.sent_doc, dtype=np.int32)
    doc_offsets = np.asarray(corpus.doc_offsets, dtype=np.int64)
    n = len(offsets) - 1 if not sentences else min(sentences, len(offsets) - 1)
    n_docs = int(sent_doc[n - 1]) + 1
    tokens = np.asarray(corpus.tokens[: offsets[n]], dtype=np.int32)
    offsets, sent_doc = offsets[: n + 1], sent_doc[:n]
    doc_offsets = np.minimum(doc_offsets[: n_docs + 1], n)
    n_tok = len(tokens)
    stats = dict(corpus.stats)
    stats.update(tokens=n_tok * times, sentences=n * times, documents=n_docs * times, repeated=times)
    return Corpus(
        vocab=corpus.vocab,
        tokens=np.tile(tokens, times),
        offsets=np.concatenate([offsets[:-1] + k * n_tok for k in range(times)] + [[n_tok * times]]),
        sent_doc=np.concatenate([sent_doc + k * n_docs for k in range(times)]).astype(np.int32),
        doc_offsets=np.concatenate([doc_offsets[:-1] + k * n for k in range(times)] + [[n * times]]),
        stats=stats,
    )


def measure(device: str, corpus, config: TrainConfig, tmp: Path, dev_set) -> dict:
    from scbow.training import train
    from scbow.use.evaluate import score_set
    from scbow.vectors.modeldir import save_model

    cfg = config.replace(device=device)
    say(f"  {device}: warm-up")
    with timed() as warm:
        train(tile_corpus(corpus, 1, WARMUP_SENTENCES), cfg.replace(epochs=1), quiet=True)
    say(f"  {device}: {config.epochs} epoch(s)")
    with timed() as total:
        result = train(corpus, cfg, quiet=True)
        with timed() as save:
            save_model(result.model, tmp / f"model-{device}")
    info = result.model.info["training"]
    row = {
        "device": device,
        "threads": info["threads"] if device == "cpu" else None,
        "warmup_seconds": round(warm.seconds, 3),
        "examples": result.examples,
        "kernel_seconds": round(result.seconds, 3),
        "kernel_examples_per_s": round(result.examples / result.seconds, 1),
        "end_to_end_seconds": round(total.seconds, 3),
        "save_seconds": round(save.seconds, 3),
        "end_to_end_examples_per_s": round(result.examples / total.seconds, 1),
        "first_loss": info["first_loss"],
        "final_loss": info["final_loss"],
        "peak_rss_mib_after": peak_rss_mib(),
    }
    if info.get("word_part"):  # the word part's seconds and device (its own kernel_seconds)
        row["word_part_seconds"] = info["word_part"]["kernel_seconds"]
        row["word_part_device"] = info["word_part"].get("device", "cpu")
    if dev_set is not None:
        row["stsb_dev_pearson"] = round(float(score_set(result.model.encode, dev_set).pearson), 4)
    return row


def render(report: dict) -> str:
    s, c, g = report["settings"], report["corpus"], report["gpu"]
    rows = report["devices"]
    parts = [
        "# GPU benchmark: --device cuda against the CPU path",
        f"Corpus **{s['corpus']}** tiled {s['repeat']} times: {c['tokens']:,} tokens, {c['sentences']:,} sentences, "
        f"{c['documents']:,} documents, vocabulary {c['vocab_size']:,}. dim {s['dim']}, {s['epochs']} epoch(s), "
        f"other settings the TrainConfig defaults. GPU: {g['name']}"
        + (f", {g['memory_gib']} GiB, {g['multiprocessors']} SMs" if not g["simulator"] else "") + ".",
        md_table(("device", "kernel examples/s", "end to end examples/s", "kernel s", "end to end s", "warm-up s",
                  "loss first -> last", "STS-B dev Pearson"),
                 [(r["device"] + (f" ({r['threads']} threads)" if r["threads"] else ""),
                   human(r["kernel_examples_per_s"]), human(r["end_to_end_examples_per_s"]), r["kernel_seconds"],
                   r["end_to_end_seconds"], r["warmup_seconds"], f"{r['first_loss']:.4f} -> {r['final_loss']:.4f}",
                   r.get("stsb_dev_pearson", "n/a")) for r in rows]),
    ]
    by = {r["device"]: r for r in rows}
    if "cpu" in by and "cuda" in by:
        ratio = by["cuda"]["kernel_examples_per_s"] / by["cpu"]["kernel_examples_per_s"]
        goal = TARGETS["gpu_over_cpu"]
        parts.append(f"GPU / CPU: **{ratio:.1f}x** "
                     f"kernel only, **{by['cuda']['end_to_end_examples_per_s'] / by['cpu']['end_to_end_examples_per_s']:.1f}x** "
                     f"end to end. Goal ({goal.measured_against}): {goal.goal_text()}, "
                     f"**{'met' if goal.met(ratio) else 'not met'}** kernel only.")
    parts += [
        f"Encoding the corpus once (cache): {report['load_seconds']} s; not part of either device's time.",
        definitions_markdown(DEFINITIONS),
        context_markdown(report["context"]),
    ]
    return "\n\n".join(parts)


def main(argv=None) -> None:
    args = parse_args(argv)
    gpu = require_gpu(args.allow_simulator)
    ctx = context("numba-cuda", "cuda-bindings")
    path = corpus_path(args.corpus)
    config = TrainConfig(dim=args.dim, epochs=args.epochs)
    from scbow.training import load_corpus
    from scbow.use.evaluate import read_sts

    dev_path = data_dir() / "sts-dev" / "stsb.dev.tsv"
    dev_set = read_sts(dev_path) if dev_path.is_file() else None
    with tempfile.TemporaryDirectory(prefix="scbow-gpu-bench-") as tmp:
        tmp = Path(tmp)
        say(f"encoding {path.name} (corpus cache)")
        with timed() as load:
            base = load_corpus([path], config.min_count, config.max_vocab)
        corpus = tile_corpus(base, args.repeat, args.sentences)
        rows = [measure(device, corpus, config, tmp, dev_set) for device in args.devices]
    report = {
        "benchmark": "gpu",
        "settings": {"corpus": args.corpus, "corpus_file": str(path), "repeat": args.repeat, "epochs": args.epochs,
                     "dim": args.dim, "sentences": args.sentences or None, "devices": args.devices,
                     "out": str(args.out), "config": config.to_dict()},
        "corpus": {"tokens": corpus.stats["tokens"], "sentences": corpus.n_sentences, "documents": corpus.n_documents,
                   "vocab_size": len(corpus.vocab)},
        "gpu": gpu,
        "load_seconds": round(load.seconds, 3),
        "devices": rows,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "definitions": DEFINITIONS,
        "context": ctx,
    }
    write_report(args.out, report, render(report), echo=True)


if __name__ == "__main__":
    main()
