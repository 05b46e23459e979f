"""The search behind the training defaults: every setting tried, its STS-B dev score and its test mean.

    python -m benchmarks.search                 # 10M grid, then the 100M confirmations
    python -m benchmarks.search --corpus 10M    # one corpus only

Defaults are chosen on the STS-B dev set only; the mean Pearson over the 19 SemEval test sets
is printed beside it so that a reader can see what the choice cost or gained there, never
to choose. Each row is one training run with ``--threads`` threads (lock-free, so a repeat
differs by about 0.002 on dev) scored as ``benchmarks.quality`` scores (a pair without an
embedding gets the run's mean cosine). ``start`` rows are the untrained starting vectors
with the run's post-processing and unknown-word rule: what training is judged against.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from types import SimpleNamespace

from scbow.config import TrainConfig
from scbow.corpus import load_corpus
from scbow.evaluate import read_sts
from scbow.trainer import train

from .common import context, context_markdown, corpus_path, md_table, write_report
from .quality import Scored, dev_path, log, sts_sets, untrained_start

# The settings of the last release (e5d09e1): unweighted averages, weight decay, unknown words left out.
PREVIOUS = {"frequency_weight": 0.0, "count_power": 0.0, "lr": 0.02, "weight_decay": 10.0, "unknown": "omit"}

# (group, label, overrides of TrainConfig(); "start" for the untrained start of the defaults)
GRID_10M = [
    ("before", "previous defaults (e5d09e1)", PREVIOUS),
    ("before", "previous defaults, unknown words hashed (scale 0.75)", {**PREVIOUS, "unknown": "hash",
                                                                        "unknown_scale": 0.75}),
    ("start", "untrained start: SIF-weighted random rows, unknown hashed", "start"),
    ("weights, plain SGD", "lr 0.002", {"count_power": 0.0, "lr": 0.002}),
    ("weights, plain SGD", "lr 0.02", {"count_power": 0.0, "lr": 0.02}),
    ("weights, plain SGD", "lr 0.1", {"count_power": 0.0, "lr": 0.1}),
    ("weights, plain SGD", "lr 0.5", {"count_power": 0.0, "lr": 0.5}),
    ("count damping", "power 0.5, lr 0.05", {"count_power": 0.5, "lr": 0.05}),
    ("count damping", "power 0.5, lr 0.1", {"count_power": 0.5, "lr": 0.1}),
    ("count damping", "power 0.75, lr 0.05", {"lr": 0.05}),
    ("count damping", "power 0.75, lr 0.1 (defaults)", {}),
    ("count damping", "power 0.75, lr 0.2", {"lr": 0.2}),
    ("count damping", "power 1, lr 0.1", {"count_power": 1.0}),
    ("count damping", "power 1, lr 0.3", {"count_power": 1.0, "lr": 0.3}),
    ("count damping", "floor 3", {"count_floor": 3}),
    ("count damping", "floor 30", {"count_floor": 30}),
    ("count damping", "floor 100", {"count_floor": 100}),
    ("objective", "5 negatives", {"negatives": 5}),
    ("objective", "uniform negatives", {"negative_mode": "uniform"}),
    ("objective", "3 epochs", {"epochs": 3}),
    ("objective", "weight decay 1", {"weight_decay": 1.0}),
    ("post-processing", "no component removed (centre only)", {"common_components": 0}),
    ("post-processing", "1 component", {"common_components": 1}),
    ("post-processing", "30 components", {"common_components": 30}),
    ("unknown words", "hash scale 0.75", {"unknown_scale": 0.75}),
    ("unknown words", "hash scale 1.25", {"unknown_scale": 1.25}),
    ("unknown words", "omit", {"unknown": "omit"}),
    ("seed", "defaults, seed 2", {"seed": 2}),
    ("seed", "lr 0.05, seed 2", {"lr": 0.05, "seed": 2}),
]
GRID_100M = [
    ("before", "previous defaults (e5d09e1)", PREVIOUS),
    ("start", "untrained start: SIF-weighted random rows, unknown hashed", "start"),
    ("count damping", "power 0.75, lr 0.1 (defaults)", {}),
    ("count damping", "power 0.75, lr 0.05", {"lr": 0.05}),
    ("count damping", "power 0.75, lr 0.3", {"lr": 0.3}),
    ("count damping", "power 0.5, lr 0.05", {"count_power": 0.5, "lr": 0.05}),
    ("post-processing", "30 components", {"common_components": 30}),
]
GRIDS = {"10M": GRID_10M, "100M": GRID_100M}


def run_grid(name: str, grid: list, threads: int) -> list:
    corpus = load_corpus([corpus_path(name)], TrainConfig().min_count, 0)
    dev, sets = read_sts(dev_path()), sts_sets()

    rows = []
    for group, label, over in grid:
        t0 = time.perf_counter()
        if over == "start":
            model = untrained_start(SimpleNamespace(config=TrainConfig(threads=threads).to_dict()), corpus)
            loss = None
        else:
            result = train(corpus, TrainConfig(**{**over, "threads": threads}), quiet=True)
            model, losses = result.model, result.losses
            loss = [losses[0], sum(losses[-3:]) / len(losses[-3:])]
        s = Scored(model.embed, dev, sets)
        row = {"corpus": name, "group": group, "label": label, "overrides": over, "loss_first_last": loss,
               "dev_pearson": s.dev["pearson"], "test_pearson_mean": s.mean, "seconds": round(time.perf_counter() - t0, 1)}
        rows.append(row)
        log(f"{name} {label}: dev {row['dev_pearson']:.4f}, test mean {row['test_pearson_mean']:.4f}")
    return rows


def markdown(result: dict) -> str:
    parts = ["# The search behind the training defaults", __doc__.split("\n\n", 2)[2].strip()]
    for name in result["corpora"]:
        rows = [r for r in result["rows"] if r["corpus"] == name]
        start = next((r for r in rows if r["overrides"] == "start"), None)
        table = []
        for r in rows:
            gain = "" if start is None or r is start else f"{r['dev_pearson'] - start['dev_pearson']:+.4f}"
            loss = "-" if not r["loss_first_last"] else " -> ".join(f"{x:.3f}" for x in r["loss_first_last"])
            table.append((r["group"], r["label"], f"{r['dev_pearson']:.4f}", gain, f"{r['test_pearson_mean']:.4f}", loss))
        parts.append(f"## {name}\n\n" + md_table(("group", "setting (else the defaults)", "STS-B dev",
                                                  "dev minus untrained start", "test mean (19 sets)", "loss"), table))
    parts.append(context_markdown(result["context"]))
    return "\n\n".join(parts)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.search", description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", choices=sorted(GRIDS), action="append", help="default: 10M then 100M")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="benchmarks/results/search")
    args = ap.parse_args(argv)
    corpora = args.corpus or ["10M", "100M"]
    rows = []
    for name in corpora:
        rows += run_grid(name, GRIDS[name], args.threads)
    result = {"corpora": corpora, "defaults": TrainConfig().to_dict(), "rows": rows, "context": context()}
    json_path, md_path = write_report(Path(args.out), json.loads(json.dumps(result)), markdown(result))
    log(f"wrote {json_path} and {md_path}")


if __name__ == "__main__":
    main()
