"""The measurements of ``benchmarks/gpu_check.sh``: what a session with a GPU checks, into one JSON.

    python -m benchmarks.run gpu_check --out OUT/gpu_check.json [--threads 16] [--steps tiny,1M,10M]

Each step is written to the JSON as soon as it is measured (a step that fails records its error and
the next runs):

``tiny``
    The 30-sentence test corpus (``tests/conftest.synthetic_text``), sentence part only, 2 epochs at
    lr 0.3 and 0.03 on both devices: the mean loss of every target against fixed negatives before and
    after (``tests/test_cuda.mean_reference_loss``). On the H200 before ``launch_size`` the GPU's
    rose at lr 0.3 (1.360 -> 1.391). Then ``--lr 1e30`` on both: each must raise the same line.
``1M``
    gutenberg-1M with the defaults (both parts) on the CPU threads and on the GPU: STS-B dev of
    each, ``dev_within_001`` true when they differ by at most 0.01.
``10M``
    gutenberg-10M with the defaults on the CPU threads and on the GPU (``benchmarks.gpu.measure``:
    a warm-up first, then the whole run on the clock): whole-run seconds, the sentence part's and the
    word part's seconds, STS-B dev.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

from scbow.config import TrainConfig

from . import gpu as G
from .common import corpus_path, data_dir, say

TINY = dict(dim=8, epochs=2, weight_decay=0.0, common_components=-1, seed=4, frequency_weight=0.0, count_power=0.0,
            word_passes=0)


def tiny_steps(tmp: Path) -> dict:
    """The 30-sentence corpus's loss on both devices, and --lr 1e30 on both."""
    import numpy as np

    tests = Path(__file__).resolve().parents[1] / "tests"
    sys.path.insert(0, str(tests))
    from conftest import synthetic_text
    from test_cuda import mean_reference_loss

    from scbow.errors import TrainingError
    from scbow.training import load_corpus, train, untrained_start

    path = tmp / "tiny.txt"
    path.write_text(synthetic_text(n_docs=3, sents_per_doc=10, seed=3), encoding="utf-8")
    corpus = load_corpus([path], min_count=1, cache_dir=tmp / "cache")
    negatives = np.random.default_rng(0).integers(0, corpus.n_sentences, size=(corpus.n_sentences, 2))
    out = {"sentences": corpus.n_sentences, "loss": []}
    for lr in (0.3, 0.03):
        config = TrainConfig(**TINY, lr=lr)
        before = mean_reference_loss(untrained_start(corpus, config), corpus, negatives)
        for device in ("cpu", "cuda"):
            after = mean_reference_loss(train(corpus, config.replace(device=device), quiet=True).model.vectors, corpus,
                                        negatives)
            out["loss"].append({"lr": lr, "device": device, "before": round(before, 4), "after": round(after, 4),
                                "fell": round(before - after, 4)})
    errors = {}
    for device in ("cpu", "cuda"):
        try:
            train(corpus, TrainConfig(dim=8, epochs=1, lr=1e30, weight_decay=0.0, common_components=-1,
                                      word_passes=0, device=device), quiet=True)
            errors[device] = None
        except TrainingError as exc:
            errors[device] = str(exc)
    out["lr_1e30"] = errors
    out["lr_1e30_same_line"] = errors["cpu"] is not None and errors["cpu"] == errors["cuda"]
    return out


def defaults_on_both(name: str, threads: int, tmp: Path, dev, warm: bool) -> dict:
    """The defaults on ``name`` on the CPU threads, then the GPU: seconds and STS-B dev."""
    from scbow.training import load_corpus, train
    from scbow.use.evaluate import score_set

    base = TrainConfig(threads=threads)
    t = time.perf_counter()
    corpus = load_corpus([corpus_path(name)], base.min_count, base.max_vocab, cache_dir=tmp / "cache")
    out = {"corpus": name, "sentences": corpus.n_sentences, "tokens": int(corpus.stats["tokens"]),
           "encode_seconds": round(time.perf_counter() - t, 2), "rows": []}
    for device in ("cpu", "cuda"):
        say(f"{name} defaults on {device}")
        if warm:
            row = G.measure(device, corpus, base, tmp, dev)
        else:
            t = time.perf_counter()
            result = train(corpus, base.replace(device=device), quiet=True)
            info = result.model.info["training"]
            row = {"device": device, "whole_run_seconds": round(time.perf_counter() - t, 2),
                   "word_part_device": info["word_part"].get("device", "cpu"),
                   "stsb_dev_pearson": round(float(score_set(result.model.encode, dev).pearson), 4) if dev else None}
        out["rows"].append(row)
    scores = [r.get("stsb_dev_pearson") for r in out["rows"]]
    if None not in scores:
        out["dev_gap"] = round(scores[1] - scores[0], 4)
        out["dev_within_001"] = abs(scores[1] - scores[0]) <= 0.01
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run gpu_check", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the JSON to write")
    parser.add_argument("--threads", type=int, default=16, help="CPU threads of the CPU runs")
    parser.add_argument("--steps", default="tiny,1M,10M", help="comma-separated steps to run, in order")
    parser.add_argument("--allow-simulator", action="store_true", help="check the plumbing in the simulator")
    args = parser.parse_args(argv)
    from scbow.use.evaluate import read_sts

    report = {"gpu": G.require_gpu(args.allow_simulator), "threads": args.threads, "steps": {}}
    dev_path = data_dir() / "sts-dev" / "stsb.dev.tsv"
    dev = read_sts(dev_path) if dev_path.is_file() else None

    def dump():
        args.out.write_text(json.dumps(report, indent=1))

    with tempfile.TemporaryDirectory() as tmp:
        for step in args.steps.split(","):
            say(f"step {step}")
            t = time.perf_counter()
            try:
                if step == "tiny":
                    result = tiny_steps(Path(tmp))
                else:
                    result = defaults_on_both(step, args.threads, Path(tmp), dev, warm=step == "10M")
            except Exception:
                result = {"error": traceback.format_exc()[-3000:]}
            result["seconds"] = round(time.perf_counter() - t, 1)
            report["steps"][step] = result
            print(json.dumps({step: result}), flush=True)
            dump()


if __name__ == "__main__":
    main()
