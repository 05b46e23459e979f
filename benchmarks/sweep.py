"""Hyperparameter sweep on the STS-B dev set (never the test sets).

Each grid point trains once with ``common_components=-1`` (vectors as trained), then scores
the dev set with the post-training component removal at several ``k`` (it is applied to a
copy of the vectors, so one training run gives every column). The untrained word-overlap
control (random vectors of the same vocabulary, same post-processing) is the first row.

    python -m benchmarks.run sweep                      # the default grid on the 10M corpus
    python -m benchmarks.run sweep --grid '{"epochs":5,"lr":0.05,"weight_decay":3.0}' ...
    python -m benchmarks.run sweep --only negatives=10 dim=200 --threads 1   # some grid points, merged
    python -m benchmarks.run sweep --plot               # only redraw the figures from <out>.json

``--only`` runs the grid points that match (``field=value``, several joined by commas must
all match) and merges their rows into the existing ``<out>.json`` report, replacing rows of
the same points; every row records the threads it ran with. After a run, and with
``--plot``, the paper's hyperparameter figures (Kenter et al. 2016, Fig. 3 and 4: number of
negatives, embedding size) are drawn from the report as ``hyper_negatives.png`` and
``hyper_dims.png`` beside it, for the dev set.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from scbow.config import TrainConfig
from scbow.training.corpus import load_corpus
from scbow.training.postprocess import remove_common_components
from scbow.training.start import init_vectors
from scbow.training.trainer import train
from scbow.use.evaluate import read_sts, score_set
from scbow.vectors.model import Model

from .common import context, context_markdown, corpus_path, data_dir, md_table, write_report

PROG = "python -m benchmarks.run sweep"

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
    {"lr": 0.02, "weight_decay": 10.0, "negatives": 10},
    {"lr": 0.02, "weight_decay": 10.0, "epochs": 10},
    {"lr": 0.02, "weight_decay": 10.0, "dim": 200},
    {"lr": 0.02, "weight_decay": 10.0, "dim": 300},
]
# The paper's hyperparameter figures: one field varied around the default point.
FIGURES = (
    ("negatives", (1, 2, 5, 10), "hyper_negatives.png", "number of negative examples (paper Fig. 3)"),
    ("dim", (100, 200, 300), "hyper_dims.png", "embedding dimension (paper Fig. 4)"),
)
FIGURE_BASE = {"lr": 0.02, "weight_decay": 10.0}  # with every other field at its TrainConfig default


def dev_scores(W, corpus, dev, seed) -> dict:
    out = {}
    for k in COMPONENTS:
        V = np.array(W, dtype=np.float32, copy=True)
        if k >= 0:
            remove_common_components(V, corpus, k, seed)
        out[str(k)] = round(score_set(Model(corpus.vocab, V).embed, dev).pearson, 4)
    return out


def select(grid: list, specs: list) -> list:
    """Grid points matching any of ``specs`` (``field=value[,field=value...]``, all must match)."""
    chosen = []
    for spec in specs:
        want = {}
        for item in spec.split(","):
            key, sep, value = item.partition("=")
            if not sep:
                raise SystemExit(f"--only {spec!r}: expected field=value")
            want[key.strip()] = json.loads(value)
        found = [p for p in grid if all(p.get(k) == v for k, v in want.items())]
        if not found:
            raise SystemExit(f"--only {spec!r}: no grid point matches")
        chosen += [p for p in found if p not in chosen]
    return chosen


def point_value(run: str, field: str):
    """The value of ``field`` at a figure point, or None when ``run`` is not on that figure."""
    if run == "untrained control":
        return None
    point = json.loads(run)
    rest = {k: v for k, v in point.items() if k != field}
    if rest != FIGURE_BASE:
        return None
    return point.get(field, getattr(TrainConfig(), field))


def figure_points(data: dict, field: str, values) -> dict:
    """value -> row of the sweep rows that lie on the figure of ``field``."""
    points = {}
    for r in data["rows"]:
        v = point_value(r["run"], field)
        if v in values:
            points[v] = r
    return points


def plot_hyper(data: dict, out_dir: Path) -> list:
    """Draw the paper's hyperparameter figures (dev-set Pearson) from a sweep report; returns the files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["rows"]
    control = next((r for r in rows if r["run"] == "untrained control"), None)
    default_threads = data.get("threads")
    written = []
    for field, values, name, label in FIGURES:
        points = figure_points(data, field, values)
        xs = [v for v in values if v in points]
        if len(xs) < 2:
            continue
        fig, ax = plt.subplots(figsize=(5.2, 3.6), dpi=120)
        for k, style, text in (("10", "o-", "k = 10 components removed (default)"), ("-1", "s--", "as trained")):
            ax.plot(xs, [points[v][k] for v in xs], style, label=f"Siamese CBOW, {text}")
            if control is not None:
                ax.axhline(control[k], color=ax.lines[-1].get_color(), linestyle=":", linewidth=1,
                           label=f"untrained control, {text.split(' (')[0]}")
        for v in xs:
            threads = points[v].get("threads", default_threads)
            ax.annotate(f"{threads} thr", (v, points[v]["10"]), textcoords="offset points", xytext=(0, 6),
                        ha="center", fontsize=7, color="gray")
        default = getattr(TrainConfig(), field)
        ax.axvline(default, color="gray", linewidth=0.6, alpha=0.5)
        if field == "negatives":
            ax.set_xscale("log")
        ax.set_xticks(list(values))
        ax.set_xticklabels([str(v) for v in values])
        ax.minorticks_off()
        ax.margins(y=0.12)
        ax.set_xlabel(label)
        ax.set_ylabel("STS-B dev Pearson")
        ax.set_title(f"Siamese CBOW on gutenberg-{data['corpus']}, STS-B dev set\n"
                     "(gray: training threads; vertical line: the default)", fontsize=8)
        ax.legend(fontsize=6.5, loc="best")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        path = out_dir / name
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    return written


def write_sweep_report(out: Path, data: dict) -> None:
    rows = data["rows"]
    components = data["components"]
    head = ["run", "threads", "seconds", "final loss"] + [f"k={k}" if k >= 0 else "as trained" for k in components]
    table = [[r["run"], r.get("threads", data["threads"]) if "seconds" in r else "", r.get("seconds", ""),
              r.get("final_loss", "")] + [r[str(k)] for k in components] for r in rows]
    ctx = data["context"]
    extra = data.get("merged_runs", [])
    markdown = "\n\n".join([
        f"# Dev-set sweep: STS-B dev Pearson, gutenberg-{data['corpus']}",
        f"Command: `python -m benchmarks.run sweep --corpus {data['corpus']} --threads {data['threads']}`"
        + "".join(f"; then `python {' '.join(m['command'][1:])}` "
                  f"({m['date_utc']}, commit {str(m['git']['commit'])[:12]}, 1-min load at start "
                  f"{m['machine']['load_average_1_5_15'][0]}: seconds from a busy machine) for {', '.join(m['runs'])}"
                  for m in extra)
        + ". Other fields at "
        "their TrainConfig defaults. Columns: STS-B dev Pearson of the vectors as trained, and after centring "
        "the corpus's sentence averages and removing k principal directions (k=0: centring only), estimated on "
        "100,000 training sentences. The first row is the untrained control (random vectors, same vocabulary, "
        "same post-processing). threads: 1 runs the deterministic serial kernel, 2 the Hogwild kernel (runs "
        "differ by about 0.01).",
        md_table(head, table),
        *(["Figures: `hyper_negatives.png` and `hyper_dims.png` (the paper's Fig. 3 and 4, on the dev set) are "
           "drawn from the rows above with `python -m benchmarks.run sweep --plot`."]
          if any(len(figure_points(data, f, v)) >= 2 for f, v, _, _ in FIGURES) else []),
        context_markdown(ctx),
    ])
    write_report(out, data, markdown)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="10M", choices=("1M", "10M", "100M"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--grid", nargs="*", help="JSON objects of TrainConfig fields (default: the built-in grid)")
    ap.add_argument("--only", nargs="+", metavar="FIELD=VALUE",
                    help="run only the grid points that match and merge their rows into the existing report")
    ap.add_argument("--plot", action="store_true", help="train nothing; redraw the figures from <out>.json")
    ap.add_argument("--out", default="benchmarks/results/sweep")
    args = ap.parse_args(argv)
    out = Path(args.out)
    json_path = out.with_name(out.name + ".json")

    if args.plot:
        for path in plot_hyper(json.loads(json_path.read_text()), out.parent):
            print(f"wrote {path}")
        return

    grid = [json.loads(g) for g in args.grid] if args.grid else DEFAULT_GRID
    previous = None
    if args.only:
        grid = select(grid, args.only)
        if json_path.is_file():
            previous = json.loads(json_path.read_text())
            if previous["corpus"] != args.corpus:
                raise SystemExit(f"{json_path} is a sweep on {previous['corpus']}, not {args.corpus}")
    corpus = load_corpus([corpus_path(args.corpus)], TrainConfig().min_count, 0)
    dev = read_sts(data_dir() / "sts-dev" / "stsb.dev.tsv")
    rows = []
    if previous is None:
        rows.append({"run": "untrained control",
                     **dev_scores(init_vectors(len(corpus.vocab), TrainConfig()), corpus, dev, 1)})
        print(json.dumps(rows[0]), flush=True)
    for point in grid:
        config = TrainConfig(**{"threads": args.threads, **point, "common_components": -1})
        t0 = time.perf_counter()
        result = train(corpus, config, quiet=True)
        row = {"run": json.dumps(point), "threads": args.threads, "seconds": round(time.perf_counter() - t0, 1),
               "final_loss": round(result.model.info["training"]["final_loss"], 4),
               **dev_scores(result.model.vectors, corpus, dev, config.seed)}
        rows.append(row)
        print(json.dumps(row), flush=True)

    ctx = context()
    if previous is None:
        data = {"corpus": args.corpus, "threads": args.threads, "components": COMPONENTS, "rows": rows, "context": ctx}
    else:
        data = previous
        new = {r["run"]: r for r in rows}
        kept = [r for r in data["rows"] if r["run"] not in new]
        # keep the built-in grid's order: control first, then grid points, then anything else
        order = ["untrained control"] + [json.dumps(p) for p in DEFAULT_GRID]
        merged = kept + rows
        merged.sort(key=lambda r: order.index(r["run"]) if r["run"] in order else len(order))
        data["rows"] = merged
        data.setdefault("merged_runs", []).append({"command": ctx["command"], "date_utc": ctx["date_utc"],
                                                   "git": ctx["git"], "machine": ctx["machine"],
                                                   "runs": list(new)})
    write_sweep_report(out, data)
    try:
        for path in plot_hyper(data, out.parent):
            print(f"wrote {path}")
    except ImportError:
        print("matplotlib is not installed: figures not drawn")


if __name__ == "__main__":
    main()
