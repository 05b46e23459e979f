"""Unknown words at inference, on the STS-B dev set only: leave them out, or hash them.

Models trained on gutenberg-10M (defaults, ``--threads 1``, two seeds) score the STS-B dev set with
its unknown words left out of the averages (the paper's rule, ``unknown="omit"``) and with
each unknown word given a fixed random vector from a hash of the word (``unknown="hash"``),
at several norms for those vectors (multiples of the median norm of the rarest tenth of
the vocabulary). Pearson is reported on all the pairs each mode scores and on the pairs
both score, with a paired bootstrap interval of the difference from "omit", and on the
pairs that hold an unknown word (the only ones the choice changes).

    python -m benchmarks.run unknown_words                     # trains the models (1-2 min each)
    python -m benchmarks.run unknown_words --model /tmp/m10c   # or scores models trained so
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from scbow.config import TrainConfig
from scbow.text.tokenize import tokenize
from scbow.use.evaluate import bootstrap_pearson_diff, correlations, pair_cosines, read_sts
from scbow.vectors.formats import load_model
from scbow.vectors.model import HASH_SCALE
from scbow.vectors.modeldir import save_model

from .common import REPO_ROOT, context, context_markdown, corpus_path, data_dir, md_table, write_report

PROG = "python -m benchmarks.run unknown_words"

SCALES = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0)


def oov_stats(model, sts) -> dict:
    index = model.vocab.index
    tokens = unknown = pairs_with = pairs_empty = 0
    for a, b in zip(sts.first, sts.second):
        ta, tb = tokenize(a), tokenize(b)
        ua = [t for t in ta if t not in index]
        ub = [t for t in tb if t not in index]
        tokens += len(ta) + len(tb)
        unknown += len(ua) + len(ub)
        pairs_with += bool(ua or ub)
        pairs_empty += len(ua) == len(ta) or len(ub) == len(tb)
    return {"pairs": len(sts.gold), "tokens": tokens, "unknown_tokens": unknown,
            "unknown_token_share": round(unknown / tokens, 4), "pairs_with_unknown": pairs_with,
            "pairs_with_a_side_without_known_word": pairs_empty}


def has_unknown(model, sts) -> np.ndarray:
    index = model.vocab.index
    return np.array([any(t not in index for t in tokenize(a) + tokenize(b)) for a, b in zip(sts.first, sts.second)])


def score_model(model, dev, resamples: int) -> list:
    with_unknown = has_unknown(model, dev)
    omit = pair_cosines(model.embed, dev.first, dev.second)
    modes = [("omit", None, omit)]
    for scale in SCALES:
        modes.append(("hash", scale, pair_cosines(lambda s, k=scale: model.embed(s, unknown="hash", unknown_scale=k),
                                                  dev.first, dev.second)))
    rows = []
    for mode, scale, pred in modes:
        ok = np.isfinite(pred)
        common = ok & np.isfinite(omit)
        sub = common & with_unknown
        p_all, s_all = correlations(dev.gold[ok], pred[ok])
        p_common, _ = correlations(dev.gold[common], pred[common])
        p_sub, _ = correlations(dev.gold[sub], pred[sub])
        diff, low, high = (bootstrap_pearson_diff(dev.gold, pred, omit, resamples, seed=0)
                           if mode != "omit" else (0.0, 0.0, 0.0))
        rows.append({"mode": mode, "scale": scale, "scored": int(ok.sum()), "pearson": round(p_all, 4),
                     "spearman": round(s_all, 4), "pearson_common": round(p_common, 4),
                     "pearson_pairs_with_unknown": round(p_sub, 4), "pairs_with_unknown_scored": int(sub.sum()),
                     "diff_vs_omit_common": round(diff, 4), "diff_ci95": [round(low, 4), round(high, 4)]})
        print(rows[-1], flush=True)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, nargs="+", default=None,
                    help="models trained on gutenberg-10M with the defaults (else --seeds are trained, --threads 1)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--out", default="benchmarks/results/unknown_words")
    ap.add_argument("--resamples", type=int, default=2000)
    args = ap.parse_args(argv)
    ctx = context()
    dev_path = data_dir() / "sts-dev" / "stsb.dev.tsv"
    dev = read_sts(dev_path)

    paths, train_seconds = args.model or [], {}
    if args.model is None:
        from scbow.training.corpus import read_corpus
        from scbow.training.trainer import train

        for seed in args.seeds:
            work = REPO_ROOT / "benchmarks" / ".work" / f"unknown_words_model_seed{seed}"
            t = time.perf_counter()
            config = TrainConfig(threads=1, seed=seed)
            corpus = read_corpus([corpus_path("10M")], config.min_count, config.max_vocab, quiet=True)
            result = train(corpus, config, quiet=True)
            train_seconds[str(work)] = round(time.perf_counter() - t, 1)
            save_model(result.model, work)
            paths.append(work)
    runs = []
    for path in paths:
        model = load_model(path)
        print(f"{path}: seed {model.config.get('seed')}", flush=True)
        runs.append({"model": str(path), "config": model.config, "vocab_size": len(model),
                     "train_seconds": train_seconds.get(str(path)), "unknown_norm": round(model.unknown_norm(), 6),
                     "oov": oov_stats(model, dev), "rows": score_model(model, dev, args.resamples)})

    data = {"context": ctx, "dev": str(dev_path), "default_scale": HASH_SCALE, "runs": runs}
    sections = []
    for run in runs:
        s = run["oov"]
        table = [[r["mode"], "" if r["scale"] is None else r["scale"], r["scored"], r["pearson"], r["spearman"],
                  r["pearson_common"], r["pearson_pairs_with_unknown"],
                  "" if r["mode"] == "omit" else f"{r['diff_vs_omit_common']:+.4f} [{r['diff_ci95'][0]:+.4f}, "
                                                 f"{r['diff_ci95'][1]:+.4f}]"] for r in run["rows"]]
        sections += [
            f"## Model: seed {run['config'].get('seed')}, threads {run['config'].get('threads')}",
            f"{run['vocab_size']:,} words. Unknown words in the dev set: {s['unknown_tokens']:,} of {s['tokens']:,} "
            f"tokens ({100 * s['unknown_token_share']:.1f}%); {s['pairs_with_unknown']:,} of {s['pairs']:,} pairs "
            f"hold one; {s['pairs_with_a_side_without_known_word']:,} have a side with no known word (unscored "
            f"when omitting). Reference norm (median of the rarest tenth): {run['unknown_norm']:.4g}.",
            md_table(["mode", "scale", "scored", "pearson", "spearman", "pearson (common)",
                      "pearson (pairs with unknown)", "diff vs omit [95% CI]"], table),
        ]
    summary = []
    for run in runs:
        omit = run["rows"][0]
        best = max((r for r in run["rows"] if r["mode"] == "hash"), key=lambda r: r["pearson"])
        summary.append(f"seed {run['config'].get('seed')}: omit {omit['pearson']:.4f}, best hash scale {best['scale']} "
                       f"{best['pearson']:.4f} ({best['diff_vs_omit_common']:+.4f}, 95% CI "
                       f"[{best['diff_ci95'][0]:+.4f}, {best['diff_ci95'][1]:+.4f}])")
    markdown = "\n\n".join([
        "# Unknown words at inference: STS-B dev set",
        "Summary: " + "; ".join(summary) + f". `HASH_SCALE` (the scale of `unknown=\"hash\"`) is {HASH_SCALE}; "
        "the default mode stays `omit` (see the project README).",
        "Command: `python -m benchmarks.run unknown_words`. Models: gutenberg-10M, every hyperparameter at its default, "
        "`--threads 1` (deterministic), one per seed. Dev set only; the test sets were not used.",
        "Modes: `omit` leaves unknown words out of the average (the paper's rule, the default); `hash` gives each "
        "one a fixed random direction from a BLAKE2b hash of the word, of norm `scale` x the median norm of the "
        "rarest tenth of the vocabulary. Columns: pairs scored; Pearson and Spearman over them; Pearson on the "
        "pairs both modes score; Pearson on those of them that hold an unknown word; the Pearson difference from "
        f"`omit` on the common pairs with a paired bootstrap 95% interval ({args.resamples} resamples).",
        *sections,
        context_markdown(ctx),
    ])
    json_path, md_path = write_report(args.out, data, markdown)
    print(f"wrote {json_path} and {md_path}")


if __name__ == "__main__":
    main()
