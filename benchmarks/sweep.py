"""Hyperparameter sweep on the STS-B dev set (never the test sets).

Each grid point trains once with ``common_components=-1`` (vectors as trained), then scores
the dev set with the post-training component removal at several ``k`` (it is applied to a
copy of the vectors, so one training run gives every column). The untrained word-overlap
control (random vectors of the same vocabulary, same post-processing) is the first row.

    python -m benchmarks.sweep                      # the default grid on the 10M corpus
    python -m benchmarks.sweep --grid '{"epochs":5,"lr":0.05,"weight_decay":3.0}' ...
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from scbow.config import TrainConfig
from scbow.corpus import load_corpus
from scbow.evaluate import read_sts, score_set
from scbow.model import Model
from scbow.trainer import init_vectors, remove_common_components, train

from .common import context, context_markdown, corpus_path, data_dir, md_table, write_report

COMPONENTS = (-1, 0, 5, 10, 20)
DEFAULT_GRID = [
    {"epochs": 1, "lr": 0.05, "weight_decay": 0.0},
    {"lr": 0.05, "weight_decay": 0.0},
    {"lr": 0.01, "weight_decay": 0.0},
    {"lr": 0.05, "weight_decay": 1.0},
    {"lr": 0.05, "weight_decay": 3.0},
    {"lr": 0.05, "weight_decay": 10.0},
    {"lr": 0.02, "weight_decay": 10.0},
    {"lr": 0.02, "weight_decay": 20.0},
    {"lr": 0.01, "weight_decay": 10.0},
    {"lr": 0.02, "weight_decay": 10.0, "negative_mode": "uniform"},
    {"lr": 0.02, "weight_decay": 10.0, "negatives": 1},
    {"lr": 0.02, "weight_decay": 10.0, "negatives": 5},
    {"lr": 0.02, "weight_decay": 10.0, "epochs": 10},
    {"lr": 0.02, "weight_decay": 10.0, "dim": 300},
]


def dev_scores(W, corpus, dev, seed) -> dict:
    out = {}
    for k in COMPONENTS:
        V = np.array(W, dtype=np.float32, copy=True)
        if k >= 0:
            remove_common_components(V, corpus, k, seed)
        out[str(k)] = round(score_set(Model(corpus.vocab, V).embed, dev).pearson, 4)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="10M", choices=("1M", "10M", "100M"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--grid", nargs="*", help="JSON objects of TrainConfig fields (default: the built-in grid)")
    ap.add_argument("--out", default="benchmarks/results/sweep")
    args = ap.parse_args(argv)

    corpus = load_corpus([corpus_path(args.corpus)], TrainConfig().min_count, 0)
    dev = read_sts(data_dir() / "sts-dev" / "stsb.dev.tsv")
    grid = [json.loads(g) for g in args.grid] if args.grid else DEFAULT_GRID
    rows = [{"run": "untrained control", **dev_scores(init_vectors(len(corpus.vocab), TrainConfig()), corpus, dev, 1)}]
    print(json.dumps(rows[0]), flush=True)
    for point in grid:
        config = TrainConfig(**{"threads": args.threads, **point, "common_components": -1})
        t0 = time.perf_counter()
        result = train(corpus, config, quiet=True)
        row = {"run": json.dumps(point), "seconds": round(time.perf_counter() - t0, 1),
               "final_loss": round(result.model.info["training"]["final_loss"], 4),
               **dev_scores(result.model.vectors, corpus, dev, config.seed)}
        rows.append(row)
        print(json.dumps(row), flush=True)

    head = ["run", "seconds", "final loss"] + [f"k={k}" if k >= 0 else "as trained" for k in COMPONENTS]
    table = [[r["run"], r.get("seconds", ""), r.get("final_loss", "")] + [r[str(k)] for k in COMPONENTS] for r in rows]
    ctx = context()
    markdown = "\n\n".join([
        f"# Dev-set sweep: STS-B dev Pearson, gutenberg-{args.corpus}",
        f"Command: `python -m benchmarks.sweep --corpus {args.corpus} --threads {args.threads}`. Other fields at "
        "their TrainConfig defaults. Columns: STS-B dev Pearson of the vectors as trained, and after centring "
        "the corpus's sentence averages and removing k principal directions (k=0: centring only), estimated on "
        "100,000 training sentences. The first row is the untrained control (random vectors, same vocabulary, "
        "same post-processing).",
        md_table(head, table),
        context_markdown(ctx),
    ])
    write_report(Path(args.out), {"corpus": args.corpus, "threads": args.threads, "components": COMPONENTS,
                                  "rows": rows, "context": ctx}, markdown)


if __name__ == "__main__":
    main()
