"""Quality on the paper's SemEval STS sets: Siamese CBOW against what a user would do instead.

    python -m benchmarks.run quality                          # gutenberg-100M, 2 threads, every system
    python -m benchmarks.run quality --corpus 1M              # a quick end-to-end check
    python -m benchmarks.run quality --systems scbow --force  # retrain Siamese CBOW only, keep the cached peers

Every system learns from the same corpus, through the same tokenizer, and is scored the same
way: the cosine of two sentence vectors, Pearson's r per set; a pair a system cannot score
(a side with nothing to average) gets that system's mean cosine on the set, so no system is
punished or flattered by where its cosines sit.

* ``scbow``: Siamese CBOW with the project defaults (``TrainConfig()``; ``--threads``), the
  saved model as it is (``Model.encode``: its own rule for unknown words). Its learning curve
  on the STS-B dev set is recorded from the untrained start (``scbow.training.CurveHook``);
* ``scbow_start``: the untrained starting vectors of that run with the same post-processing
  and unknown-word rule: what training is judged against;
* ``cbow`` / ``skipgram``: gensim word2vec with the paper's settings (300 dims, window 5,
  min count 5, sample 1e-5, negative 5, 5 epochs) and the learning rates of the word2vec C
  tool the paper used, trained on exactly the tokens Siamese CBOW trains on;
* ``fasttext``: fastText (its Python bindings, ``import fasttext``; pip: ``fasttext-numpy2``, the
  0.9 bindings built for NumPy 2) cbow with subwords (3-6 characters),
  300 dims, window 5, min count 5, negative 5, 5 epochs, its other defaults; unknown words
  get their subword vectors;
* ``sent2vec``: Sent2Vec (``benchmarks.sent2vec``: epfml/sent2vec built from source) with the
  settings that won its own search on the STS-B dev set (:data:`SENT2VEC_SETTINGS`,
  ``benchmarks/results/sent2vec_search*.md``, history), scored by its own sentence vectors (unigrams
  and bigrams) or by its unigram vectors, whichever variant is best on dev;
* ``overlap``: untrained word overlap: a fixed random vector per distinct token, every token.

Every peer and the overlap control get the best, on the STS-B dev set, of the plain average,
SIF and this project's post-processing, with unknown words left out or hashed (see
``benchmarks.peers``). Word similarity (WordSim-353, SimLex-999; ``benchmarks/data``) is
reported for the same word vectors.

Trained vectors are cached in ``benchmarks/.work/quality/<system>-<corpus>-<key>/`` (an
scbow model directory), the key a hash of the corpus encoding and every training setting,
so a re-run trains only the systems whose settings changed. Nothing here is chosen on the
test sets.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np

from scbow.config import TrainConfig
from scbow.text.tokenize import tokenize
from scbow.text.vocab import Vocab
from scbow.training import load_corpus
from scbow.use.evaluate import bootstrap_pearson_diff, read_sts
from scbow.vectors.model import Model

from .common import (
    CORPORA,
    REPO_ROOT,
    WORK_ROOT,
    context,
    context_markdown,
    corpus_path,
    cpu_seconds,
    data_dir,
    md_table,
    say,
    write_report,
    write_tokens,
)
from .peers import PCR_COMPONENTS, SAMPLE, OwnSentences, SentenceEmbedder, Variant, WordTable, choose, filled_cosines, variants_of
from .sent2vec import PAPER_SETTINGS as PAPER_SENT2VEC
from .targets import TARGETS

TRAINED = ("scbow", "cbow", "skipgram", "fasttext", "sent2vec", "static")
DEFAULT_TRAINED = TRAINED[:-1]  # the modern peer needs sentence-transformers and torch: named to run
SYSTEMS = ("scbow", "scbow_start", "cbow", "skipgram", "fasttext", "sent2vec", "static", "overlap")
PEERS = ("overlap", "cbow", "skipgram", "fasttext", "sent2vec", "static")  # what Siamese CBOW must beat
LABELS = {"scbow": "Siamese CBOW", "scbow_start": "Siamese CBOW, untrained start", "cbow": "w2v CBOW",
          "skipgram": "w2v skip-gram", "fasttext": "fastText CBOW", "sent2vec": "Sent2Vec",
          "static": "ST static + MNRL", "overlap": "word overlap"}
WORK = WORK_ROOT / "quality"
WORDSIM = {"WordSim-353": REPO_ROOT / "benchmarks" / "data" / "wordsim353.tsv",
           "SimLex-999": REPO_ROOT / "benchmarks" / "data" / "simlex999.tsv"}

# The paper's word2vec settings (§3.2): "minimum word frequency 5, word embedding size 300,
# context window 5, sample threshold 1e-5, no hierarchical softmax, 5 negative examples",
# with the C tool's 5 iterations. Learning rates: the C tool's defaults per architecture.
W2V_SETTINGS = {"vector_size": 300, "window": 5, "min_count": 5, "sample": 1e-5, "negative": 5, "hs": 0,
                "epochs": 5, "cbow_mean": 1}
W2V_ALPHA = {"cbow": 0.05, "skipgram": 0.025}
W2V_MIN_ALPHA_FRACTION = 1e-4  # word2vec.c: alpha never drops below starting_alpha * 0.0001
W2V_SEED = 1
# fastText's cbow with its own defaults, at the paper's size, window, count, negatives, epochs
FASTTEXT_SETTINGS = {"model": "cbow", "dim": 300, "ws": 5, "minCount": 5, "neg": 5, "epoch": 5, "lr": 0.05,
                     "t": 1e-4, "minn": 3, "maxn": 6, "bucket": 2_000_000}
# Sent2Vec: the winner on STS-B dev of its own search (retired; its reports stay): every
# candidate on 10M (benchmarks/results/sent2vec_search.md), then the 10M winner against the
# paper's settings on 100M (sent2vec_search_100M.md), whose winner this is.
SENT2VEC_SETTINGS = {**PAPER_SENT2VEC, "t": 1e-4}  # 100M dev 0.649 against 0.581 (the paper's 5e-6)
OVERLAP_DIM = 300
BOOTSTRAP_RESAMPLES = 1000
CURVE_EVERY = 500_000  # examples between the learning curve's points

# The goal, for the defaults on gutenberg-100M (benchmarks/targets.py).
GOAL_MIN_WINS = int(TARGETS["quality_min_wins"].value)  # of the 19 sets, against each peer
GOAL_MEAN_PEARSON = TARGETS["quality_mean_pearson"].value
GOAL_TRAIN_SECONDS = TARGETS["quality_train_s"].value
GOAL_CURVE_GAIN = TARGETS["quality_curve_gain"].value  # dev Pearson at the end minus that of the untrained start
GOAL_WORDSIM_GAP = TARGETS["quality_wordsim_gap"].value  # scbow's Spearman at most this far below gensim CBOW's

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
        cells = [cell.rstrip(")").split("(") for cell in rest.replace(" (", "(").split()]
        assert len(cells) == len(PAPER_COLUMNS), line
        out[name] = {column: {"pearson": float(p.rstrip("†")), "spearman": float(s), "dagger": p.endswith("†")}
                     for column, (p, s) in zip(PAPER_COLUMNS, cells)}
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
# measuring


class Meter:
    """Wall seconds, CPU seconds of this process (every thread) plus its children, and the
    1-minute load average before, after and every ``LOAD_SAMPLE_SECONDS`` during the block
    (a daemon thread), so a long run reports the load it actually shared the machine with."""

    LOAD_SAMPLE_SECONDS = 15.0

    def __enter__(self):
        self.load_before = [round(x, 2) for x in os.getloadavg()]
        self.samples = [self.load_before[0]]
        self._stop = threading.Event()

        def sample():
            while not self._stop.wait(self.LOAD_SAMPLE_SECONDS):
                self.samples.append(os.getloadavg()[0])

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        self.wall0, self.cpu0, self.child0 = time.perf_counter(), time.process_time(), cpu_seconds(children=True)
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall0
        self.cpu = time.process_time() - self.cpu0 + cpu_seconds(children=True) - self.child0
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


def content_key(corpus) -> str:
    """Key of what every system trains on: the encoding's words and arrays. scbow's corpus cache
    keys by (path, size, mtime), which would make every cached peer model (hours of training on
    100M) stale the day the data are copied or remounted unchanged."""
    h = hashlib.sha256(b"scbow benchmark corpus v1")
    h.update("\n".join(corpus.vocab.words).encode("utf-8"))
    for a in (corpus.tokens, corpus.offsets, corpus.sent_doc, corpus.doc_offsets):
        a = np.ascontiguousarray(a)
        h.update(f"|{a.dtype.str}:{a.shape}|".encode())
        h.update(memoryview(a).cast("B"))
    return h.hexdigest()[:24]


def encode_corpus(path: Path, min_count: int) -> tuple[object, str, dict]:
    """The scbow encoding of ``path`` (from scbow's corpus cache when there), its content key
    (:func:`content_key`, what models and token files are cached under), its timing."""
    with Meter() as m:
        corpus = load_corpus([path], min_count, 0)
    # the cache entry's folder is named by scbow's cache key: the timing of its build is kept under it
    timing_path = WORK / f"encode-{Path(corpus.cache_path).name}.json"
    if corpus.from_cache:
        timing = json.loads(timing_path.read_text()) if timing_path.is_file() else {}
        timing["reloaded_this_run"] = True
        timing["reload_seconds"] = round(m.wall, 2)
    else:
        timing = {**m.to_dict(), "reloaded_this_run": False}
        WORK.mkdir(parents=True, exist_ok=True)
        timing_path.write_text(json.dumps(timing, indent=1) + "\n")
    return corpus, content_key(corpus), timing


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
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    say(f"writing {corpus.stats['tokens']:,} tokens to {path}")
    with Meter() as m:
        write_tokens(corpus, tmp)
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
    if system == "fasttext":
        from importlib import metadata

        import fasttext

        version = getattr(fasttext, "__version__", None) or next(
            (f"{d.metadata['Name']} {d.version}" for d in metadata.distributions()
             if (d.metadata["Name"] or "").lower().startswith("fasttext")), "unknown")
        return {"trainer": f"fasttext {version} train_unsupervised", **FASTTEXT_SETTINGS, "thread": threads}
    if system == "sent2vec":
        from .sent2vec import describe

        return {"trainer": describe(), **SENT2VEC_SETTINGS, "thread": threads}
    if system == "static":
        from .static_peer import settings

        try:
            return settings(threads)  # it imports sentence-transformers and torch
        except ImportError:
            return {"trainer": "sentence-transformers (not installed)"}
    if system == "overlap":
        return {"trainer": "none (untrained)", "dim": OVERLAP_DIM, "vectors": "standard normal per token, seeded "
                "by BLAKE2b of the token", "tokens": "every token, known or not"}
    if system == "scbow_start":
        return {"trainer": "none (the untrained start of scbow's run, with its post-processing)"}
    raise ValueError(system)


def model_dir(system: str, corpus_label: str, corpus_key: str, settings: dict) -> Path:
    blob = json.dumps({"system": system, "corpus": corpus_key, "settings": settings}, sort_keys=True)
    return WORK / f"{system}-{corpus_label}-{hashlib.sha256(blob.encode()).hexdigest()[:16]}"


def training_code_hash() -> str:
    """Hash of the files that decide what Siamese CBOW learns (recorded, not part of the key)."""
    h = hashlib.sha256()
    for rel in ("scbow/training/trainer.py", "scbow/training/start.py", "scbow/training/postprocess.py",
                "scbow/training/backends/params.py", "scbow/kernels/sampling.py", "scbow/kernels/cpu.py",
                "scbow/config.py"):
        p = REPO_ROOT / rel
        h.update(p.read_bytes() if p.is_file() else b"")
    return h.hexdigest()[:16]


def provenance() -> dict:
    ctx = context()
    return {"git": ctx["git"], "versions": ctx["versions"], "training_code_hash": training_code_hash()}


def train_scbow(corpus, settings: dict, dev_path: Path):
    """Train with the defaults, recording the learning curve on the dev set from the untrained start;
    ``wall_seconds`` leaves out the curve's evaluations (``hook_seconds``, reported beside it)."""
    from scbow.training import CurveHook, train

    config = TrainConfig.from_dict({k: v for k, v in settings.items() if k != "trainer"})
    say(f"training Siamese CBOW: {json.dumps(config.to_dict())}")
    k = config.components_removed
    curve = CurveHook(read_sts(dev_path), CURVE_EVERY, k, config.seed, sources={"dev": str(dev_path)},
                      unknown=config.unknown, unknown_scale=config.unknown_scale)
    with Meter() as m:
        result = train(corpus, config, quiet=not sys.stderr.isatty(), hooks=[curve])
    model = result.model
    curve.attach(model)
    timing = m.to_dict()
    hook = model.info["training"].get("hook_seconds", 0.0)
    timing["wall_seconds_with_curve"] = timing["wall_seconds"]
    timing["wall_seconds"] = round(timing["wall_seconds"] - hook, 1)
    model.info["benchmark"] = {**timing, "curve_seconds": hook, "kernel_seconds": round(result.seconds, 1),
                               "examples": result.examples, **provenance()}
    return model


def train_fasttext(tokens_path: Path, settings: dict, corpus, oov_words: list):
    """fastText cbow on the token file: the vectors of the corpus's vocabulary, and those of ``oov_words``
    from their subwords (``info["oov_vectors"]``); the model itself (2.4 GB with its buckets) is not kept."""
    import fasttext

    s = {k: v for k, v in settings.items() if k != "trainer"}
    say(f"training fastText: {json.dumps(s)}")
    with Meter() as m:
        ft = fasttext.train_unsupervised(str(tokens_path), verbose=1, **s)
    M = np.stack([ft.get_word_vector(w) for w in corpus.vocab.words]).astype(np.float32)
    in_ft = set(ft.words)
    oov = {w: ft.get_word_vector(w).astype(np.float32).tolist() for w in oov_words}
    model = Model(corpus.vocab, M, settings,
                  {"benchmark": {**m.to_dict(), "fasttext_vocabulary": len(ft.words),
                                 "corpus_words_without_own_vector": int(sum(w not in in_ft for w in corpus.vocab.words)),
                                 **provenance()},
                   "oov_vectors": oov})
    del ft
    return model


def train_word2vec(system: str, tokens_path: Path, settings: dict):
    from gensim.models import Word2Vec

    say(f"training word2vec {system} with gensim: {json.dumps(settings)}")
    with Meter() as m:
        w2v = Word2Vec(**{k: v for k, v in settings.items() if k != "trainer"})
        w2v.build_vocab(corpus_file=str(tokens_path))
        w2v.train(corpus_file=str(tokens_path), total_words=w2v.corpus_total_words, total_examples=w2v.corpus_count,
                  epochs=settings["epochs"], report_delay=60)
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


def sample_lines(corpus) -> list[str]:
    """The corpus sample every post-processing is estimated on (``benchmarks.peers.SAMPLE``,
    seed 1), each sentence as its kept tokens joined by spaces."""
    from scbow.training import sample_sentences

    words = corpus.vocab.words
    offsets = np.asarray(corpus.offsets)
    return [" ".join(words[t] for t in np.asarray(corpus.tokens[int(offsets[s]):int(offsets[s + 1])]).tolist())
            for s in sample_sentences(corpus.n_sentences, SAMPLE, 1)]


def evaluation_tokens(sets: list, dev) -> list[tuple]:
    """Every sentence of the test sets and dev, tokenized, once each, in order."""
    return list(dict.fromkeys(tuple(tokenize(s)) for sts in [*sets, dev] for s in (*sts.first, *sts.second)))


def train_sent2vec(tokens_path: Path, settings: dict, corpus, lines: list[str], work: Path):
    """Sent2Vec on the token file: its unigram vectors as a model, and its sentence vectors of ``lines``.
    The trained model (about 2.5 GB with its bigram buckets) is deleted once they are taken."""
    from . import sent2vec

    s = {k: v for k, v in settings.items() if k != "trainer"}
    finished = sent2vec.finished_model(work)
    if finished is not None:  # a run stopped after training: its model is complete, keep it
        say(f"Sent2Vec: reusing the finished training in {work}")
        binfile, timing = finished, {"wall_seconds": None, "cpu_seconds": None,
                                     "note": "trained by an earlier, interrupted run (not timed here)"}
    else:
        shutil.rmtree(work, ignore_errors=True)
        with Meter() as m:
            binfile = sent2vec.train(tokens_path, s, work)
        timing = m.to_dict()
    dim = int(s["dim"])
    words, M = sent2vec.vocabulary_vectors(binfile, dim)
    vectors = sent2vec.sentence_vectors(binfile, lines, dim)
    counts = [int(corpus.vocab.counts[corpus.vocab.index[w]]) if w in corpus.vocab.index else 0 for w in words]
    own_words = set(words)
    model = Model(Vocab(words, counts), M, settings,
                  {"benchmark": {**timing, "sent2vec_vocabulary": len(words),
                                 "corpus_words_without_own_vector": int(sum(w not in own_words
                                                                            for w in corpus.vocab.words)),
                                 "last_progress_line": sent2vec.last_progress(work / "train.log"),
                                 **provenance()}})
    shutil.rmtree(work, ignore_errors=True)
    return model, vectors


def save_sentences(path: Path, lines: list[str], vectors: np.ndarray) -> None:
    blob = np.frombuffer("\n".join(lines).encode("utf-8"), dtype=np.uint8)
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}.npz")
    np.savez(tmp, lines=blob, vectors=vectors.astype(np.float32))
    os.replace(tmp, path)


def load_sentences(path: Path) -> dict | None:
    """text -> vector of a Sent2Vec model's cached sentence vectors (None when absent or damaged)."""
    import zipfile

    try:
        with np.load(path) as data:
            lines = data["lines"].tobytes().decode("utf-8").split("\n")
            vectors = data["vectors"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        say(f"ignoring damaged or missing {path}: {exc}")
        return None
    if len(lines) != len(vectors):
        return None
    return dict(zip(lines, vectors))


def load_cached(path: Path):
    from scbow.vectors.formats import load_model

    if (path / "config.json").is_file():
        try:
            return load_model(path)
        except Exception as exc:  # a damaged cache entry: retrain or leave out
            say(f"ignoring damaged cache {path}: {exc}")
    return None


# ---------------------------------------------------------------------------------------
# evaluation


def sts_sets() -> list:
    files = sorted((data_dir() / "sts").glob("*.tsv"))
    if not files:
        sys.exit(f"no STS sets in {data_dir() / 'sts'}")
    return [read_sts(f) for f in files]


def dev_path() -> Path:
    path = data_dir() / "sts-dev" / "stsb.dev.tsv"
    if not path.is_file():
        sys.exit(f"no STS-B dev set at {path}")
    return path


def embedder(table, variant, corpus, model=None):
    """The sentence-embedding function of one system's variant (its own sentence vectors or averaged words)."""
    if variant.source == "sentences":
        own = model.info["own_sentences"]
        if "sample" not in model.info:
            model.info["sample"] = np.stack([own[line] for line in sample_lines(corpus)])
        return OwnSentences(own, model.info["sample"], variant.post, PCR_COMPONENTS).embed
    return SentenceEmbedder(table, variant, corpus).embed


def static_dev_score(M: np.ndarray, corpus, dev) -> float:
    """STS-B dev Pearson of a word table by its own mean pooling (raw average, unknown words left out)."""
    table = WordTable.from_model(corpus.vocab, Model(corpus.vocab, M))
    return Scored._one(SentenceEmbedder(table, Variant("omit", "raw"), corpus).embed, dev)["pearson"]


class Scored:
    """One system (one variant) on the dev set and every test set: filled cosines and correlations."""

    def __init__(self, embed, dev, sets):
        self.dev = self._one(embed, dev)
        self.sets = [self._one(embed, s) for s in sets]
        self.mean = float(np.mean([r["pearson"] for r in self.sets]))
        self.spearman_mean = float(np.mean([r["spearman"] for r in self.sets]))
        pairs = np.array([r["pairs"] for r in self.sets])
        self.weighted = float(np.average([r["pearson"] for r in self.sets], weights=pairs))

    @staticmethod
    def _one(embed, sts) -> dict:
        from scipy.stats import pearsonr, spearmanr

        pred, scored = filled_cosines(np.asarray(embed(sts.first), np.float64), np.asarray(embed(sts.second), np.float64))
        return {"name": sts.name, "pairs": len(sts.gold), "scored": scored, "pearson": float(pearsonr(sts.gold, pred)[0]),
                "spearman": float(spearmanr(sts.gold, pred)[0]), "pred": pred}

    def summary(self) -> dict:
        return {"dev_pearson": self.dev["pearson"], "test_pearson_mean": self.mean,
                "test_spearman_mean": self.spearman_mean, "test_pearson_weighted": self.weighted}


def untrained_start(model, corpus):
    """The start of scbow's run (same seed, weights, post-processing, unknown-word rule), as a model."""
    from scbow.training import untrained_start as start

    config = TrainConfig.from_dict(model.config)
    return Model(corpus.vocab, start(corpus, config, post_process=True), config.to_dict())


def word_similarity(tables: dict, vocab) -> dict:
    """Spearman's rho of each system's word cosines on each word-similarity set (``word<TAB>word<TAB>score``
    lines, ``#`` comments), on the pairs whose words are both in the corpus's vocabulary."""
    from scipy.stats import spearmanr

    out = {}
    for name, path in WORDSIM.items():
        pairs = [(a.lower(), b.lower(), float(g)) for a, b, g in
                 (line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()
                  if line.strip() and not line.startswith("#"))]
        index = vocab.index
        kept = [(index[a], index[b], g) for a, b, g in pairs if a in index and b in index]
        ia = np.array([k[0] for k in kept])
        ib = np.array([k[1] for k in kept])
        gold = np.array([k[2] for k in kept])
        row = {"pairs": len(pairs), "covered": len(kept), "spearman": {}}
        for system, table in tables.items():
            A, B = table.M[ia].astype(np.float64), table.M[ib].astype(np.float64)
            cos = (A * B).sum(1) / np.maximum(np.linalg.norm(A, axis=1) * np.linalg.norm(B, axis=1), 1e-30)
            row["spearman"][system] = float(spearmanr(gold, cos)[0])
        out[name] = row
    return out


def neighbours(tables: dict, vocab, words=("king", "happy", "river", "sword", "letter"), k=5) -> dict:
    """The nearest words of a few probes in each system's vectors (cosine)."""
    out = {}
    for system, table in tables.items():
        M = table.M.astype(np.float64)
        norms = np.maximum(np.linalg.norm(M, axis=1), 1e-30)
        rows = {}
        for w in words:
            i = vocab.index.get(w)
            if i is None:
                continue
            sims = (M @ M[i]) / (norms * norms[i])
            sims[i] = -np.inf
            top = np.argsort(-sims)[:k]
            rows[w] = [(vocab.words[j], round(float(sims[j]), 3)) for j in top]
        out[system] = rows
    return out


def pairwise(ours: Scored, other: Scored, sets: list) -> dict:
    wins = losses = sig_wins = sig_losses = 0
    diffs = []
    for sts, a, b in zip(sets, ours.sets, other.sets):
        d, low, high = bootstrap_pearson_diff(sts.gold, a["pred"], b["pred"], BOOTSTRAP_RESAMPLES, seed=0)
        diffs.append({"name": sts.name, "diff": d, "ci95": [low, high]})
        wins += a["pearson"] > b["pearson"]
        losses += a["pearson"] < b["pearson"]
        sig_wins += bool(np.isfinite(low) and low > 0)
        sig_losses += bool(np.isfinite(high) and high < 0)
    return {"wins": int(wins), "losses": int(losses), "significant_wins": int(sig_wins),
            "significant_losses": int(sig_losses), "mean_pearson_diff": ours.mean - other.mean, "per_set": diffs}


# ---------------------------------------------------------------------------------------
# report


def _goal(result: dict) -> dict:
    systems = result["systems"]
    if "scbow" not in systems:
        return {"evaluated": False}
    n_sets = len(systems["scbow"]["sets"])
    wins = {o: p["wins"] for o, p in result["pairwise"].items() if o in PEERS}
    checks = {"wins": {o: {"wins": w, "of": n_sets, "required": GOAL_MIN_WINS, "met": w >= GOAL_MIN_WINS}
                       for o, w in wins.items()}}
    mean = systems["scbow"]["test_pearson_mean"]
    checks["mean_pearson"] = {"value": mean, "required": GOAL_MEAN_PEARSON, "met": bool(mean >= GOAL_MEAN_PEARSON)}
    if "scbow_start" in systems:
        gain = systems["scbow"]["dev_pearson"] - systems["scbow_start"]["dev_pearson"]
        checks["curve_gain"] = {"value": gain, "start": systems["scbow_start"]["dev_pearson"],
                                "end": systems["scbow"]["dev_pearson"], "required": GOAL_CURVE_GAIN,
                                "met": bool(gain >= GOAL_CURVE_GAIN)}
    ws = result.get("word_similarity", {})
    if ws and "cbow" in next(iter(ws.values()))["spearman"]:
        checks["word_similarity"] = {
            name: {"scbow": row["spearman"]["scbow"], "cbow": row["spearman"]["cbow"],
                   "gap": row["spearman"]["cbow"] - row["spearman"]["scbow"], "required_gap_at_most": GOAL_WORDSIM_GAP,
                   "met": bool(row["spearman"]["cbow"] - row["spearman"]["scbow"] <= GOAL_WORDSIM_GAP)}
            for name, row in ws.items()}
    t = result["timings"].get("scbow", {})
    checks["train_seconds"] = {"value": t.get("wall_seconds"), "cpu_seconds": t.get("cpu_seconds"),
                               "required": GOAL_TRAIN_SECONDS,
                               "met": bool(t.get("wall_seconds") is not None and t["wall_seconds"] <= GOAL_TRAIN_SECONDS)}
    complete = all(p in wins for p in PEERS if p in DEFAULT_TRAINED or p == "overlap")  # the opt-in peer may be absent
    parts = [*checks["wins"].values(), *checks.get("word_similarity", {}).values()]
    parts += [checks[k] for k in ("mean_pearson", "train_seconds", "curve_gain") if k in checks]
    checks.update(met=bool(complete and all(c["met"] for c in parts)), complete=complete, evaluated=True)
    return checks


def _load(t: dict) -> str:
    b, a = t.get("load_before_1_5_15"), t.get("load_after_1_5_15")
    if not b or not a:
        return "-"
    during = "" if t.get("load_1min_mean_during") is None else f" (mean {t['load_1min_mean_during']} during)"
    return f"{b[0]} -> {a[0]}{during}"


def _clean(value):
    """nan/inf -> None, numpy scalars -> Python, for JSON."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value) if np.isfinite(value) else None
    return value.item() if isinstance(value, (np.integer, np.bool_)) else value


def _f(x, digits=4) -> str:
    return "-" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def _yes(met: bool) -> str:
    return "yes" if met else "**no**"


def _ps(e: dict, bold: bool = False) -> str:
    """Pearson (Spearman) of a set's entry."""
    p = _f(e["pearson"])
    return f"{f'**{p}**' if bold else p} ({_f(e['spearman'])})"


def _epochs(n) -> str:
    """", N epochs" for a run of the modern peer's search that records them (older records do not)."""
    return "" if n is None else f", {n} epochs"


def markdown(result: dict) -> str:
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
                         "" if corpus["label"] == "100M" else f" *This run is on {corpus['label']}, not 100M.* "
                         "The peers' settings were chosen for 100M (word2vec's paper settings subsample with "
                         "1e-5, meant for a corpus of a billion words): on a smaller corpus read their rows as "
                         "those settings, not as each peer at its best.")
                     + "\n\n" + md_table(("criterion", "result", "goal", "met"), rows))

    # per set
    head = ["set", "pairs"] + [LABELS[n] for n in names]
    rows = []
    n_sets = len(systems[names[0]]["sets"])
    best = {n: 0 for n in names}
    for k in range(n_sets):
        cells = [systems[names[0]]["sets"][k]["name"], str(systems[names[0]]["sets"][k]["pairs"])]
        top = max(systems[n]["sets"][k]["pearson"] for n in names)
        for n in names:
            e = systems[n]["sets"][k]
            best[n] += e["pearson"] == top
            cells.append(_ps(e, e["pearson"] == top) + ("" if e["scored"] == e["pairs"] else f" [{e['scored']}]"))
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
        nrows = [(w,) + tuple(", ".join(x for x, _ in nb[n].get(w, [])) for n in wnames if n in nb)
                 for w in next(iter(nb.values()), {})]
        parts.append("## Word similarity\n\nSpearman's rho between the cosine of two words' vectors and the human "
                     "scores, on the pairs whose words are both in the corpus's vocabulary (the same pairs for every "
                     "system). Data: `benchmarks/data/` (sources there).\n\n"
                     + md_table(("set", "pairs covered") + tuple(LABELS[n] for n in wnames), wrows)
                     + "\n\nNearest words (cosine):\n\n" + md_table(("word",) + tuple(LABELS[n] for n in wnames if n in nb),
                                                                    nrows))

    paper = result["paper"]["table"]
    pcols = [("scbow", "Siamese CBOW"), ("cbow", "w2v CBOW"), ("skipgram", "w2v skip-gram")]
    head = ["set"] + [x for key, label in pcols for x in ([f"{label}, ours"] if key in systems else []) + [f"{label}, paper"]]
    rows = []
    for k in range(n_sets):
        name = systems[names[0]]["sets"][k]["name"]
        cells = [name]
        for key, _ in pcols:
            cells += [_ps(systems[key]["sets"][k])] if key in systems else []
            r = paper.get(name, {}).get(key)
            cells.append("-" if r is None else _ps(r) + (" †" if r["dagger"] else ""))
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
            step = f"{LABELS[n]} training"
            if t.get("chosen_lr") is not None:  # the modern peer: one run per setting, the best on dev kept
                runs = ", ".join(f"lr {r['lr']}{_epochs(r.get('epochs'))}: dev {r['dev_pearson_raw']}, {r['seconds']} s"
                                 for r in t.get("runs", []))
                step += (f" (lr {t['chosen_lr']}{_epochs(t.get('chosen_epochs'))} chosen on dev among {runs}; "
                         "CPU s: the whole search)")
            trow.append((step, _f(t["wall_seconds"], 1), _f(t["cpu_seconds"], 1), _load(t), when))
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
                 "STS-B dev (`benchmarks/results/sent2vec_search_100M.md`, history). gensim, fastText and Sent2Vec "
                 "read the same token stream Siamese CBOW trains on (the "
                 "kept tokens of scbow's encoding, one sentence per line), so all have the same vocabulary.")
    parts.append(f"Regenerate: `{result['regenerate']}` (trains only what is not cached; `--systems S --force` "
                 "retrains S).")
    parts.append(context_markdown(result["context"]))
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------------------


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.run quality", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--corpus", default="100M", help=f"one of {', '.join(CORPORA)} or a path")
    ap.add_argument("--threads", type=int, default=2, help="training threads of every trainer")
    ap.add_argument("--systems", default=",".join(DEFAULT_TRAINED),
                    help=f"systems this run may train when not cached (the others come from the cache; one of "
                         f"{', '.join(TRAINED)}; 'static' needs sentence-transformers and torch); "
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
    bad = [s for s in args.systems if s not in TRAINED]
    if bad:
        ap.error(f"unknown system(s) {', '.join(bad)}; choose from {', '.join(TRAINED)}")
    if args.threads < 1:
        ap.error("--threads must be at least 1")
    return args


def _summary(scored: Scored) -> dict:
    return {**scored.summary(), "sets": [{k: v for k, v in r.items() if k != "pred"} for r in scored.sets]}


def train_system(system: str, settings: dict, corpus, tokens_path, sets, dev, path: Path):
    """Train one system and save it in ``path`` (Sent2Vec's own sentence vectors and fastText's
    vectors of the evaluation's unknown words beside it); returns its timing."""
    from scbow.vectors.modeldir import save_model

    own = oov = None
    if system == "scbow":
        model = train_scbow(corpus, settings, dev_path())
    elif system == "sent2vec":
        lines = list(dict.fromkeys([" ".join(t) for t in evaluation_tokens(sets, dev)] + sample_lines(corpus)))
        model, vectors = train_sent2vec(tokens_path, settings, corpus, lines, path.with_name(path.name + ".training"))
        own = (lines, vectors)
    elif system == "static":
        from .static_peer import train_static

        with Meter() as m_static:
            model = train_static(corpus, settings, lambda M: static_dev_score(M, corpus, dev), say)
        model.info["benchmark"] = {**m_static.to_dict(), **model.info["benchmark"], **provenance(),
                                   "note": "wall_seconds: the run at the chosen learning rate; cpu_seconds and "
                                           "the load: the whole search (search_seconds)"}
    elif system == "fasttext":  # fastText gets the subword vectors of the evaluation's unknown words
        unknown = dict.fromkeys(t for toks in evaluation_tokens(sets, dev) for t in toks if t not in corpus.vocab.index)
        model = train_fasttext(tokens_path, settings, corpus, list(unknown))
        oov = model.info.pop("oov_vectors")
    else:
        model = train_word2vec(system, tokens_path, settings)
    save_model(model, path)
    if own is not None:
        save_sentences(path / "sentences.npz", *own)
    if oov is not None:
        np.savez(path / "oov.npz", words=np.array(list(oov), dtype=object),
                 vectors=np.array(list(oov.values()), dtype=np.float32).reshape(len(oov), -1))
    return model.info["benchmark"]


def main(argv=None) -> None:
    args = parse_args(argv)
    logging.basicConfig(format="[gensim %(asctime)s] %(message)s", datefmt="%H:%M:%S", level=logging.WARNING)
    logging.getLogger("gensim.models.word2vec").setLevel(logging.INFO)
    label, path = resolve_corpus(args.corpus)
    ctx = context()
    WORK.mkdir(parents=True, exist_ok=True)
    say(f"corpus {label}: {path}")
    corpus, ckey, enc_timing = encode_corpus(path, TrainConfig().min_count)
    say(f"corpus encoded: {corpus.stats['tokens']:,} kept tokens, {corpus.n_sentences:,} sentences, "
        f"vocabulary {len(corpus.vocab):,} (encoding {'reloaded' if enc_timing.get('reloaded_this_run') else 'built'})")
    sets, dev = sts_sets(), read_sts(dev_path())
    settings = {s: settings_of(s, args.threads, args.scbow_overrides) for s in SYSTEMS}
    dirs = {s: model_dir(s, label, ckey, settings[s]) for s in TRAINED}
    timings = {"encode": enc_timing}
    tokens_path = None
    for system in (s for s in TRAINED if s in args.systems):
        if not args.force and load_cached(dirs[system]) is not None:
            say(f"{system}: cached in {dirs[system]}")
            continue
        if system != "scbow" and tokens_path is None:
            tokens_path, timings["tokens"] = token_file(corpus, ckey)
        b = train_system(system, settings[system], corpus, tokens_path, sets, dev, dirs[system])
        say(f"{system}: trained in {b['wall_seconds']} s wall, {b['cpu_seconds']} s CPU; saved to {dirs[system]}")
    # The report is made from everything cached now, including what other runs (say, one
    # training the peers in the background) finished while this one was training.
    models = {}
    for system in TRAINED:
        model = load_cached(dirs[system])
        if system == "sent2vec" and model is not None:
            model.info["own_sentences"] = load_sentences(dirs[system] / "sentences.npz")
            model = model if model.info["own_sentences"] is not None else None
        if model is not None:
            models[system] = model
            timings[system] = model.info.get("benchmark", {})
    missing = [s for s in DEFAULT_TRAINED if s not in models]  # the opt-in peer is not missing

    say("evaluating on the STS sets")
    scored: dict[str, Scored] = {}
    systems: dict[str, dict] = {}
    tables = {}
    with Meter() as m_eval:
        if "scbow" in models:
            for name, model in (("scbow", models["scbow"]), ("scbow_start", untrained_start(models["scbow"], corpus))):
                s = scored[name] = Scored(model.encode, dev, sets)
                label_ = f"as saved (unknown {model.unknown_rule[0]})"
                systems[name] = {**_summary(s), "chosen": label_, "variants": {label_: s.summary()}}
            tables["scbow"] = WordTable.from_model(corpus.vocab, models["scbow"])
        for name in ("cbow", "skipgram", "fasttext", "sent2vec", "static"):
            if name in models:
                tables[name] = WordTable.from_model(corpus.vocab, models[name])
                npz = dirs[name] / "oov.npz"
                if npz.is_file():
                    data = np.load(npz, allow_pickle=True)
                    tables[name].oov = dict(zip(data["words"].tolist(), data["vectors"]))
        tables["overlap"] = WordTable.hashed(corpus.vocab, OVERLAP_DIM)
        for name in PEERS:
            if name not in tables:
                continue
            kind = {"fasttext": "fasttext", "overlap": "overlap", "sent2vec": "sent2vec"}.get(name, "word2vec")
            by_variant = {}
            for variant in variants_of(kind):
                say(f"{name}: {variant.label}")
                by_variant[variant] = Scored(embedder(tables[name], variant, corpus, models.get(name)), dev, sets)
            pick = choose({v: s.dev["pearson"] for v, s in by_variant.items()})
            scored[name] = by_variant[pick]
            systems[name] = {**_summary(by_variant[pick]), "chosen": pick.label,
                             "variants": {v.label: s.summary() for v, s in by_variant.items()}}
        others = ("scbow_start", *PEERS) if "scbow" in scored else ()
        pairs = {o: pairwise(scored["scbow"], scored[o], sets) for o in others if o in scored}
        ws = word_similarity(tables, corpus.vocab)
        nb = neighbours({k: v for k, v in tables.items() if k != "overlap"}, corpus.vocab)
    paper = paper_table()
    regen = (f"python -m benchmarks.run quality --corpus {args.corpus} --threads {args.threads}"
             + (f" --scbow-config '{args.scbow_config}'" if args.scbow_overrides else "")
             + (f" --out {args.out}" if args.out != "benchmarks/results/quality" else ""))
    result = {
        "corpus": {"arg": args.corpus, "label": label, "path": str(path), "encoding_key": ckey,
                   "stats": {k: v for k, v in corpus.stats.items() if k != "files"}},
        "settings": {s: settings[s] for s in SYSTEMS if s in systems},
        "cache_dirs": {s: str(dirs[s].relative_to(REPO_ROOT)) for s in models},
        "missing": missing,
        "scbow_overrides": args.scbow_overrides,
        "timings": {**timings, "evaluation": m_eval.to_dict()},
        "training_code_hash": training_code_hash(),
        "systems": systems,
        "pairwise": pairs,
        "word_similarity": ws,
        "neighbours": nb,
        "curve": models["scbow"].info.get("curve") if "scbow" in models else None,
        "paper": {"source": PAPER_SOURCE, "table": paper, "means": paper_means(paper, [s.name for s in sets])},
        "regenerate": regen,
        "context": ctx,
    }
    result["goal"] = _goal(result)
    result = _clean(result)
    write_report(Path(args.out), result, markdown(result))
    print(" ".join(f"{n}: mean r {systems[n]['test_pearson_mean']:.4f}" for n in systems))
    if pairs:
        print("scbow wins: " + ", ".join(f"{o} {p['wins']}/{len(sets)}" for o, p in pairs.items()))


if __name__ == "__main__":
    main()
