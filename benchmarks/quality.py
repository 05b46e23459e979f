"""Quality on the paper's SemEval STS sets: Siamese CBOW against word2vec and a word-overlap control.

    python -m benchmarks.quality                          # gutenberg-100M, 2 threads, every system
    python -m benchmarks.quality --corpus 1M              # a quick end-to-end check
    python -m benchmarks.quality --systems scbow --force  # retrain Siamese CBOW only, keep the cached peers

The table of the paper's Table 1 (Kenter et al. 2016), on one corpus and one tokenizer:

* ``scbow``: Siamese CBOW with the project defaults (``TrainConfig()``; ``--threads`` threads);
* ``cbow`` / ``skipgram``: gensim word2vec with the paper's settings (300 dims, window 5,
  min count 5, sample 1e-5, negative 5, no hierarchical softmax, 5 epochs) and the
  learning rates of the word2vec C tool the paper used (0.05 CBOW, 0.025 skip-gram,
  decaying to 1/10,000 of that), trained on exactly the tokens Siamese CBOW trains on;
  a sentence is the average of its word vectors;
* ``overlap``: the untrained word-overlap control (:class:`scbow.evaluate.OverlapControl`,
  the same as ``scbow-numba evaluate --control overlap``): every token, known or not.

The corpus is tokenized once, by scbow's encoder (``scbow.corpus.load_corpus``, cached like
``scbow-numba train`` caches it); gensim reads the kept tokens of that encoding from a
space-joined text file (one sentence per line) in ``benchmarks/.work/quality/``. Words outside
the min-count-5 vocabulary are left out of a sentence average for the trained systems (the
paper's rule), and a pair with a side without any known word is not scored.

Trained vectors are cached in ``benchmarks/.work/quality/<system>-<corpus>-<key>/`` (an
scbow model directory), the key a hash of the corpus encoding (files, size, mtime,
tokenizer version, min count) and every training setting, so a re-run trains only the
systems whose settings changed. ``--systems`` names the systems this run may train (when
not cached, or always with ``--force``); every other system is taken from the cache when
it is there, and the report is written from everything cached. Each training records wall
seconds, process CPU seconds (all threads; children added) and the load average before
and after, because the machine may be shared.

Nothing here is chosen on the test sets: the systems are trained with fixed settings
(project defaults chosen on the STS-B dev set; the paper's word2vec settings) and only
evaluated on them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

from scbow.config import TrainConfig
from scbow.corpus import cache_key, default_cache_dir, expand_inputs, load_corpus
from scbow.evaluate import (
    SIGNIFICANCE_LEVEL,
    OverlapControl,
    bootstrap_pearson_diff,
    read_sts,
    score_set,
    summarize,
    wilcoxon_test,
)

from .common import CORPORA, REPO_ROOT, context, context_markdown, corpus_path, data_dir, md_table, write_report

SYSTEMS = ("scbow", "cbow", "skipgram", "overlap")
LABELS = {"scbow": "Siamese CBOW", "cbow": "w2v CBOW", "skipgram": "w2v skip-gram", "overlap": "word overlap"}
BASELINE = "cbow"  # the Wilcoxon marks are against word2vec CBOW, as in the paper
WORK = REPO_ROOT / "benchmarks" / ".work" / "quality"

# The paper's word2vec settings (§3.2): "minimum word frequency 5, word embedding size 300,
# context window 5, sample threshold 1e-5, no hierarchical softmax, 5 negative examples",
# with the C tool's 5 iterations. Learning rates: the C tool's defaults per architecture.
W2V_SETTINGS = {"vector_size": 300, "window": 5, "min_count": 5, "sample": 1e-5, "negative": 5, "hs": 0,
                "epochs": 5, "cbow_mean": 1}
W2V_ALPHA = {"cbow": 0.05, "skipgram": 0.025}
W2V_MIN_ALPHA_FRACTION = 1e-4  # word2vec.c: alpha never drops below starting_alpha * 0.0001
W2V_SEED = 1
OVERLAP_DIM = 300
BOOTSTRAP_RESAMPLES = 1000

# The goal for Siamese CBOW with its defaults on gutenberg-100M.
GOAL_MIN_WINS = 14  # of the 19 sets, against each of overlap, w2v CBOW and w2v skip-gram
GOAL_MEAN_PEARSON = 0.55
GOAL_TRAIN_SECONDS = 15 * 60

# Kenter, Borisov and de Rijke (ACL 2016), Table 1: Pearson's r (Spearman's r) on the SemEval
# sets, every system trained on the Toronto Book Corpus; "†": Siamese CBOW significantly
# different from word2vec CBOW (Wilcoxon, p < 0.0001). Transcribed from the paper's text
# (../shared/papers/siamese-cbow-kenter2016.txt, Table 1), columns in the paper's order.
# 2013 SMT (LDC only) is not among our 19 sets; it is kept here for the paper's own means.
PAPER_COLUMNS = ("skipgram", "cbow", "skip-thought", "scbow")
PAPER_TABLE1 = """
2012.MSRpar           .3740 (.3991)  .3419 (.3521)  .0560 (.0843)  .4379† (.4311)
2012.MSRvid           .5213 (.5519)  .5099 (.5450)  .5807 (.5829)  .4522† (.4759)
2012.OnWN             .6040 (.6476)  .6320 (.6440)  .6045 (.6431)  .6444† (.6475)
2012.SMTeuroparl      .3071 (.5238)  .3976 (.5310)  .4203 (.4999)  .4503† (.5449)
2012.SMTnews          .4487 (.3617)  .4462 (.3901)  .3911 (.3628)  .3902† (.4153)
2013.FNWN             .3480 (.3401)  .2736 (.2867)  .3124 (.3511)  .2322† (.2235)
2013.OnWN             .4745 (.5509)  .5165 (.6008)  .2418 (.2766)  .4985† (.5227)
2013.SMT              .1838 (.2843)  .2494 (.2919)  .3378 (.3498)  .3312† (.3356)
2013.headlines        .5935 (.6044)  .5730 (.5766)  .3861 (.3909)  .6534† (.6516)
2014.OnWN             .5848 (.6676)  .6068 (.6887)  .4682 (.5161)  .6073† (.6554)
2014.deft-forum       .3193 (.3810)  .3339 (.3507)  .3736 (.3737)  .4082† (.4188)
2014.deft-news        .5906 (.5678)  .5737 (.5577)  .4617 (.4762)  .5913† (.5754)
2014.headlines        .5790 (.5544)  .5455 (.5095)  .4031 (.3910)  .6364† (.6260)
2014.images           .5131 (.5288)  .5056 (.5213)  .4257 (.4233)  .6497† (.6484)
2014.tweet-news       .6336 (.6544)  .6897 (.6615)  .5138 (.5297)  .7315† (.7128)
2015.answers-forums   .1892 (.1463)  .1767 (.1294)  .2784 (.1909)  .2181 (.1469)
2015.answers-students .3233 (.2654)  .3344 (.2742)  .2661 (.2068)  .3671† (.2824)
2015.belief           .2435 (.2635)  .3277 (.3280)  .4584 (.3368)  .4769 (.3184)
2015.headlines        .1875 (.0754)  .1806 (.0765)  .1248 (.0464)  .2151† (.0846)
2015.images           .2454 (.1611)  .2292 (.1438)  .2100 (.1220)  .2560† (.1467)
"""
PAPER_SOURCE = ("Kenter, Borisov and de Rijke, Siamese CBOW (ACL 2016), Table 1, trained on the Toronto Book "
                "Corpus (74M sentences, 1.06B tokens); transcribed from ../shared/papers/siamese-cbow-kenter2016.txt")


def paper_table() -> dict:
    """set -> column -> {"pearson", "spearman", "dagger"} from :data:`PAPER_TABLE1`."""
    out = {}
    for line in PAPER_TABLE1.strip().splitlines():
        name, rest = line.split(None, 1)
        cells = rest.replace(" (", "(").split()
        assert len(cells) == len(PAPER_COLUMNS), line
        row = {}
        for column, cell in zip(PAPER_COLUMNS, cells):
            p, s = cell.rstrip(")").split("(")
            row[column] = {"pearson": float(p.rstrip("†")), "spearman": float(s), "dagger": p.endswith("†")}
        out[name] = row
    return out


# ---------------------------------------------------------------------------------------
# measuring


class Meter:
    """Wall seconds, CPU seconds of this process (every thread) plus its children, load averages.

    The 1-minute load average is read before, after and every ``LOAD_SAMPLE_SECONDS`` during
    the block (by a daemon thread), so a long run reports the load it actually shared the
    machine with.
    """

    LOAD_SAMPLE_SECONDS = 15.0

    def __enter__(self):
        import threading

        self.load_before = [round(x, 2) for x in os.getloadavg()]
        self.samples = [self.load_before[0]]
        self._stop = threading.Event()

        def sample():
            while not self._stop.wait(self.LOAD_SAMPLE_SECONDS):
                self.samples.append(os.getloadavg()[0])

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        self.wall0 = time.perf_counter()
        self.cpu0 = time.process_time()
        self.child0 = _children_cpu()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall0
        self.cpu = time.process_time() - self.cpu0 + _children_cpu() - self.child0
        self._stop.set()
        self._thread.join()
        self.load_after = [round(x, 2) for x in os.getloadavg()]
        self.samples.append(self.load_after[0])
        return False

    def to_dict(self) -> dict:
        return {"wall_seconds": round(self.wall, 1), "cpu_seconds": round(self.cpu, 1),
                "cpu_per_wall": round(self.cpu / self.wall, 2) if self.wall > 0 else None,
                "load_before_1_5_15": self.load_before, "load_after_1_5_15": self.load_after,
                "load_1min_mean_during": round(float(np.mean(self.samples)), 2),
                "load_1min_max_during": round(float(np.max(self.samples)), 2),
                "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def log(message: str) -> None:
    print(f"[quality {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# corpus


def resolve_corpus(arg: str) -> tuple[str, Path]:
    """(label, path) of ``--corpus``: a name of benchmarks.common.CORPORA or a path."""
    if arg in CORPORA:
        return arg, corpus_path(arg)
    path = Path(arg)
    if not path.is_file():
        sys.exit(f"--corpus {arg}: not one of {', '.join(CORPORA)} and no such file")
    label = path.name
    for name, rel in CORPORA.items():
        if path.resolve() == (data_dir() / rel).resolve():
            label = name
    return label, path


def encode_corpus(path: Path, min_count: int) -> tuple[object, str, dict]:
    """The scbow encoding of ``path`` (from scbow's corpus cache when there), its key, its timing."""
    files = expand_inputs([path])
    key = cache_key(files, min_count, 0)
    cached = (default_cache_dir() / key / "meta.json").is_file()
    timing_path = WORK / f"encode-{key}.json"
    with Meter() as m:
        corpus = load_corpus([path], min_count, 0)
    if cached:
        timing = json.loads(timing_path.read_text()) if timing_path.is_file() else {}
        timing["reloaded_this_run"] = True
        timing["reload_seconds"] = round(m.wall, 2)
    else:
        timing = {**m.to_dict(), "reloaded_this_run": False}
        WORK.mkdir(parents=True, exist_ok=True)
        timing_path.write_text(json.dumps(timing, indent=1) + "\n")
    return corpus, key, timing


def token_file(corpus, key: str) -> tuple[Path, dict]:
    """The corpus's kept tokens as text, one sentence per line (what gensim trains on).

    The same token ids Siamese CBOW trains on, written back as words: every word of the
    min-count vocabulary, in corpus order; sentences without a known word are already gone.
    """
    path = WORK / f"tokens-{key}.txt"
    timing_path = WORK / f"tokens-{key}.json"
    if path.is_file() and timing_path.is_file():
        return path, json.loads(timing_path.read_text())
    WORK.mkdir(parents=True, exist_ok=True)
    words = np.array(corpus.vocab.words, dtype=object)
    offsets = np.asarray(corpus.offsets)
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    log(f"writing {corpus.stats['tokens']:,} tokens to {path}")
    with Meter() as m:
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            step = 200_000  # sentences per block
            for s0 in range(0, corpus.n_sentences, step):
                s1 = min(s0 + step, corpus.n_sentences)
                lo, hi = int(offsets[s0]), int(offsets[s1])
                out = np.empty(2 * (hi - lo), dtype=object)
                out[0::2] = words[np.asarray(corpus.tokens[lo:hi])]
                seps = np.full(hi - lo, " ", dtype=object)
                seps[offsets[s0 + 1 : s1 + 1] - lo - 1] = "\n"
                out[1::2] = seps
                fh.write("".join(out.tolist()))
        os.replace(tmp, path)
    timing = {**m.to_dict(), "bytes": path.stat().st_size}
    timing_path.write_text(json.dumps(timing, indent=1) + "\n")
    return path, timing


# ---------------------------------------------------------------------------------------
# systems: settings, cache, training


def settings_of(system: str, threads: int, scbow_overrides: dict | None = None) -> dict:
    if system == "scbow":
        return {"trainer": "scbow", **TrainConfig(**{**(scbow_overrides or {}), "threads": threads}).to_dict()}
    if system in W2V_ALPHA:
        alpha = W2V_ALPHA[system]
        import gensim

        return {"trainer": f"gensim {gensim.__version__} Word2Vec", "sg": int(system == "skipgram"), **W2V_SETTINGS,
                "alpha": alpha, "min_alpha": alpha * W2V_MIN_ALPHA_FRACTION, "seed": W2V_SEED, "workers": threads}
    if system == "overlap":
        return {"trainer": "none (untrained)", "dim": OVERLAP_DIM, "vectors": "standard normal per token, seeded "
                "by BLAKE2b of the token", "tokens": "every token, known or not"}
    raise ValueError(system)


def model_dir(system: str, corpus_label: str, corpus_key: str, settings: dict) -> Path:
    blob = json.dumps({"system": system, "corpus": corpus_key, "settings": settings}, sort_keys=True)
    return WORK / f"{system}-{corpus_label}-{hashlib.sha256(blob.encode()).hexdigest()[:16]}"


def training_code_hash() -> str:
    """Hash of the files that decide what Siamese CBOW learns (recorded, not part of the key)."""
    h = hashlib.sha256()
    for rel in ("scbow/trainer.py", "scbow/kernels/cpu.py", "scbow/config.py"):
        p = REPO_ROOT / rel
        h.update(p.read_bytes() if p.is_file() else b"")
    return h.hexdigest()[:16]


def provenance() -> dict:
    ctx = context()
    return {"git": ctx["git"], "versions": ctx["versions"], "training_code_hash": training_code_hash()}


def train_scbow(corpus, settings: dict):
    from scbow.trainer import train

    config = TrainConfig.from_dict({k: v for k, v in settings.items() if k != "trainer"})
    log(f"training Siamese CBOW: {json.dumps(config.to_dict())}")
    with Meter() as m:
        result = train(corpus, config, quiet=not sys.stderr.isatty())
    model = result.model
    model.info["benchmark"] = {**m.to_dict(), "kernel_seconds": round(result.seconds, 1),
                               "examples": result.examples, **provenance()}
    return model


def train_word2vec(system: str, tokens_path: Path, settings: dict):
    from gensim.models import Word2Vec

    from scbow.model import Model
    from scbow.vocab import Vocab

    s = dict(settings)
    log(f"training word2vec {system} with gensim: {json.dumps(s)}")
    with Meter() as m:
        w2v = Word2Vec(sg=s["sg"], vector_size=s["vector_size"], window=s["window"], min_count=s["min_count"],
                       sample=s["sample"], negative=s["negative"], hs=s["hs"], cbow_mean=s["cbow_mean"],
                       alpha=s["alpha"], min_alpha=s["min_alpha"], seed=s["seed"], workers=s["workers"],
                       epochs=s["epochs"])
        w2v.build_vocab(corpus_file=str(tokens_path))
        w2v.train(corpus_file=str(tokens_path), total_words=w2v.corpus_total_words, total_examples=w2v.corpus_count,
                  epochs=s["epochs"], report_delay=60)
    wv = w2v.wv
    trained = [e.get("msg", "") for e in getattr(w2v, "lifecycle_events", []) or []
               if str(e.get("msg", "")).startswith("training on")]
    words = list(wv.index_to_key)
    counts = [int(wv.get_vecattr(w, "count")) for w in words]
    model = Model(Vocab(words, counts), np.ascontiguousarray(wv.vectors, dtype=np.float32), settings,
                  {"benchmark": {**m.to_dict(), "corpus_words": int(w2v.corpus_total_words),
                                 "corpus_sentences": int(w2v.corpus_count),
                                 "gensim_training_summary": trained[-1] if trained else None, **provenance()}})
    return model


def load_cached(path: Path):
    from scbow.formats import load_model

    if (path / "config.json").is_file():
        try:
            return load_model(path)
        except Exception as exc:  # a damaged cache entry: retrain or leave out
            log(f"ignoring damaged cache {path}: {exc}")
    return None


# ---------------------------------------------------------------------------------------
# evaluation


def omit_unknown(model):
    """``model.embed`` with unknown words left out (the paper's rule), whatever the library's default."""
    import functools
    import inspect

    if "unknown" in inspect.signature(model.embed).parameters:
        return functools.partial(model.embed, unknown="omit")
    return model.embed


def sts_sets() -> list:
    files = sorted((data_dir() / "sts").glob("*.tsv"))
    if not files:
        sys.exit(f"no STS sets in {data_dir() / 'sts'}")
    return [read_sts(f) for f in files]


def evaluate(embeds: dict, sets: list) -> dict:
    """Per system per set scores; Siamese CBOW against each other system; every system against w2v CBOW."""
    scores = {name: [score_set(embed, sts) for sts in sets] for name, embed in embeds.items()}
    per_set = []
    for k, sts in enumerate(sets):
        row = {"name": sts.name, "pairs": len(sts.gold), "systems": {}}
        for name in embeds:
            sc = scores[name][k]
            entry = {"scored": sc.scored, "pearson": sc.pearson, "spearman": sc.spearman}
            if BASELINE in embeds and name != BASELINE:
                stat, p = wilcoxon_test(sc.predictions, scores[BASELINE][k].predictions)
                entry["wilcoxon_vs_cbow"] = {"statistic": stat, "p": p,
                                             "significant": bool(p is not None and p < SIGNIFICANCE_LEVEL)}
            row["systems"][name] = entry
        if "scbow" in embeds:
            row["scbow_vs"] = {}
            for other in embeds:
                if other == "scbow":
                    continue
                a, b = scores["scbow"][k].predictions, scores[other][k].predictions
                diff, low, high = bootstrap_pearson_diff(sts.gold, a, b, BOOTSTRAP_RESAMPLES, seed=0)
                row["scbow_vs"][other] = {"common": int((np.isfinite(a) & np.isfinite(b)).sum()),
                                          "pearson_diff": diff, "ci95": [low, high]}
        per_set.append(row)
    summaries = {name: summarize(scores[name]) for name in embeds}
    best_counts = {name: 0 for name in embeds}
    for row in per_set:
        vals = {n: e["pearson"] for n, e in row["systems"].items() if np.isfinite(e["pearson"])}
        if vals:
            top = max(vals.values())
            row["best"] = [n for n, v in vals.items() if v == top]
            for n in row["best"]:
                best_counts[n] += 1
    pairwise = {}
    if "scbow" in embeds:
        for other in embeds:
            if other == "scbow":
                continue
            wins = losses = sig_wins = sig_losses = 0
            for row in per_set:
                a, b = row["systems"]["scbow"]["pearson"], row["systems"][other]["pearson"]
                if not (np.isfinite(a) and np.isfinite(b)):
                    continue
                low, high = row["scbow_vs"][other]["ci95"]
                wins += a > b
                losses += a < b
                sig_wins += bool(np.isfinite(low) and low > 0)
                sig_losses += bool(np.isfinite(high) and high < 0)
            pairwise[other] = {"wins": int(wins), "losses": int(losses), "ties": len(per_set) - int(wins) - int(losses),
                               "significant_wins": int(sig_wins), "significant_losses": int(sig_losses),
                               "mean_pearson_diff": summaries["scbow"]["pearson_mean"] - summaries[other]["pearson_mean"]}
    return {"sets": per_set, "summaries": summaries, "best_counts": best_counts, "scbow_pairwise": pairwise}


def vocabulary_diagnostic(model, sets: list) -> list:
    """Per set: share of tokens outside the trained vocabulary, and the overlap control on known words only.

    The overlap control averages every token, the trained systems only known ones; scoring
    the control on the known tokens alone shows how much of its score comes from words the
    trained vocabulary does not have (names, numbers, modern words).
    """
    from scbow.tokenize import tokenize

    index = model.vocab.index
    control = OverlapControl(dim=OVERLAP_DIM)

    def known_only(sentences):
        return control.embed([" ".join(t for t in tokenize(x) if t in index) for x in sentences])

    out = []
    for sts in sets:
        tokens = [t for x in sts.first + sts.second for t in tokenize(x)]
        oov = sum(t not in index for t in tokens) / max(len(tokens), 1)
        out.append({"name": sts.name, "oov_token_rate": oov, "overlap_known_pearson": score_set(known_only, sts).pearson})
    return out


def paper_means(paper: dict, names: list) -> dict:
    out = {}
    for column in ("scbow", "cbow", "skipgram", "skip-thought"):
        ours = [paper[n][column]["pearson"] for n in names if n in paper]
        ours_s = [paper[n][column]["spearman"] for n in names if n in paper]
        all_p = [row[column]["pearson"] for row in paper.values()]
        out[column] = {"pearson_mean_19": float(np.mean(ours)), "spearman_mean_19": float(np.mean(ours_s)),
                       "pearson_mean_20": float(np.mean(all_p))}
    return out


# ---------------------------------------------------------------------------------------
# report


def _f(x, digits=4) -> str:
    if x is None or not np.isfinite(x):
        return "-"
    return f"{x:.{digits}f}"


def _goal(result: dict, timings: dict) -> dict:
    ev = result["evaluation"]
    if "scbow" not in ev["summaries"]:
        return {"evaluated": False}
    pw = ev["scbow_pairwise"]
    n_sets = len(ev["sets"])
    wins = {o: pw[o]["wins"] for o in ("overlap", "cbow", "skipgram") if o in pw}
    mean = ev["summaries"]["scbow"]["pearson_mean"]
    train_s = timings.get("scbow", {}).get("wall_seconds")
    train_cpu = timings.get("scbow", {}).get("cpu_seconds")
    threads = result["settings"]["scbow"]["threads"]
    busy = _busy(timings.get("scbow", {}), threads)
    # On a busy machine the wall time says more about the neighbours than about the trainer:
    # judge on the CPU seconds spread over the run's threads (what idle cores would take).
    idle_estimate = train_cpu / threads if train_cpu is not None else None
    judged = idle_estimate if busy else train_s
    checks = {
        "wins": {o: {"wins": w, "of": n_sets, "required": GOAL_MIN_WINS, "met": w >= GOAL_MIN_WINS}
                 for o, w in wins.items()},
        "mean_pearson": {"value": mean, "required": GOAL_MEAN_PEARSON, "met": bool(mean >= GOAL_MEAN_PEARSON)},
        "train_seconds": {"value": train_s, "required": GOAL_TRAIN_SECONDS,
                          "met": bool(judged is not None and judged <= GOAL_TRAIN_SECONDS),
                          "busy_machine": busy, "cpu_seconds": train_cpu, "threads": threads,
                          "idle_estimate_seconds": idle_estimate, "judged_on": "cpu_seconds / threads" if busy else "wall",
                          "encode_seconds": timings.get("encode", {}).get("wall_seconds")},
    }
    all_peers = len(wins) == 3
    checks["met"] = bool(all_peers and all(c["met"] for c in checks["wins"].values())
                         and checks["mean_pearson"]["met"] and checks["train_seconds"]["met"])
    checks["evaluated"] = True
    checks["complete"] = all_peers
    return checks


def markdown(result: dict) -> str:
    ev, timings, corpus = result["evaluation"], result["timings"], result["corpus"]
    names = [s for s in SYSTEMS if s in ev["summaries"]]
    paper = result["paper"]["table"]
    goal = result["goal"]
    parts = [f"# Quality: Siamese CBOW against word2vec and word overlap, {result['corpus']['label']}"]

    intro = (f"Every system is trained on **{corpus['label']}** ({corpus['stats']['raw_tokens']:,} tokens from "
             f"scbow's tokenizer, {corpus['stats']['sentences']:,} sentences in {corpus['stats']['documents']:,} "
             f"books, vocabulary of {corpus['stats']['vocab_size']:,} words with min count "
             f"{corpus['stats']['min_count']}) and scored on the paper's SemEval STS sets that we have "
             f"(19 of its 20; 2013 SMT is LDC-only), with the same tokenizer. A sentence is the average of the "
             f"vectors of its known words (unknown words omitted, the paper's rule); the overlap control averages "
             f"fixed random vectors of all its tokens. Score: cosine of the two sentence vectors.")
    parts.append(intro)
    if result.get("scbow_overrides"):
        parts.append("**Siamese CBOW here is not the project defaults:** "
                     + ", ".join(f"`{k}={v}`" for k, v in result["scbow_overrides"].items())
                     + " replace them (`--scbow-config`): a candidate setting, to be chosen on the STS-B dev set, never on "
                     "these test sets.")
    if result.get("missing"):
        parts.append("**Incomplete report:** not yet trained on this corpus: "
                     + ", ".join(LABELS[m] for m in result["missing"])
                     + ". Run `python -m benchmarks.quality --corpus " + result["corpus"]["arg"]
                     + " --systems " + ",".join(result["missing"]) + "`.")

    # goal
    if goal.get("evaluated"):
        rows = []
        for o, c in goal["wins"].items():
            rows.append((f"sets where Siamese CBOW beats {LABELS[o]} (Pearson)", f"{c['wins']} of {c['of']}",
                         f">= {c['required']}", "yes" if c["met"] else "**no**"))
        mp = goal["mean_pearson"]
        rows.append(("mean Pearson over the sets", _f(mp["value"]), f">= {mp['required']}",
                     "yes" if mp["met"] else "**no**"))
        ts = goal["train_seconds"]
        if ts.get("busy_machine"):
            result_text = (f"{_f(ts['value'], 0)} s wall on a busy machine; {_f(ts['cpu_seconds'], 0)} CPU s, "
                           f"so about {_f(ts['idle_estimate_seconds'], 0)} s on {ts['threads']} idle cores")
        else:
            result_text = f"{_f(ts['value'], 0)} s"
        rows.append(("Siamese CBOW training (encoded corpus to saved vectors)", result_text,
                     f"<= {ts['required']} s", "yes" if ts["met"] else "**no**"))
        if ts.get("encode_seconds") is not None:
            rows.append(("(once per corpus, shared by every system: tokenizing and encoding the raw text)",
                         _f(ts["encode_seconds"], 0) + " s wall", "", ""))
        verdict = ("met" if goal["met"] else "**not met**") + ("" if goal["complete"] else " (peers missing)")
        parts.append(f"## Goal (issue 3): {verdict}\n\nSiamese CBOW with its default settings, trained on "
                     f"gutenberg-100M in at most about 15 minutes on the 2-core machine, must beat each peer on "
                     f"at least {GOAL_MIN_WINS} of the 19 sets and reach a mean Pearson of at least "
                     f"{GOAL_MEAN_PEARSON}." + ("" if corpus["label"] == "100M" else
                                                f" *This run is on {corpus['label']}, not 100M.*")
                     + "\n\n" + md_table(("criterion", "result", "goal", "met"), rows))

    # table 1
    head = ["set", "pairs"] + [LABELS[n] for n in names]
    rows = []
    for row in ev["sets"]:
        cells = [row["name"], str(row["pairs"])]
        for n in names:
            e = row["systems"][n]
            cell = f"{_f(e['pearson'])} ({_f(e['spearman'])})"
            if n in row.get("best", []):
                cell = f"**{_f(e['pearson'])}** ({_f(e['spearman'])})"
            if n == "scbow" and e.get("wilcoxon_vs_cbow", {}).get("significant"):
                cell += " †"
            if e["scored"] != row["pairs"]:
                cell += f" [{e['scored']}]"
            cells.append(cell)
        rows.append(cells)
    rows.append(["**mean**", ""] + [f"{_f(ev['summaries'][n]['pearson_mean'])} ({_f(ev['summaries'][n]['spearman_mean'])})"
                                    for n in names])
    rows.append(["weighted mean", ""] + [f"{_f(ev['summaries'][n]['pearson_weighted'])} "
                                         f"({_f(ev['summaries'][n]['spearman_weighted'])})" for n in names])
    rows.append(["best on (sets)", ""] + [str(ev["best_counts"][n]) for n in names])
    parts.append(
        "## Results (the paper's Table 1 on our corpus)\n\nPearson's r (Spearman's r) per set; the highest Pearson "
        "per set in bold. † Siamese CBOW's cosines differ significantly from w2v CBOW's on that set (paired Wilcoxon "
        f"signed-rank test on the pairs both scored, p < {SIGNIFICANCE_LEVEL:g}, the paper's test and threshold: it "
        "says the systems score the pairs differently, not which is better). [n]: pairs scored when not all (a side "
        "with no known word is not scored). mean: unweighted over the sets; weighted: by pairs scored. With more "
        "than one thread Siamese CBOW and word2vec train lock-free, so runs differ slightly (two runs of the "
        "then-default Siamese CBOW on 100M on 2026-11-22: means 0.535 and 0.540, win counts one set apart).\n\n"
        + md_table(head, rows))

    # pairwise
    if ev["scbow_pairwise"]:
        prow = []
        for o, p in ev["scbow_pairwise"].items():
            prow.append((LABELS[o], f"{p['wins']} / {p['losses']}" + (f" / {p['ties']} ties" if p["ties"] else ""),
                         f"{p['significant_wins']} / {p['significant_losses']}", f"{p['mean_pearson_diff']:+.4f}"))
        parts.append("## Siamese CBOW against each system\n\nwins / losses: sets where Siamese CBOW's Pearson is "
                     "higher / lower. significant: the paired-bootstrap 95% interval of the Pearson difference "
                     f"({BOOTSTRAP_RESAMPLES} resamples of pairs, seed 0) excludes 0.\n\n"
                     + md_table(("against", "wins / losses", "significant wins / losses", "mean Pearson difference"),
                                prow))

    # vocabulary diagnostic
    if ev.get("vocabulary"):
        vrows = []
        for row, v in zip(ev["sets"], ev["vocabulary"]):
            vrows.append((row["name"], f"{100 * v['oov_token_rate']:.1f}", _f(row["systems"]["scbow"]["pearson"]),
                          _f(row["systems"]["overlap"]["pearson"]), _f(v["overlap_known_pearson"])))
        parts.append("## Where word overlap is strong: unknown words\n\nThe trained systems leave words outside "
                     "their vocabulary out of a sentence (the paper's rule); the overlap control keeps every token. "
                     "OOV: share of the set's tokens outside the vocabulary (the same for Siamese CBOW and word2vec). "
                     "The last column scores the overlap control on the known tokens only: the difference to the "
                     "column before it is what the control gains from words no trained system here can see "
                     "(in headlines and tweets modern names, places and web words that 19th-century books lack, "
                     "such as 'pakistan', 'obama', 'facebook'; misspellings in the student answers).\n\n"
                     + md_table(("set", "OOV tokens %", "Siamese CBOW", "word overlap", "word overlap, known tokens only"),
                                vrows))

    # paper
    pcols = [("scbow", "Siamese CBOW"), ("cbow", "w2v CBOW"), ("skipgram", "w2v skip-gram")]
    head = ["set"]
    for key, label in pcols:
        if key in names:
            head.append(f"{label}, ours")
        head.append(f"{label}, paper")
    rows = []
    for row in ev["sets"]:
        ref = paper.get(row["name"], {})
        cells = [row["name"]]
        for key, _ in pcols:
            if key in names:
                e = row["systems"][key]
                cells.append(f"{_f(e['pearson'])} ({_f(e['spearman'])})")
            r = ref.get(key)
            cells.append("-" if r is None else f"{_f(r['pearson'])} ({_f(r['spearman'])})" + (" †" if r["dagger"] else ""))
        rows.append(cells)
    pm = result["paper"]["means"]
    cells = ["**mean (19 sets)**"]
    for key, _ in pcols:
        if key in names:
            cells.append(f"{_f(ev['summaries'][key]['pearson_mean'])} ({_f(ev['summaries'][key]['spearman_mean'])})")
        cells.append(f"{_f(pm[key]['pearson_mean_19'])} ({_f(pm[key]['spearman_mean_19'])})")
    rows.append(cells)
    parts.append(
        "## Beside the paper's numbers (Toronto Book Corpus)\n\n"
        f"Source: {PAPER_SOURCE}. The paper trained on ~1B tokens of the Toronto Book Corpus (ours: "
        f"{corpus['stats']['raw_tokens'] / 1e6:.0f}M tokens of Gutenberg books), Siamese CBOW with 300 dims, one "
        "epoch, no weight decay and no component removal; its † marks are its Wilcoxon test against its word2vec "
        "CBOW. Its means here are over the same 19 sets (over its 20 sets: Siamese CBOW "
        f"{pm['scbow']['pearson_mean_20']:.4f}, w2v CBOW {pm['cbow']['pearson_mean_20']:.4f}, w2v skip-gram "
        f"{pm['skipgram']['pearson_mean_20']:.4f}). Its 2015 figures are far below what averaged embeddings "
        "usually reach there (see ../shared/data/README.md): compare 2015 with care.\n\n" + md_table(head, rows))

    # timings
    trow = []
    enc = timings.get("encode", {})
    if enc:
        trow.append(("corpus encoding (scbow tokenizer, counts, ids; xz included)", "-", _f(enc.get("wall_seconds"), 1),
                     _f(enc.get("cpu_seconds"), 1), _load(enc), enc.get("finished_utc", "-") +
                     ("; this run reloaded it from scbow's corpus cache" if enc.get("reloaded_this_run") else "")))
    tok = timings.get("tokens")
    if tok:
        trow.append(("token file for gensim", "-", _f(tok["wall_seconds"], 1), _f(tok["cpu_seconds"], 1), _load(tok),
                     tok.get("finished_utc", "-")))
    for n in names:
        t = timings.get(n)
        if not t:
            continue
        threads = result["settings"][n].get("threads", result["settings"][n].get("workers", "-"))
        when = t.get("finished_utc", "-")
        if t.get("git", {}).get("commit"):
            when += f", commit {t['git']['commit'][:10]}" + (" (dirty)" if t["git"].get("dirty") else "")
        if n == "scbow" and t.get("training_code_hash") and t["training_code_hash"] != result["training_code_hash"]:
            when += " (scbow's training code has changed since; `--systems scbow --force` retrains)"
        trow.append((f"{LABELS[n]} training", threads, _f(t["wall_seconds"], 1), _f(t["cpu_seconds"], 1), _load(t), when))
    busy = any(_busy(t, _threads_of(result, n)) for n, t in timings.items() if isinstance(t, dict) and "wall_seconds" in t)
    parts.append(
        "## Training times\n\nwall: elapsed seconds; CPU: seconds of CPU of the training process, all its threads "
        "(plus children); load: 1-minute load average before -> after (and its mean over samples every 15 s "
        "during the run, for runs measured since that was added). The machine has 2 cores and is shared: "
        "a load above the run's own threads means competing work, and then wall time overstates what a quiet machine "
        "takes (CPU seconds are the steadier figure)."
        + ("\n\n**Measured on a busy machine** (load above the run's own threads): treat the wall times as upper "
           "bounds." if busy else "")
        + "\n\n" + md_table(("step", "threads", "wall s", "CPU s", "load 1-min before -> after", "finished (UTC)"), trow))

    # settings
    srow = []
    for n in names:
        s = dict(result["settings"][n])
        srow.append((LABELS[n], ", ".join(f"{k}={v}" for k, v in s.items())))
    parts.append("## Settings\n\n" + md_table(("system", "settings"), srow) + "\n\n"
                 + ("Siamese CBOW: `TrainConfig()` defaults (chosen on the STS-B dev set, README \"Defaults and why\"), "
                    "only the thread count set here. " if not result.get("scbow_overrides") else
                    "Siamese CBOW: `TrainConfig()` with the overrides above and the thread count. ")
                 + "word2vec: gensim's `Word2Vec` with the paper's settings (§3.2); the "
                 "learning rates are the word2vec C tool's defaults (0.05 for CBOW, 0.025 for skip-gram, floor 1e-4 "
                 "of the start), since the paper ran that tool with its defaults. gensim trains on the same token "
                 "stream as Siamese CBOW (the kept tokens of scbow's encoding, one sentence per line), so both have "
                 "the same vocabulary (gensim reads it in `corpus_file` mode, where each worker stops at an "
                 "approximate word count, so an epoch covers slightly fewer words than the file holds: 99.8% on "
                 "100M, piskvorky/gensim#2693). Vectors are cached in "
                 "`benchmarks/.work/quality/`: " + ", ".join(f"`{Path(p).name}`" for p in result["cache_dirs"].values()) + ".")
    parts.append(f"Regenerate: `{result['regenerate']}` (trains only what is not cached; add `--force` to retrain the "
                 "systems named in `--systems`).")
    parts.append(context_markdown(result["context"]))
    return "\n\n".join(parts)


def _busy(t: dict, threads: int) -> bool:
    """A 1-minute load average above the run's own threads (+0.5): competing work.

    The mean of the samples taken during the run when there are any, else before or after.
    """
    if t.get("load_1min_mean_during") is not None:
        return t["load_1min_mean_during"] > threads + 0.5
    loads = [x[0] for x in (t.get("load_before_1_5_15"), t.get("load_after_1_5_15")) if x]
    return bool(loads) and max(loads) > threads + 0.5


def _threads_of(result, name) -> int:
    s = result["settings"].get(name, {})
    return int(s.get("threads", s.get("workers", 2)) or 2)


def _load(t: dict) -> str:
    b, a = t.get("load_before_1_5_15"), t.get("load_after_1_5_15")
    if not b or not a:
        return "-"
    during = "" if t.get("load_1min_mean_during") is None else f" (mean {t['load_1min_mean_during']} during)"
    return f"{b[0]} -> {a[0]}{during}"


# ---------------------------------------------------------------------------------------


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.quality", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--corpus", default="100M", help=f"one of {', '.join(CORPORA)} or a path")
    ap.add_argument("--threads", type=int, default=2, help="training threads (gensim workers)")
    ap.add_argument("--systems", default=",".join(SYSTEMS),
                    help="systems this run may train when not cached (the others come from the cache); "
                         "'none' trains nothing and only rewrites the report")
    ap.add_argument("--force", action="store_true", help="retrain the systems named in --systems even if cached")
    ap.add_argument("--scbow-config", default=None, metavar="JSON",
                    help="TrainConfig fields that replace Siamese CBOW's defaults, e.g. '{\"epochs\": 1}' "
                         "(for trying a candidate default; the report then says it is not the defaults)")
    ap.add_argument("--out", default="benchmarks/results/quality", help="report prefix (.json and .md)")
    args = ap.parse_args(argv)
    try:
        args.scbow_overrides = json.loads(args.scbow_config) if args.scbow_config else {}
        TrainConfig(**args.scbow_overrides)
    except (ValueError, TypeError) as exc:
        ap.error(f"--scbow-config: {exc}")
    if "threads" in args.scbow_overrides:
        ap.error("--scbow-config: set threads with --threads")
    args.systems = [] if args.systems.strip() in ("", "none") else [s.strip() for s in args.systems.split(",")]
    bad = [s for s in args.systems if s not in SYSTEMS]
    if bad:
        ap.error(f"unknown system(s) {', '.join(bad)}; choose from {', '.join(SYSTEMS)}")
    if args.threads < 1:
        ap.error("--threads must be at least 1")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    logging.basicConfig(format="[gensim %(asctime)s] %(message)s", datefmt="%H:%M:%S", level=logging.WARNING)
    logging.getLogger("gensim.models.word2vec").setLevel(logging.INFO)
    label, path = resolve_corpus(args.corpus)
    ctx = context()
    WORK.mkdir(parents=True, exist_ok=True)
    min_count = TrainConfig().min_count
    log(f"corpus {label}: {path}")
    corpus, ckey, enc_timing = encode_corpus(path, min_count)
    log(f"corpus encoded: {corpus.stats['tokens']:,} kept tokens, {corpus.n_sentences:,} sentences, "
        f"vocabulary {len(corpus.vocab):,} (encoding {'reloaded' if enc_timing.get('reloaded_this_run') else 'built'})")

    settings = {s: settings_of(s, args.threads, args.scbow_overrides) for s in SYSTEMS}
    dirs = {s: model_dir(s, label, ckey, settings[s]) for s in SYSTEMS if s != "overlap"}
    from scbow.formats import save_model

    timings = {"encode": enc_timing}
    tokens_path = None
    for system in ("scbow", "cbow", "skipgram"):
        if system not in args.systems:
            continue
        path_s = dirs[system]
        if not args.force and load_cached(path_s) is not None:
            log(f"{system}: cached in {path_s}")
            continue
        if system == "scbow":
            model = train_scbow(corpus, settings[system])
        else:
            if tokens_path is None:
                tokens_path, timings["tokens"] = token_file(corpus, ckey)
            model = train_word2vec(system, tokens_path, settings[system])
        save_model(model, path_s)
        b = model.info["benchmark"]
        log(f"{system}: trained in {b['wall_seconds']} s wall, {b['cpu_seconds']} s CPU; saved to {path_s}")
        del model
    # The report is made from everything cached now, including what other runs (say, one
    # training the peers in the background) finished while this one was training.
    models = {}
    for system in ("scbow", "cbow", "skipgram"):
        model = load_cached(dirs[system])
        if model is not None:
            models[system] = model
            timings[system] = model.info.get("benchmark", {})
    if "tokens" not in timings:
        tj = WORK / f"tokens-{ckey}.json"
        if tj.is_file():
            timings["tokens"] = json.loads(tj.read_text())
    missing = [s for s in ("scbow", "cbow", "skipgram") if s not in models]

    log("evaluating on the STS sets")
    sets = sts_sets()
    embeds = {s: omit_unknown(models[s]) for s in ("scbow", "cbow", "skipgram") if s in models}
    embeds["overlap"] = OverlapControl(dim=OVERLAP_DIM).embed
    with Meter() as m_eval:
        evaluation = evaluate(embeds, sets)
        if "scbow" in models:
            evaluation["vocabulary"] = vocabulary_diagnostic(models["scbow"], sets)
    paper = paper_table()
    names = [sts.name for sts in sets]
    regen = (f"python -m benchmarks.quality --corpus {args.corpus} --threads {args.threads}"
             + (f" --scbow-config '{args.scbow_config}'" if args.scbow_overrides else "")
             + (f" --out {args.out}" if args.out != "benchmarks/results/quality" else ""))
    result = {
        "corpus": {"arg": args.corpus, "label": label, "path": str(path), "encoding_key": ckey,
                   "stats": {k: v for k, v in corpus.stats.items() if k != "files"}},
        "settings": {s: settings[s] for s in SYSTEMS if s in embeds},
        "cache_dirs": {s: str(dirs[s].relative_to(REPO_ROOT)) for s in models},
        "missing": missing,
        "scbow_overrides": args.scbow_overrides,
        "timings": {**timings, "evaluation": m_eval.to_dict()},
        "training_code_hash": training_code_hash(),
        "evaluation": evaluation,
        "paper": {"source": PAPER_SOURCE, "table": paper, "means": paper_means(paper, names)},
        "regenerate": regen,
        "context": ctx,
    }
    result["goal"] = _goal(result, timings)
    result = _clean(result)
    json_path, md_path = write_report(Path(args.out), result, markdown(result))
    log(f"wrote {json_path} and {md_path}")
    s = evaluation["summaries"]
    print(" ".join(f"{n}: mean r {s[n]['pearson_mean']:.4f}" for n in embeds))
    if evaluation["scbow_pairwise"]:
        print("scbow wins: " + ", ".join(f"{o} {p['wins']}/{len(sets)}" for o, p in evaluation["scbow_pairwise"].items()))


def _clean(value):
    """nan/inf -> None, numpy scalars -> Python, for JSON."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if np.isfinite(v) else None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


if __name__ == "__main__":
    main()
