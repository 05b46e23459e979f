"""Nearest words a user can read (issue 23): plain cosine against rules that keep rare words out.

The nearest words of the saved rows by plain cosine are crowded by words seen a handful of
times (a rare word's row is mostly its random start and a few steps, and lands near
anything). This suite measures, on the word-similarity sets, what a user of
``scbow-numba neighbors`` / ``Model.most_similar`` reads: for every pair (a, b) a person
rated as highly similar, where b lands among a's neighbours over the whole vocabulary
(and a among b's), under

- ``cosine``: the plain ranking (``min_count=0``);
- ``min_count=C``: only words seen at least C times in the corpus are candidates;
- ``log_bonus=L``: rank by cosine + L * ln(count), a penalty that falls with the log count;
- ``shrink=K``: rank by cosine * count / (count + K), rare words' cosines shrunk to 0.

Each set is split in two halves by a hash of the pair (``half_of``); the rule and its
parameter are chosen on the dev halves, and the test halves are reported beside plain
cosine, with a paired bootstrap interval of the difference. Metrics per half: mean
reciprocal rank (MRR; a word the rule leaves out ranks nowhere, 0), recall@10 and @50, and
the median corpus count of the top 10 words shown for those queries.

    python -m benchmarks.run neighbours --model 100M=DIR 10M=DIR2     # models trained with the defaults
    python -m benchmarks.run neighbours                                # trains both here (a few minutes)

(At the commit this was written, ``scbow-numba train`` on 100M with the defaults stops with "the word
vectors collapsed" on this machine: its check reads the rows before post-processing, 44 of 300
directions; the 100M model of the report was trained with that check disabled, nothing else changed.)
    python -m benchmarks.run neighbours --model 100M=DIR --word2vec    # and gensim CBOW on 10M, for comparison
"""

from __future__ import annotations

import argparse
import hashlib
import time
from pathlib import Path

import numpy as np

from scbow.vectors.neighbours import NEIGHBOUR_MIN_COUNT

from .common import REPO_ROOT, context, context_markdown, corpus_path, md_table, read_word_pairs, say, write_report

PROG = "python -m benchmarks.run neighbours"

SETS = {"WordSim-353": REPO_ROOT / "benchmarks" / "data" / "wordsim353.tsv",
        "SimLex-999": REPO_ROOT / "benchmarks" / "data" / "simlex999.tsv"}
HIGH = 7.0  # a pair rated at least this (both sets are 0-10) is one a user expects among the neighbours
PROBES = ("house", "god", "happy", "water", "king", "money")
RULES = ([("cosine", 0)] + [("min_count", c) for c in (10, 20, 30, 50, 100, 200, 300, 500, 1000, 2000, 5000)]
         + [("log_bonus", v) for v in (0.005, 0.01, 0.015, 0.02, 0.03, 0.05)]
         + [("shrink", k) for k in (5, 10, 20, 50, 100, 200, 500, 1000, 2000)])
RESAMPLES = 2000


def rule_name(rule) -> str:
    kind, value = rule
    return "cosine" if kind == "cosine" else f"{kind}={value:g}"


def half_of(a: str, b: str) -> str:
    """'dev' or 'test': the pair's half, from a hash of its two words (either order alike)."""
    key = "\t".join(sorted((a, b))).encode("utf-8")
    return "dev" if hashlib.blake2b(key, digest_size=8).digest()[0] % 2 == 0 else "test"



def queries_of(pairs, index) -> dict:
    """Per half, the (query id, wanted id) of every highly rated pair of two distinct known words, both ways."""
    out = {"dev": [], "test": []}
    seen = set()
    for a, b, score in pairs:
        if score < HIGH or a == b or a not in index or b not in index or (a, b) in seen:
            continue
        seen.update({(a, b), (b, a)})
        out[half_of(a, b)] += [(index[a], index[b]), (index[b], index[a])]
    return out


def scores_under(rule, cos: np.ndarray, log_counts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The ranking score of every word (rows: queries) under ``rule``; -inf: not a candidate."""
    kind, value = rule
    if kind == "cosine":
        return cos
    if kind == "min_count":
        return np.where((counts >= value) | (counts == 0), cos, -np.inf)
    if kind == "log_bonus":
        return cos + value * log_counts
    if kind == "shrink":
        return cos * (counts / (counts + value))
    raise ValueError(kind)


def unit_rows(model) -> np.ndarray:
    M = np.asarray(model.vectors, dtype=np.float32)
    norms = np.linalg.norm(M, axis=1, keepdims=True)
    return M / np.where(norms > 0, norms, 1)


def ranks(model, unit: np.ndarray, queries, rules, block: int = 64) -> dict:
    """rule name -> (ranks of the wanted words (inf: left out), median count of the top 10 per query)."""
    counts = np.asarray(model.vocab.counts, dtype=np.float64)
    log_counts = np.log(np.maximum(counts, 1))
    out = {rule_name(r): ([], []) for r in rules}
    for lo in range(0, len(queries), block):
        q = np.array([i for i, _ in queries[lo:lo + block]])
        want = np.array([j for _, j in queries[lo:lo + block]])
        cos = unit[q] @ unit.T
        cos[np.arange(len(q)), q] = -np.inf  # the query word itself is never shown
        for rule in rules:
            s = scores_under(rule, cos, log_counts, counts)
            target = s[np.arange(len(q)), want]
            ids = np.arange(s.shape[1])
            # ties go to the more frequent word (the lower id), as most_similar does
            better = (s > target[:, None]) | ((s == target[:, None]) & (ids[None, :] < want[:, None]))
            r = np.where(np.isfinite(target), better.sum(axis=1) + 1, np.inf)
            top = np.argpartition(-s, 10, axis=1)[:, :10]
            rank_list, shown = out[rule_name(rule)]
            rank_list.extend(r.tolist())
            shown.extend(np.median(counts[top], axis=1).tolist())
    return {k: (np.array(v[0], dtype=np.float64), np.array(v[1])) for k, v in out.items()}


def metrics(r: np.ndarray, shown: np.ndarray) -> dict:
    rr = np.where(np.isfinite(r), 1.0 / r, 0.0)
    return {"queries": int(len(r)), "mrr": round(float(rr.mean()), 4) if len(r) else None,
            "recall@10": round(float((r <= 10).mean()), 4) if len(r) else None,
            "recall@50": round(float((r <= 50).mean()), 4) if len(r) else None,
            "median_rank": float(np.median(r)) if len(r) else None,
            "median_count_top10": float(np.median(shown)) if len(shown) else None}


def pair_rr_diff(r_rule: np.ndarray, r_base: np.ndarray) -> np.ndarray:
    """1/rank under a rule minus under another, averaged over the two directions of each rated pair."""
    d = np.where(np.isfinite(r_rule), 1 / r_rule, 0) - np.where(np.isfinite(r_base), 1 / r_base, 0)
    return d.reshape(-1, 2).mean(axis=1)  # the two directions of one rated pair move together


def bootstrap_means(diffs: list, resamples: int, seed: int = 0) -> np.ndarray:
    """Bootstrap means of each array of per-pair differences (one per set, resampled apart), averaged."""
    rng = np.random.default_rng(seed)
    return np.mean([d[rng.integers(0, len(d), size=(resamples, len(d)))].mean(axis=1) for d in diffs], axis=0)


def interval(means: np.ndarray) -> list:
    return [round(float(np.percentile(means, 2.5)), 4), round(float(np.percentile(means, 97.5)), 4)]


def evaluate(model, rules, resamples: int) -> tuple[dict, dict]:
    """Metrics per set, half and rule; and the ranks themselves ({set: {half: {rule: ranks}}})."""
    unit = unit_rows(model)
    out, raw = {}, {}
    for name, path in SETS.items():
        pairs = read_word_pairs(path)
        halves = queries_of(pairs, model.vocab.index)
        row = {"pairs": len(pairs), "high_pairs": sum(s >= HIGH and a != b for a, b, s in pairs)}
        raw[name] = {}
        for half, queries in halves.items():
            found = ranks(model, unit, queries, rules)
            base = found["cosine"][0]
            row[half] = {rule: {**metrics(r, shown),
                                "mrr_diff_ci95": interval(bootstrap_means([pair_rr_diff(r, base)], resamples))}
                         for rule, (r, shown) in found.items()}
            raw[name][half] = {rule: r for rule, (r, _) in found.items()}
        out[name] = row
    return out, raw


def mean_dev_mrr(result: dict, rule: str) -> float:
    return float(np.mean([row["dev"][rule]["mrr"] for row in result.values()]))


def best_per_family(result: dict) -> dict:
    """The best parameter of each family of rules by the mean of the two sets' dev MRR."""
    best = {}
    for kind in dict(RULES):
        family = [rule_name(r) for r in RULES if r[0] == kind]
        best[kind] = max(family, key=lambda r: mean_dev_mrr(result, r))
    return best


def choose_min_count(result: dict, raw: dict, resamples: int) -> dict:
    """The default, from the dev halves: the smallest minimum count not clearly worse than the best one.

    The best minimum count by the mean of the two sets' dev MRR keeps rising with the count
    as long as the rated words are frequent ones (the sets hold everyday words), while every
    word below it vanishes from every answer; so the default is the smallest count whose
    paired bootstrap interval of (its dev MRR - the best's) reaches 0: as good as the best
    within the noise of the dev halves, leaving the most words.
    """
    family = [rule_name(r) for r in RULES if r[0] == "min_count"]
    best = max(family, key=lambda r: mean_dev_mrr(result, r))
    checked = {}
    for rule in sorted(family, key=lambda r: int(r.split("=")[1])):
        means = bootstrap_means([pair_rr_diff(raw[n]["dev"][rule], raw[n]["dev"][best]) for n in SETS], resamples)
        checked[rule] = {"dev_mrr_mean": round(mean_dev_mrr(result, rule), 4),
                         "diff_from_best": round(mean_dev_mrr(result, rule) - mean_dev_mrr(result, best), 4),
                         "ci95": interval(means)}
    chosen = next(r for r, c in checked.items() if c["ci95"][1] >= 0)
    return {"best": best, "chosen": chosen, "chosen_min_count": int(chosen.split("=")[1]), "checked": checked}


def examples(model, words=PROBES, topn: int = 8, min_count: int = NEIGHBOUR_MIN_COUNT) -> dict:
    """The nearest words of a few everyday words, plain and under the default, with their counts."""
    out = {}
    for w in words:
        if w not in model:
            continue
        counts = model.vocab.counts
        index = model.vocab.index
        plain = model.most_similar(w, topn=topn, min_count=0)
        ruled = model.most_similar(w, topn=topn, min_count=min_count)
        out[w] = {"count": int(counts[index[w]]),
                  "cosine": [(x, round(c, 3), int(counts[index[x]])) for x, c in plain],
                  f"min_count={min_count}": [(x, round(c, 3), int(counts[index[x]])) for x, c in ruled]}
    return out


def train_default(corpus: str, work: Path) -> Path:
    from scbow.config import TrainConfig
    from scbow.training.corpus import read_corpus
    from scbow.training.trainer import train
    from scbow.vectors.modeldir import save_model

    config = TrainConfig()
    say(f"training Siamese CBOW on {corpus} with the defaults")
    data = read_corpus([corpus_path(corpus)], config.min_count, config.max_vocab, quiet=True)
    result = train(data, config, quiet=True)
    path = work / f"scbow-{corpus}"
    save_model(result.model, path)
    return path


def train_cbow_10M():
    """gensim's word2vec CBOW on 10M with the quality suite's settings (its token file and code)."""
    from .quality import encode_corpus, settings_of, token_file, train_word2vec

    corpus, key, _ = encode_corpus(corpus_path("10M"), 5)
    tokens, _ = token_file(corpus, key)
    return train_word2vec("cbow", tokens, settings_of("cbow", threads=2))


def section(run: dict, chosen: str) -> list:
    result, words, best = run["result"], run["words"], run["best_on_dev_per_family"]
    left = run["candidates_at_default"]
    lines = [f"## {run['label']}: {words:,} words ({left:,} seen at least {NEIGHBOUR_MIN_COUNT} times)",
             f"Model: `{run['model']}`."]
    rows = []
    for name, row in result.items():
        for half in ("dev", "test"):
            for rule in ("cosine", chosen):
                m = row[half][rule]
                ci = m["mrr_diff_ci95"]
                diff = "" if rule == "cosine" else (f"{m['mrr'] - row[half]['cosine']['mrr']:+.4f} "
                                                     f"[{ci[0]:+.4f}, {ci[1]:+.4f}]")
                rows.append([name, half, m["queries"], rule, f"{m['mrr']:.4f}", diff, f"{m['recall@10']:.3f}",
                             f"{m['recall@50']:.3f}", f"{m['median_rank']:g}", f"{m['median_count_top10']:g}"])
    lines.append(md_table(["set", "half", "queries", "ranking", "MRR", "MRR - cosine [95% CI]", "recall@10",
                           "recall@50", "median rank", "median count of the top 10"], rows))
    lines.append("Every rule on the dev halves (MRR per set and their mean; recall@10 per set; the median "
                 "count of the ten words shown):")
    dev_rows = []
    for rule in result[next(iter(result))]["dev"]:
        w, s = (result[n]["dev"][rule] for n in SETS)
        mark = " (default)" if rule == chosen else (" (best of its family)" if rule in best.values()
                                                     and rule != "cosine" else "")
        dev_rows.append([rule + mark, f"{w['mrr']:.4f}", f"{s['mrr']:.4f}", f"{(w['mrr'] + s['mrr']) / 2:.4f}",
                         f"{w['recall@10']:.3f}", f"{s['recall@10']:.3f}", f"{w['median_count_top10']:g}",
                         f"{s['median_count_top10']:g}"])
    lines.append(md_table(["rule", "MRR WordSim", "MRR SimLex", "mean", "R@10 WordSim", "R@10 SimLex",
                           "top-10 count WordSim", "top-10 count SimLex"], dev_rows))
    lines.append("Nearest words (corpus count in brackets), plain cosine against the default:")
    ex_rows = []
    for w, e in run["probes"].items():
        plain, ruled = e["cosine"], e[chosen]
        ex_rows.append([f"{w} ({e['count']:,})", ", ".join(f"{x} ({c:,})" for x, _, c in plain),
                        ", ".join(f"{x} ({c:,})" for x, _, c in ruled)])
    lines.append(md_table(["word", "cosine (`--min-count 0`)", f"{chosen} (the default)"], ex_rows))
    return lines


def parse_models(specs) -> list:
    return [tuple(m.split("=", 1)) if "=" in m else (Path(m).name, m) for m in specs]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", nargs="+", default=None, metavar="LABEL=DIR",
                    help="models trained with the defaults; the first one chooses the default (else 100M and 10M "
                         "are trained here, into benchmarks/.work/neighbours)")
    ap.add_argument("--word2vec", action="store_true",
                    help="also gensim's word2vec CBOW trained on 10M with the quality suite's settings")
    ap.add_argument("--resamples", type=int, default=RESAMPLES)
    ap.add_argument("--out", default="benchmarks/results/neighbours")
    args = ap.parse_args(argv)
    ctx = context("gensim")
    import scbow

    if args.model:
        models = parse_models(args.model)
    else:
        work = REPO_ROOT / "benchmarks" / ".work" / "neighbours"
        models = [(f"Siamese CBOW {c}", str(train_default(c, work))) for c in ("100M", "10M")]
    loaded = [(label, path, scbow.load(path)) for label, path in models]
    if args.word2vec:
        loaded.append(("w2v CBOW 10M", "gensim Word2Vec, the quality suite's settings", train_cbow_10M()))
    runs = []
    for label, path, model in loaded:
        t = time.perf_counter()
        say(f"{label}: {len(model):,} words from {path}")
        result, raw = evaluate(model, RULES, args.resamples)
        choice = choose_min_count(result, raw, args.resamples)
        counts = model.vocab.counts
        runs.append({"label": label, "model": str(path), "config": model.config, "words": len(model),
                     "candidates_at_default": int(((counts >= NEIGHBOUR_MIN_COUNT) | (counts == 0)).sum()),
                     "choice_on_dev": choice, "result": result, "probes": examples(model),
                     "seconds": round(time.perf_counter() - t, 1)})
    for run in runs:
        run["best_on_dev_per_family"] = best_per_family(run["result"])
    first = runs[0]
    best = first["best_on_dev_per_family"]
    chosen = f"min_count={NEIGHBOUR_MIN_COUNT}"
    agrees = first["choice_on_dev"]["chosen"] == chosen

    data = {"context": ctx, "high": HIGH, "rules": [rule_name(r) for r in RULES],
            "default_min_count": NEIGHBOUR_MIN_COUNT, "default_is_the_dev_choice": agrees,
            "best_on_dev_per_family": best, "runs": runs}
    summary = []
    for run in runs:
        parts = []
        for name, row in run["result"].items():
            c, r = row["test"]["cosine"], row["test"][chosen]
            parts.append(f"{name} MRR {c['mrr']:.4f} -> {r['mrr']:.4f}, recall@10 {c['recall@10']:.3f} -> "
                         f"{r['recall@10']:.3f}, recall@50 {c['recall@50']:.3f} -> {r['recall@50']:.3f}")
        summary.append(f"- **{run['label']}** (dev choice: {run['choice_on_dev']['chosen']}): " + "; ".join(parts))
    choice = first["choice_on_dev"]
    check_rows = [[rule, f"{c['dev_mrr_mean']:.4f}", f"{c['diff_from_best']:+.4f}",
                   f"[{c['ci95'][0]:+.4f}, {c['ci95'][1]:+.4f}]"] for rule, c in choice["checked"].items()]
    lines = [
        "# Nearest words a user can read: plain cosine against a minimum count",
        f"`Model.most_similar` and `scbow-numba neighbors` rank by plain cosine, but now only among the words "
        f"seen at least **{NEIGHBOUR_MIN_COUNT}** times in the training corpus (`min_count={NEIGHBOUR_MIN_COUNT}`, "
        "`--min-count`; a word with no recorded count, 0, is always a candidate; `0` gives the plain ranking). "
        "Plain cosine against it on the **test halves** (not used for the choice):",
        "\n".join(summary),
        f"Queries: every pair of a set rated at least {HIGH:g} of 10 whose two words are distinct and in the "
        "model's vocabulary, asked both ways (b among a's neighbours, a among b's), against the whole "
        "vocabulary; the query word is never a candidate. Each set is cut into a dev and a test half by a "
        "BLAKE2b hash of the pair (`half_of`). MRR: mean of 1/rank (0 when the rule leaves the word out); "
        "recall@k: the share found among the first k; the intervals are paired bootstraps over the rated "
        f"pairs ({args.resamples:,} resamples). The median count of the top 10: of the ten words a user reads, "
        "over the queries. Siamese CBOW's word rows are weak at word similarity (see quality.md), so every "
        "MRR here is small; what matters is the ratio.",
        "## The choice (dev halves only)",
        f"Model: {first['label']}. The dev MRR keeps rising with the minimum count up to "
        f"{choice['best']} (the rated words are everyday words, so removing rare words mostly helps), while "
        "every word below the count vanishes from every answer. The default is therefore the smallest minimum "
        "count whose paired bootstrap interval of (its dev MRR - the best's, mean of the two sets) reaches 0: "
        f"**{choice['chosen']}**. The same rule on the other models' dev halves: "
        + ", ".join(f"{r['label']}: {r['choice_on_dev']['chosen']}" for r in runs[1:]) + ". "
        + ("" if agrees else f"(The constant in scbow/vectors/model.py, {NEIGHBOUR_MIN_COUNT}, is NOT this "
                             "run's choice.) ")
        + "Other families, best on the same dev halves: " + ", ".join(
            f"{r} ({mean_dev_mrr(first['result'], r):.4f})" for k, r in best.items() if k != "cosine")
        + ". A minimum count was kept: the cosines printed stay plain cosines, it is gensim's restrict_vocab "
          "by count, and it is one number a user can reason about.",
        md_table(["minimum count", "dev MRR (mean of the sets)", "minus the best", "95% CI"], check_rows),
        "Rules: `min_count=C` (candidates seen at least C times), `log_bonus=L` (rank by cosine + L ln count), "
        "`shrink=K` (rank by cosine x count / (count + K)).",
        "Caveats. The dev halves are small (a few hundred queries), so the choice is not sharp: the interval of "
        "the chosen count only just reaches 0, a neighbouring count's may not, and on 100M the shrinkage "
        "family's best scored above the best minimum count on dev (not tested for significance). The metric "
        "rewards removing rare words as long as the rated words are frequent ones; it cannot see a good rare "
        "neighbour lost (on 10M, *king* loses liege, seen 52 times), which is why the smallest count within the "
        "noise was taken rather than the best. word2vec's rows are not crowded by rare words in the same way "
        "(its neighbours of the probe words barely change), and gains less. At the commit this was written, "
        "`scbow-numba train` on 100M with the defaults stops with \"the word vectors collapsed\" on this "
        "machine (its check reads the rows before post-processing: 44 of 300 directions; 0.82 of them after); "
        "the 100M model here was trained by `scbow.training.trainer.train` with every default and that check "
        "disabled. The word2vec model is gensim's CBOW with the quality suite's settings on its 10M token file.",
    ]
    for run in runs:
        lines += section(run, chosen)
    lines.append(context_markdown(ctx))
    write_report(args.out, data, "\n\n".join(lines), echo=True)


if __name__ == "__main__":
    main()
