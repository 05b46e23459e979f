"""The STS learning curve of one run (the paper's Figure 2) and what recording it costs.

Trains on gutenberg-10M with the defaults, ``--threads 1``, ``--eval-every 500000``
(the STS-B dev set only), through the CLI; writes the curve with its context as
``<out>.json`` (``scbow-numba plot`` reads it), ``<out>.md`` and ``<out>.png``. Then:

- the same run without ``--eval-every``, to check that the reported examples/s is not
  distorted by the evaluations (the machine is shared: compare the two, not absolutes);
- one evaluation done the plain way (copy the matrix, ``remove_common_components`` on
  100,000 sentences, ``score_set``), against the curve's cheap one.

    python -m benchmarks.run learning_curve               # about 3 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from .common import REPO_ROOT, context, context_markdown, corpus_path, data_dir, md_table, write_report

PROG = "python -m benchmarks.run learning_curve"


def run_train(corpus: Path, out: Path, extra: list) -> dict:
    cmd = [sys.executable, "-m", "scbow.cli", "train", str(corpus), "-o", str(out), "--threads", "1", "-q", *extra]
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    seconds = time.perf_counter() - t
    meta = json.loads((out / "config.json").read_text())
    return {"command": " ".join(["scbow-numba", *cmd[3:]]), "process_seconds": round(seconds, 1), **meta["training"]}


def plain_evaluation_seconds(model_dir: Path, corpus: Path, dev_path: Path, repeats: int = 3) -> list:
    from scbow.config import TrainConfig
    from scbow.training.corpus import load_corpus
    from scbow.training.postprocess import remove_common_components
    from scbow.use.evaluate import read_sts, score_set
    from scbow.vectors.formats import load_model
    from scbow.vectors.model import Model

    model = load_model(model_dir, mmap=False)
    c = model.config
    encoded = load_corpus([corpus], c["min_count"], c["max_vocab"])
    dev = read_sts(dev_path)
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        W = np.array(model.vectors, copy=True)
        remove_common_components(W, encoded, TrainConfig.from_dict(c).components_removed, c["seed"])
        score_set(Model(model.vocab, W).embed, dev)
        out.append(round(time.perf_counter() - t, 3))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", default="500000")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--out", default="benchmarks/results/curve_10M")
    ap.add_argument("--skip-check", action="store_true", help="no run without --eval-every, no plain evaluation")
    args = ap.parse_args(argv)
    ctx = context()
    corpus = corpus_path("10M")
    dev_path = data_dir() / "sts-dev" / "stsb.dev.tsv"
    work = REPO_ROOT / "benchmarks" / ".work"
    work.mkdir(parents=True, exist_ok=True)
    env_dev = {"SCBOW_STS_DEV": str(dev_path)}
    os.environ.update(env_dev)

    with_eval = run_train(corpus, work / "curve_model", ["--epochs", str(args.epochs), "--eval-every", args.every])
    curve = json.loads((work / "curve_model" / "curve.json").read_text())
    checks = {}
    if not args.skip_check:
        checks["without_eval"] = run_train(corpus, work / "curve_model_noeval", ["--epochs", str(args.epochs)])
        checks["plain_evaluation_seconds"] = plain_evaluation_seconds(work / "curve_model", corpus, dev_path)

    points = curve["points"]
    middle = [p["eval_seconds"] for p in points[1:-1]]
    cost = {"first_point_seconds": points[0]["eval_seconds"],
            "median_point_seconds": statistics.median(middle) if middle else None,
            "max_point_seconds": max(middle) if middle else None,
            "last_point_seconds": points[-1]["eval_seconds"],
            "total_eval_seconds": curve["eval_seconds"]}
    data = {**curve, "context": ctx, "run": with_eval, "cost": cost, **checks}
    json_path = Path(args.out).with_name(Path(args.out).name + ".json")
    png_path = Path(args.out).with_name(Path(args.out).name + ".png")

    rows = [[p["examples"], f"{p['epoch']:.2f}", "yes" if p["epoch_end"] else "", p["seconds"],
             "" if p["loss"] is None else f"{p['loss']:.4f}", p["dev"]["pearson"], p["dev_raw"]["pearson"],
             p["eval_seconds"]] for p in points]
    timing = [["with --eval-every", with_eval["examples_per_second"], with_eval["kernel_seconds"],
               with_eval.get("eval_seconds"), with_eval["hook_seconds"], with_eval["wall_seconds"],
               with_eval["process_seconds"]]]
    if "without_eval" in checks:
        w = checks["without_eval"]
        timing.append(["without", w["examples_per_second"], w["kernel_seconds"], "", w["hook_seconds"],
                       w["wall_seconds"], w["process_seconds"]])
    parts = [
        "# STS learning curve: gutenberg-10M, STS-B dev set",
        f"Command: `python -m benchmarks.run learning_curve` (runs `{with_eval['command']}`; the dev set is "
        f"`{dev_path}`). Figure: `{png_path.name}` (`scbow-numba plot {json_path} -o {png_path}`).",
        "Columns: examples seen, epochs, epoch end, training seconds (wall clock without the evaluations), mean "
        "loss of the batches since the previous point, dev Pearson of the model as it would be saved (after the "
        "post-processing: centring and removing the top principal directions of sentence averages, estimated on "
        f"{curve['post_processing']['sample']:,} corpus sentences, the last point on "
        f"{curve['post_processing']['final_sample']:,} as the saved model), dev Pearson of the vectors as trained, "
        "and the seconds the evaluation took.",
        md_table(["examples", "epoch", "end", "seconds", "loss", "dev r (as saved)", "dev r (raw)", "eval s"], rows),
        "## What the evaluations cost",
        md_table(["run", "examples/s (kernel)", "kernel s", "eval s", "hook s", "training-loop wall s",
                  "process wall s"], timing),
        f"One point: {cost['median_point_seconds']} s (median of the points within the run; max "
        f"{cost['max_point_seconds']} s); the first {cost['first_point_seconds']} s (tokenizes the dev set and "
        f"draws the corpus sample once); the last {cost['last_point_seconds']} s (100,000 sentences, as the saved "
        "model). "
        + (f"The plain way (copy the matrix, `remove_common_components` on 100,000 sentences, score with "
           f"`Model.embed`) takes {checks['plain_evaluation_seconds']} s per evaluation. "
           if "plain_evaluation_seconds" in checks else "")
        + "examples/s is computed from kernel seconds only, so evaluations cannot lower it; the machine is shared "
          "and noisy, so the two runs' rates differ by noise, not by the evaluations.",
        context_markdown(ctx),
    ]
    write_report(args.out, data, "\n\n".join(parts))
    title = f"gutenberg-10M, defaults, --threads 1: STS-B dev Pearson every {args.every} examples"
    subprocess.run([sys.executable, "-m", "scbow.cli", "plot", str(json_path), "-o", str(png_path), "--title", title],
                   check=True)
    print(f"wrote {json_path}, {png_path} and the .md")


if __name__ == "__main__":
    main()
