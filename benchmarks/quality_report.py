"""The quality suite's report: its JSON record rendered as Markdown (benchmarks/results/quality.md)."""

from __future__ import annotations

import numpy as np

from .common import context_markdown, md_table


def _f(x, digits=4) -> str:
    if x is None or not np.isfinite(x):
        return "-"
    return f"{x:.{digits}f}"


def _yes(met: bool) -> str:
    return "yes" if met else "**no**"


def markdown(result: dict) -> str:
    from .quality import (  # the suite's own tables and helpers
        BOOTSTRAP_RESAMPLES,
        LABELS,
        PAPER_SOURCE,
        SYSTEMS,
        TRAINED,
        _load,
    )

    corpus, systems, goal = result["corpus"], result["systems"], result["goal"]
    names = [s for s in SYSTEMS if s in systems]
    parts = [f"# Quality: Siamese CBOW against what a user would do instead, {corpus['label']}"]
    st = corpus["stats"]
    parts.append(
        f"Every system learns from **{corpus['label']}** ({st['raw_tokens']:,} tokens from scbow's tokenizer, "
        f"{st['sentences']:,} sentences in {st['documents']:,} books, a vocabulary of {st['vocab_size']:,} words with "
        f"min count {st['min_count']}) and is scored on the paper's SemEval STS sets that we have (19 of its 20; 2013 "
        "SMT is LDC-only) with the same tokenizer: the cosine of two sentence vectors, Pearson's r per set. A pair a "
        "system cannot score (a side with nothing to average) gets that system's mean cosine on the set. Every peer "
        "gets the best of the post-processing available to it, chosen on the STS-B dev set (never on these test "
        "sets): the plain average, SIF (frequency weights a/(a+p(w)), a = 1e-3, first singular direction removed) "
        "or this project's (centre, 10 principal directions removed), each estimated on 100,000 corpus sentences, "
        "with words outside the vocabulary left out or hashed (fastText: its subword vectors). The section "
        "\"Every variant\" shows them all.")
    if result.get("scbow_overrides"):
        parts.append("**Siamese CBOW here is not the project defaults:** " + ", ".join(
            f"`{k}={v}`" for k, v in result["scbow_overrides"].items()) + " (`--scbow-config`).")
    if result.get("missing"):
        parts.append("**Incomplete report:** not yet trained on this corpus: "
                     + ", ".join(LABELS[m] for m in result["missing"]) + ".")

    if goal.get("evaluated"):
        rows = []
        for o, c in goal["wins"].items():
            chosen = systems[o]["chosen"]
            rows.append((f"sets where Siamese CBOW beats {LABELS[o]} ({chosen})", f"{c['wins']} of {c['of']}",
                         f">= {c['required']}", _yes(c["met"])))
        mp = goal["mean_pearson"]
        rows.append(("mean Pearson over the 19 sets", _f(mp["value"]), f">= {mp['required']}", _yes(mp["met"])))
        if "curve_gain" in goal:
            cg = goal["curve_gain"]
            rows.append(("STS-B dev: trained minus its untrained start (same post-processing and weighting)",
                         f"{cg['value']:+.4f} ({_f(cg['start'])} -> {_f(cg['end'])})", f">= +{cg['required']}",
                         _yes(cg["met"])))
        for name, c in goal.get("word_similarity", {}).items():
            rows.append((f"{name} Spearman: w2v CBOW minus Siamese CBOW", f"{c['gap']:+.4f} "
                         f"({_f(c['cbow'])} vs {_f(c['scbow'])})", f"<= {c['required_gap_at_most']}", _yes(c["met"])))
        ts = goal["train_seconds"]
        rows.append(("Siamese CBOW training, encoded corpus to saved model (wall s; learning curve excluded)",
                     f"{_f(ts['value'], 0)} s ({_f(ts['cpu_seconds'], 0)} CPU s)", f"<= {ts['required']} s",
                     _yes(ts["met"])))
        verdict = ("met" if goal["met"] else "**not met**") + ("" if goal["complete"] else " (peers missing)")
        parts.append(f"## Goal: {verdict}\n\nSiamese CBOW with its default settings, trained on gutenberg-100M in at "
                     "most 15 minutes on the 2-core machine." + (
                         "" if corpus["label"] == "100M" else f" *This run is on {corpus['label']}, not 100M.*")
                     + "\n\n" + md_table(("criterion", "result", "goal", "met"), rows))

    # per set
    head = ["set", "pairs"] + [LABELS[n] for n in names]
    rows = []
    n_sets = len(systems[names[0]]["sets"])
    best = {n: 0 for n in names}
    for k in range(n_sets):
        cells = [systems[names[0]]["sets"][k]["name"], str(systems[names[0]]["sets"][k]["pairs"])]
        vals = {n: systems[n]["sets"][k]["pearson"] for n in names}
        top = max(vals.values())
        for n in names:
            e = systems[n]["sets"][k]
            cell = f"{_f(e['pearson'])} ({_f(e['spearman'])})"
            if vals[n] == top:
                cell = f"**{_f(e['pearson'])}** ({_f(e['spearman'])})"
                best[n] += 1
            if e["scored"] != e["pairs"]:
                cell += f" [{e['scored']}]"
            cells.append(cell)
        rows.append(cells)
    rows.append(["**mean**", ""] + [f"{_f(systems[n]['test_pearson_mean'])} ({_f(systems[n]['test_spearman_mean'])})"
                                    for n in names])
    rows.append(["weighted mean", ""] + [_f(systems[n]["test_pearson_weighted"]) for n in names])
    rows.append(["STS-B dev", ""] + [_f(systems[n]["dev_pearson"]) for n in names])
    rows.append(["best on (sets)", ""] + [str(best[n]) for n in names])
    rows.append(["sentence vectors", ""] + [systems[n]["chosen"] for n in names])
    parts.append("## Results\n\nPearson's r (Spearman's r) per set; the highest Pearson per set in bold. [n]: pairs "
                 "with both sides embedded, when not all (the others get the system's mean cosine). With more "
                 "than one thread every trainer here is lock-free, so runs differ slightly.\n\n" + md_table(head, rows))

    if result["pairwise"]:
        prow = []
        for o, p in result["pairwise"].items():
            prow.append((LABELS[o], f"{p['wins']} / {p['losses']}", f"{p['significant_wins']} / {p['significant_losses']}",
                         f"{p['mean_pearson_diff']:+.4f}"))
        parts.append("## Siamese CBOW against each system\n\nwins / losses: sets where Siamese CBOW's Pearson is "
                     "higher / lower. significant: the paired-bootstrap 95% interval of the Pearson difference "
                     f"({BOOTSTRAP_RESAMPLES} resamples of pairs, seed 0) excludes 0.\n\n"
                     + md_table(("against", "wins / losses", "significant wins / losses", "mean Pearson difference"), prow))

    vrows = []
    for n in names:
        for label, v in systems[n]["variants"].items():
            mark = " (chosen)" if label == systems[n]["chosen"] and len(systems[n]["variants"]) > 1 else ""
            vrows.append((LABELS[n], label + mark, _f(v["dev_pearson"]), _f(v["test_pearson_mean"]),
                          _f(v["test_pearson_weighted"])))
    parts.append("## Every variant\n\nEach system's sentence vectors under every post-processing it may use; the one "
                 "with the best STS-B dev Pearson is the one above. Siamese CBOW's model is a plain average of its "
                 "rows: its frequency weights and post-processing are in the saved vectors, and it hashes unknown "
                 "words by its own rule.\n\n"
                 + md_table(("system", "sentence vectors", "STS-B dev", "test mean", "test weighted mean"), vrows))

    curve = result.get("curve")
    if curve:
        crow = [(f"{p['examples']:,}", _f(p["fraction"], 3), _f(p.get("loss")), _f(p["dev"]["pearson"]),
                 _f(p["dev_raw"]["pearson"])) for p in curve["points"]]
        parts.append("## Learning curve (STS-B dev)\n\nThe training run above, scored every "
                     f"{curve['every']:,} examples from its untrained start, with the post-processing the saved "
                     "model gets (estimated on 20,000 corpus sentences within the run, the 100,000 of the saved model "
                     "at the end) and the model's unknown-word rule; raw: the vectors as trained.\n\n"
                     + md_table(("examples", "fraction", "loss", "dev Pearson", "dev Pearson, raw"), crow))

    ws = result.get("word_similarity")
    if ws:
        have = next(iter(ws.values()))["spearman"]
        wnames = [n for n in ("scbow", "cbow", "skipgram", "fasttext", "sent2vec", "overlap") if n in have]
        wrows = [(name, f"{row['covered']} of {row['pairs']}") + tuple(_f(row["spearman"][n]) for n in wnames)
                 for name, row in ws.items()]
        nb = result.get("neighbours", {})
        nrows = []
        for w in next(iter(nb.values()), {}):
            nrows.append((w,) + tuple(", ".join(x for x, _ in nb[n].get(w, [])) for n in wnames if n in nb))
        parts.append("## Word similarity\n\nSpearman's rho between the cosine of two words' vectors and the human "
                     "scores, on the pairs whose words are both in the corpus's vocabulary (the same pairs for every "
                     "system). Data: `benchmarks/data/` (sources there).\n\n"
                     + md_table(("set", "pairs covered") + tuple(LABELS[n] for n in wnames), wrows)
                     + "\n\nNearest words (cosine):\n\n" + md_table(("word",) + tuple(LABELS[n] for n in wnames if n in nb),
                                                                    nrows))

    paper = result["paper"]["table"]
    pcols = [("scbow", "Siamese CBOW"), ("cbow", "w2v CBOW"), ("skipgram", "w2v skip-gram")]
    head = ["set"]
    for key, label in pcols:
        if key in systems:
            head.append(f"{label}, ours")
        head.append(f"{label}, paper")
    rows = []
    for k in range(n_sets):
        name = systems[names[0]]["sets"][k]["name"]
        ref = paper.get(name, {})
        cells = [name]
        for key, _ in pcols:
            if key in systems:
                e = systems[key]["sets"][k]
                cells.append(f"{_f(e['pearson'])} ({_f(e['spearman'])})")
            r = ref.get(key)
            cells.append("-" if r is None else f"{_f(r['pearson'])} ({_f(r['spearman'])})" + (" †" if r["dagger"] else ""))
        rows.append(cells)
    pm = result["paper"]["means"]
    cells = ["**mean (19 sets)**"]
    for key, _ in pcols:
        if key in systems:
            cells.append(_f(systems[key]["test_pearson_mean"]))
        cells.append(f"{_f(pm[key]['pearson_mean_19'])} ({_f(pm[key]['spearman_mean_19'])})")
    rows.append(cells)
    parts.append("## Beside the paper's Table 1 (Toronto Book Corpus)\n\n"
                 f"Source: {PAPER_SOURCE}. The paper trained on ~1B tokens of the Toronto Book Corpus (ours: "
                 f"{st['raw_tokens'] / 1e6:.0f}M tokens of Gutenberg books) and averaged raw word2vec vectors; its † "
                 "marks are its Wilcoxon test against its word2vec CBOW. Its 2015 figures are far below what averaged "
                 "embeddings usually reach there: compare 2015 with care.\n\n" + md_table(head, rows))

    timings = result["timings"]
    trow = []
    enc = timings.get("encode", {})
    if enc:
        trow.append(("corpus encoding (once per corpus, shared)", _f(enc.get("wall_seconds"), 1),
                     _f(enc.get("cpu_seconds"), 1), _load(enc), enc.get("finished_utc", "-")))
    for n in TRAINED:
        t = timings.get(n)
        if t:
            when = t.get("finished_utc", "-")
            if t.get("git", {}).get("commit"):
                when += f", commit {t['git']['commit'][:10]}" + (" (dirty)" if t["git"].get("dirty") else "")
            trow.append((f"{LABELS[n]} training", _f(t["wall_seconds"], 1), _f(t["cpu_seconds"], 1), _load(t), when))
    parts.append("## Training times\n\nwall: elapsed seconds (Siamese CBOW: without the learning curve's evaluations, "
                 "which are reported apart); CPU: seconds of CPU of the process, all threads; load: 1-minute load "
                 "average before -> after (mean during). The machine has 2 cores; a load above the run's threads "
                 "means competing work.\n\n" + md_table(("step", "wall s", "CPU s", "load", "finished (UTC)"), trow))
    srow = [(LABELS[n], ", ".join(f"{k}={v}" for k, v in result["settings"][n].items())) for n in names]
    parts.append("## Settings\n\n" + md_table(("system", "settings"), srow) + "\n\nSiamese CBOW: `TrainConfig()` "
                 "defaults (chosen on the STS-B dev set; `benchmarks/results/search.md`), the thread count set here. "
                 "word2vec: gensim's `Word2Vec` with the paper's settings (§3.2) and the word2vec C tool's learning "
                 "rates; fastText: its `cbow` with its defaults at the same size, window, min count, negatives and "
                 "epochs; Sent2Vec: epfml/sent2vec built from source, with the settings that won its own search on "
                 "STS-B dev (below). gensim, fastText and Sent2Vec read the same token stream Siamese CBOW trains on (the "
                 "kept tokens of scbow's encoding, one sentence per line), so all have the same vocabulary.")
    searches = result.get("sent2vec_search") or []
    if isinstance(searches, dict):  # a report written before the 100M round
        searches = [{**searches, "report": "benchmarks/results/sent2vec_search.md"}]
    for search in searches:
        srows = []
        for name, r in search["candidates"].items():
            diff = {k: v for k, v in r["settings"].items()
                    if k not in ("trainer", "thread") and search["paper_settings"].get(k) != v}
            srows.append(((f"**{name}**" if name == search["winner"] else name),
                          ", ".join(f"{k}={v}" for k, v in diff.items()) or "-", r["chosen"], _f(r["dev_pearson"]),
                          _f(r["test_pearson_mean"])))
        used = "the winner's" if search.get("used_winner") else "**not the winner's** (see the settings above)"
        label = search["corpus"]["label"]
        parts.append(f"### Sent2Vec's own search on {label}\n\nCandidates trained on {label} and scored "
                     "under every sentence-vector variant; the winner (bold) has the best STS-B dev Pearson (test "
                     f"means shown, never used). The Sent2Vec column above uses {used} settings. Report: "
                     f"`{search['report']}`.\n\n"
                     + md_table(("candidate", "differs from the paper's settings", "best variant on dev", "STS-B dev",
                                 "test mean"), srows))
    parts.append(f"Regenerate: `{result['regenerate']}` (trains only what is not cached; `--systems S --force` "
                 "retrains S).")
    parts.append(context_markdown(result["context"]))
    return "\n\n".join(parts)
