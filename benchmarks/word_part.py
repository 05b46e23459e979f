"""The word part's settings, chosen on the STS-B dev set: passes, width and mix.

    python -m benchmarks.run word_part --corpus 100M --variants 3x150,5x150,3x300
    python -m benchmarks.run word_part --report-only          # the report from the runs recorded so far

Each variant (``PASSESxWIDTH``) is trained once by the product's trainer with every other setting
at its default; the mix (``word_mix``, a scalar on the word columns) is scored from that one
training at each of ``--mixes``. Every run is appended to ``--runs`` (JSON Lines) as it ends, so a
search can be made in pieces and on other days; the report is made from every run recorded there
for the corpus. **STS-B dev chooses**; the 19-set test mean and the word-similarity sets
(WordSim-353, SimLex-999: Spearman of the word columns' cosines, on the pairs whose words are in
the vocabulary) are shown, never used. Training times are wall seconds on the machine as it was
(its load average is recorded with each run): compare them only with runs made alone. "Default run
alone" is ``scbow-numba train CORPUS.txt.xz`` with the variant's settings, an empty corpus cache and
nothing else running, from the start of the command to the saved model (``alone_seconds``, added to a
run's record by hand after such a run).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from .common import REPO_ROOT, context, context_markdown, corpus_path, md_table, say, write_report

WORDSIM = {"wordsim353": REPO_ROOT / "benchmarks" / "data" / "wordsim353.tsv",
           "simlex999": REPO_ROOT / "benchmarks" / "data" / "simlex999.tsv"}
DEFAULT_RUNS = REPO_ROOT / "benchmarks" / "results" / "word_part_runs.jsonl"


def parse_variant(text: str) -> tuple[int, int]:
    passes, width = text.lower().split("x")
    return int(passes), int(width)


def word_sets(vectors: np.ndarray, vocab) -> dict:
    """Spearman's rho of the word columns' cosines on each word-similarity set."""
    from scipy.stats import spearmanr

    index, out = vocab.index, {}
    for name, path in WORDSIM.items():
        pairs = [(a.lower(), b.lower(), float(g)) for a, b, g in
                 (line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()
                  if line.strip() and not line.startswith("#"))]
        kept = [(index[a], index[b], g) for a, b, g in pairs if a in index and b in index]
        A = vectors[[k[0] for k in kept]].astype(np.float64)
        B = vectors[[k[1] for k in kept]].astype(np.float64)
        cos = (A * B).sum(1) / np.maximum(np.linalg.norm(A, axis=1) * np.linalg.norm(B, axis=1), 1e-30)
        out[name] = round(float(spearmanr([k[2] for k in kept], cos)[0]), 4)
    return out


def run_variant(corpus_name: str, passes: int, width: int, mixes: list[float], threads: int, cache_dir) -> dict:
    """Train one variant and score it at every mix: one record of ``--runs``."""
    from scbow.config import TrainConfig
    from scbow.training import read_corpus, train
    from scbow.use.data import data_dir
    from scbow.use.evaluate import read_sts, score_set

    corpus = read_corpus([corpus_path(corpus_name)], cache_dir=cache_dir)
    config = TrainConfig().replace(word_passes=passes, word_dim=width, threads=threads)
    load_start = os.getloadavg()
    t0 = time.perf_counter()
    model = train(corpus, config, quiet=True).model
    seconds = time.perf_counter() - t0
    dev = read_sts(data_dir() / "sts-dev" / "stsb.dev.tsv")
    sets = [read_sts(f) for f in sorted((data_dir() / "sts").glob("*.tsv"))]
    lo, hi = model.parts.get("word", (0, model.vectors.shape[1]))
    trained = np.array(model.vectors)
    scores = {}
    for mix in (mixes if passes else [config.word_mix]):
        model.vectors[:, lo:hi] = trained[:, lo:hi] * np.float32(mix / config.word_mix)
        scores[str(mix)] = {"dev": round(score_set(model.encode, dev).pearson, 4),
                            "test_mean": round(float(np.mean([score_set(model.encode, s).pearson for s in sets])), 4)}
    model.vectors[:] = trained
    w = model.info["training"].get("word_part") or {}
    return {"corpus": corpus_name, "passes": passes, "width": width, "threads": threads, "mixes": scores,
            **word_sets(trained[:, lo:hi], corpus.vocab), "train_seconds": round(seconds, 1),
            "word_part_seconds": w.get("kernel_seconds"), "sentence_part_seconds": model.info["training"]["kernel_seconds"],
            "word_loss": w.get("pass_losses"), "load_start": [round(x, 2) for x in load_start],
            "load_end": [round(x, 2) for x in os.getloadavg()], "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "commit": context()["git"].get("commit")}


def report(runs: list[dict], corpus_name: str, budget: float | None = None) -> tuple[dict, str]:
    """The table of every run and mix; the best on dev (bold), and the best on dev among the variants whose
    default run alone took at most ``budget`` seconds (the defaults' choice)."""
    rows, best, chosen = [], None, None
    for r in runs:
        for mix, s in r["mixes"].items():
            rows.append((r, float(mix), s))
            if r["passes"] and (best is None or s["dev"] > best[2]["dev"]):
                best = (r, float(mix), s)
            fits = budget is not None and r.get("alone_seconds") is not None and r["alone_seconds"] <= budget
            if r["passes"] and fits and (chosen is None or s["dev"] > chosen[2]["dev"]):
                chosen = (r, float(mix), s)
    table = []
    for r, mix, s in sorted(rows, key=lambda x: (x[0]["passes"], x[0]["width"], x[1])):
        mark = "**" if best and (r, mix) == best[:2] else ""
        table.append((r["passes"], r["width"] if r["passes"] else "-", mix if r["passes"] else "-",
                      f"{mark}{s['dev']:.4f}{mark}", f"{s['test_mean']:.4f}",
                      f"{r['wordsim353']:.3f} / {r['simlex999']:.3f}", r.get("word_part_seconds") or "-",
                      r["train_seconds"], ", ".join(f"{x:g}" for x in r["load_start"]) if r.get("load_start") else "?",
                      r.get("alone_seconds") or "-", (r.get("commit") or "?")[:8]))
    text = (f"# The word part's settings on {corpus_name}\n\n" + __doc__.split("\n\n", 2)[2].strip() + "\n\n"
            + md_table(("passes", "width", "mix", "STS-B dev", "test mean (19)", "WordSim / SimLex", "word part s",
                        "train s", "load at start", "default run alone, s", "commit"), table)
            + (f"\n\nBest on dev: {best[0]['passes']} passes x {best[0]['width']} dims, mix {best[1]:g} "
               f"(dev {best[2]['dev']:.4f}, test mean {best[2]['test_mean']:.4f})." if best else "")
            + (f" Best on dev within the budget of a default run alone ({budget:g} s): "
               + (f"{chosen[0]['passes']} passes x {chosen[0]['width']} dims, mix {chosen[1]:g} (dev "
                  f"{chosen[2]['dev']:.4f}; its run took {chosen[0]['alone_seconds']:g} s)." if chosen
                  else "none measured alone fits.") if budget is not None else ""))

    notes = sorted({(r.get("commit") or "?", r["note"]) for r in runs if r.get("note")})
    if notes:
        text += "\n\nNotes on the runs:\n\n" + "\n".join(f"- {commit}: {note}" for commit, note in notes)

    def settings(x):
        return x and {"passes": x[0]["passes"], "width": x[0]["width"], "mix": x[1]}

    return {"corpus": corpus_name, "runs": runs, "budget_seconds": budget, "best": settings(best),
            "chosen": settings(chosen)}, text


def main(argv=None, prog=None) -> None:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="100M", help="1M, 10M or 100M")
    ap.add_argument("--variants", default="3x150", help="comma-separated PASSESxWIDTH (0x0: the sentence part alone)")
    ap.add_argument("--mixes", default="0.5,0.75,1.0", help="word_mix values scored from each training")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=Path, default=DEFAULT_RUNS, help="JSON Lines of every run, appended to")
    ap.add_argument("--report-only", action="store_true", help="no training: the report from --runs")
    ap.add_argument("--cache-dir", type=Path, default=None, help="the corpus cache (default: scbow's)")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds a default run alone may take: the best on dev among the variants within it")
    ap.add_argument("--out", default="benchmarks/results/word_part_defaults", help="report prefix (.json and .md)")
    args = ap.parse_args(argv)
    if not args.report_only:
        mixes = [float(x) for x in args.mixes.split(",")]
        for passes, width in map(parse_variant, args.variants.split(",")):
            say(f"word part {passes} x {width} on {args.corpus}")
            record = run_variant(args.corpus, passes, width, mixes, args.threads, args.cache_dir)
            with open(args.runs, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record) + "\n")
    runs = [json.loads(line) for line in args.runs.read_text(encoding="utf-8").splitlines() if line.strip()]
    data, text = report([r for r in runs if r["corpus"] == args.corpus], args.corpus, args.budget)
    ctx = context()
    write_report(args.out, {**data, "context": ctx}, text + "\n\n" + context_markdown(ctx),
                 echo=True)


if __name__ == "__main__":
    main()
