"""Objective prototypes (issue 23): ideas measured on STS-B dev before any becomes a training option.

    python -m benchmarks.run prototypes --corpus 10M
    python -m benchmarks.run prototypes --corpus 10M --only "baseline; in-sentence term, weight 0.1"

Three ideas from the literature, each trained by one prototype kernel in this file on top
of the product's pieces (its example sampler, step rates, SIF-weighted random start, common
component removal and unknown-word hashing):

* **many negatives with a temperature**, the way contrastive sentence encoders are trained:
  each target against 10 or 20 other sentences (drawn from the whole corpus, what the other
  targets of a block are) in a softmax of ``cos / tau``;
* **Sent2Vec's in-sentence term**: every word of the target sentence is predicted from the
  unweighted average of the other words' rows (negative sampling against an output matrix
  with biases, the product's skip-gram rows), added to the sentence objective with a weight;
* **word bigrams with dropout**: a sentence's average also holds hashed rows of its word
  bigrams (zero at the start, each bigram dropped with a probability while training), as
  Sent2Vec's features are; a model is then no longer an average of word rows only.

The prototype's ``baseline`` row is the sentence objective alone in this kernel (in-place
Hogwild steps, no buffered hot rows): each idea is judged against it, trained by the same
code; the product's defaults are printed beside for reference. Choices on STS-B dev only;
the 19-set test mean is printed, never used. Nothing here is a training option of the
product unless it wins on dev.

A fourth idea, rows = [sentence part ; word part], won on dev and became the product's word
part (``scbow.training.wordpart``; its sizing runs are in ``results/search.md``, its settings
search is ``benchmarks/word_part.py``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit, prange

from scbow.config import TrainConfig
from scbow.kernels.cpu import sgns_row
from scbow.kernels.sampling import (
    NEG_DOCUMENT,
    NEG_UNIFORM,
    draw_noise,
    fill_example,
    next_random,
    seed_state,
)

from .common import context, corpus_path, md_table, say, write_report
from .search import add_section, machine_section

NORM_EPS = 1e-12
MAX_WORDS = 256  # words of a sentence a prototype reads (the corpus's sentences are shorter but for a few)
# Hyperparameter record of the kernel (float64 array), by position
HP = ("lr", "lr_min", "negatives", "neg_mode", "scale", "s2v_weight", "s2v_lr", "s2v_negatives", "buckets", "drop",
      "s2v_turn")


@njit(cache=True, nogil=True)
def bigram_row(w1, w2, buckets):
    """The hashed row (0..buckets-1) of the bigram ``(w1, w2)`` of word ids."""
    h = (np.uint64(w1) * np.uint64(0x9E3779B97F4A7C15)) ^ (np.uint64(w2) + np.uint64(0x632BE59BD9B4E019))
    h ^= h >> np.uint64(29)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(32)
    return np.int64(h % np.uint64(buckets))


@njit(cache=True, nogil=True)
def features(tokens, start, stop, V, buckets, drop, state, out):
    """Row ids of a sentence's average: its words, then (``buckets > 0``) its kept bigrams as
    ``V + bigram_row``; each bigram dropped with probability ``drop``. Returns how many."""
    stop = min(stop, start + MAX_WORDS)
    n = 0
    for t in range(start, stop):
        out[n] = tokens[t]
        n += 1
    if buckets > 0:
        for t in range(start, stop - 1):
            if drop > 0.0 and (next_random(state) % 16777216) < drop * 16777216.0:
                continue
            out[n] = V + bigram_row(tokens[t], tokens[t + 1], buckets)
            n += 1
    return n


@njit(cache=True, nogil=True, fastmath=True)
def proto_forward(W, B, feats, nfe, k, n_pos, scale, means, grads, work):
    """Loss of one example under ``softmax(scale * cos)`` and ``dL/ds_m`` of each average (``grads``).

    Row ``f < V`` of a feature list is ``W[f]``, row ``f >= V`` is ``B[f - V]``. At
    ``scale = 1`` and without bigram rows this is the product's objective
    (``scbow.reference.loss_and_grad``); the softmax's ``dL/dcos_m`` carries the factor ``scale``.
    """
    V, d = W.shape
    norms, cos, g = work[0], work[1], work[2]
    for m in range(k):
        row = means[m]
        row[:] = 0.0
        for i in range(nfe[m]):
            f = feats[m, i]
            if f < V:
                for j in range(d):
                    row[j] += W[f, j]
            else:
                for j in range(d):
                    row[j] += B[f - V, j]
        inv = np.float32(1.0 / nfe[m])
        sq = 0.0
        for j in range(d):
            row[j] *= inv
            sq += row[j] * row[j]
        norms[m] = max(math.sqrt(sq), NORM_EPS)
    si = means[0]
    top = -1e30
    for m in range(1, k):
        dot = 0.0
        for j in range(d):
            dot += si[j] * means[m, j]
        cos[m] = dot / (norms[0] * norms[m])
        top = max(top, scale * cos[m])
    total = 0.0
    for m in range(1, k):
        g[m] = math.exp(scale * cos[m] - top)
        total += g[m]
    log_total = math.log(total)
    loss = 0.0
    t_pos = 1.0 / n_pos
    for m in range(1, k):
        p = g[m] / total
        if m <= n_pos:
            loss -= t_pos * (scale * cos[m] - top - log_total)
            g[m] = scale * (p - t_pos)
        else:
            g[m] = scale * p
    gi = grads[0]
    gi[:] = 0.0
    a_i = 0.0
    for m in range(1, k):
        a = np.float32(g[m] / (norms[0] * norms[m]))
        b = np.float32(g[m] * cos[m] / (norms[m] * norms[m]))
        a_i += g[m] * cos[m]
        for j in range(d):
            gi[j] += a * means[m, j]
            grads[m, j] = a * si[j] - b * means[m, j]
    b_i = np.float32(a_i / (norms[0] * norms[0]))
    for j in range(d):
        gi[j] -= b_i * si[j]
    return loss


@njit(cache=True, nogil=True, fastmath=True)
def in_sentence_step(W, Wo, a, keep, table, tokens, start, stop, lr, weight, n_neg, turn, state, buffers):
    """Sent2Vec's term over one sentence, one SGD step; returns its loss.

    Each word ``w_i`` (subsampled with ``keep``) is predicted from ``u_i``, the average of the
    other words' unweighted rows ``W[w] / a[w]``, against ``n_neg`` noise words
    (:func:`scbow.kernels.cpu.sgns_row`, output rows stepped at once with ``lr``). Each
    context row then moves by ``-lr * weight * a[w] * sum_{i != j} dL/du_i / (n - 1)``: SGD on
    the unweighted rows, from the gradients at the rows before this step; with ``turn`` each
    row is then put back to its length before the step (the product's skip-gram term does so).
    """
    S, u, e, E, row = buffers
    stop = min(stop, start + MAX_WORDS)
    n = stop - start
    if n < 2:
        return 0.0
    d = W.shape[1]
    S[:] = 0.0
    for t in range(start, stop):
        w = tokens[t]
        inv = np.float32(1.0 / a[w])
        for j in range(d):
            S[j] += W[w, j] * inv
    inv_n = np.float32(1.0 / (n - 1))
    loss = 0.0
    E[n, :] = 0.0  # E[n]: the sum over every predicted word; E[i]: word i's own part
    for i in range(n):
        w = tokens[start + i]
        E[i, :] = 0.0
        p = keep[w]
        if p < 1.0 and (next_random(state) % 16777216) >= p * 16777216.0:
            continue
        inv = np.float32(1.0 / a[w])
        for j in range(d):
            u[j] = (S[j] - W[w, j] * inv) * inv_n
            e[j] = 0.0
        draw_noise(w, n_neg, table, state, row)
        loss += sgns_row(u, Wo, row, n_neg, -lr, Wo, e)
        for j in range(d):
            E[i, j] = e[j]
            E[n, j] += e[j]
    c = np.float32(-lr * weight) * inv_n
    for i in range(n):
        w = tokens[start + i]
        s = c * a[w]
        if not turn:
            for j in range(d):
                W[w, j] += s * (E[n, j] - E[i, j])
            continue
        # as the product's skip-gram term: the step only turns the row (put back to its
        # length after it), so the frequency weights keep their meaning in the average
        old = 0.0
        new = 0.0
        for j in range(d):
            x = W[w, j]
            y = x + s * (E[n, j] - E[i, j])
            old += x * x
            new += y * y
            u[j] = y
        fix = math.sqrt(old / new) if new > 0 else 1.0
        for j in range(d):
            W[w, j] = u[j] * fix
    return loss


@njit(cache=True, nogil=True, fastmath=True)
def proto_chunk(W, B, Wo, a, keep, table, tokens, offsets, sent_doc, doc_offsets, order, rate, rate_b, hp, seed,
                lo, hi, c):
    V, d = W.shape
    n_neg = int(hp[2])
    neg_mode = int(hp[3])
    scale = hp[4]
    s2v_weight = hp[5]
    buckets = int(hp[8])
    drop = hp[9]
    k_max = 3 + n_neg
    members = np.empty(k_max, dtype=np.int64)
    feats = np.empty((k_max, 2 * MAX_WORDS), dtype=np.int64)
    nfe = np.zeros(k_max, dtype=np.int64)
    means = np.empty((k_max, d), dtype=np.float32)
    grads = np.empty((k_max, d), dtype=np.float32)
    work = np.empty((3, k_max), dtype=np.float64)
    s2v = (np.empty(d, dtype=np.float32), np.empty(d, dtype=np.float32), np.empty(d, dtype=np.float32),
           np.empty((MAX_WORDS + 1, d), dtype=np.float32), np.empty(1 + int(hp[7]), dtype=np.int32))
    state = np.empty(1, dtype=np.uint64)
    seed_state(seed, c, state)
    loss = 0.0
    span = max(hi - lo, 1)
    for e in range(lo, hi):
        k, n_pos = fill_example(order[e], sent_doc, doc_offsets, n_neg, neg_mode, state, members)
        if n_pos == 0:
            continue
        frac = (e - lo) / span
        lr = max(hp[1], hp[0] * (1.0 - frac))
        for m in range(k):
            s = members[m]
            nfe[m] = features(tokens, offsets[s], offsets[s + 1], V, buckets, drop, state, feats[m])
        loss += proto_forward(W, B, feats, nfe, k, n_pos, scale, means, grads, work)
        for m in range(k):
            base = np.float32(-lr / nfe[m])
            gm = grads[m]
            for i in range(nfe[m]):
                f = feats[m, i]
                if f < V:
                    s = base * rate[f]
                    for j in range(d):
                        W[f, j] += s * gm[j]
                else:
                    s = base * rate_b
                    for j in range(d):
                        B[f - V, j] += s * gm[j]
        if s2v_weight > 0.0:
            t = members[0]
            lr_w = max(hp[6] * 1e-4, hp[6] * (1.0 - frac))
            in_sentence_step(W, Wo, a, keep, table, tokens, offsets[t], offsets[t + 1], lr_w, s2v_weight,
                             int(hp[7]), hp[10] > 0, state, s2v)
    return loss


@njit(parallel=True)
def proto_epoch(W, B, Wo, a, keep, table, tokens, offsets, sent_doc, doc_offsets, order, rate, rate_b, hp, seed,
                chunks):
    """One epoch over ``order``, ``chunks`` Hogwild chunks in parallel; returns the loss sum."""
    n = order.shape[0]
    per = (n + chunks - 1) // chunks
    out = np.zeros(chunks)
    for c in prange(chunks):
        lo = c * per
        hi = min(n, lo + per)
        out[c] = proto_chunk(W, B, Wo, a, keep, table, tokens, offsets, sent_doc, doc_offsets, order, rate,
                             rate_b, hp, seed, lo, hi, c)
    return out.sum()


# ---------------------------------------------------------------------------------------
# The runs

BASE = {"lr": 0.1, "negatives": 2, "neg_mode": "document", "scale": 1.0, "s2v_weight": 0.0, "s2v_lr": 0.2,
        "s2v_negatives": 10, "s2v_sample": 1e-4, "s2v_turn": 1, "buckets": 0, "drop": 0.0}
# (idea, label, overrides of BASE); a temperature tau is scale = 1 / tau, its gradient
# scale times the plain one, so its learning rate is tried about 1 / scale of the default too.
GRID = [
    ("baseline", "baseline (the sentence objective alone)", {}),
    ("many negatives", "10 negatives from the corpus, tau 1", {"negatives": 10, "neg_mode": "uniform"}),
    ("many negatives", "10 negatives from the corpus, tau 0.2, lr 0.02", {"negatives": 10, "neg_mode": "uniform",
                                                                          "scale": 5.0, "lr": 0.02}),
    ("many negatives", "10 negatives from the corpus, tau 0.2, lr 0.05", {"negatives": 10, "neg_mode": "uniform",
                                                                          "scale": 5.0, "lr": 0.05}),
    ("many negatives", "20 negatives from the corpus, tau 0.1, lr 0.01", {"negatives": 20, "neg_mode": "uniform",
                                                                          "scale": 10.0, "lr": 0.01}),
    ("many negatives", "20 negatives from the corpus, tau 0.1, lr 0.02", {"negatives": 20, "neg_mode": "uniform",
                                                                          "scale": 10.0, "lr": 0.02}),
    ("many negatives", "20 negatives from the corpus, tau 0.05, lr 0.005", {"negatives": 20, "neg_mode": "uniform",
                                                                            "scale": 20.0, "lr": 0.005}),
    ("in-sentence term", "in-sentence term, weight 0.01, rows free to stretch", {"s2v_weight": 0.01, "s2v_turn": 0}),
    ("in-sentence term", "in-sentence term, weight 0.1, rows free to stretch", {"s2v_weight": 0.1, "s2v_turn": 0}),
    ("in-sentence term", "in-sentence term, weight 0.001", {"s2v_weight": 0.001}),
    ("in-sentence term", "in-sentence term, weight 0.01", {"s2v_weight": 0.01}),
    ("in-sentence term", "in-sentence term, weight 0.1", {"s2v_weight": 0.1}),
    ("bigrams", "bigrams, 2M buckets, no dropout", {"buckets": 2_000_000}),
    ("bigrams", "bigrams, 2M buckets, dropout 0.2", {"buckets": 2_000_000, "drop": 0.2}),
    ("bigrams", "bigrams, 2M buckets, dropout 0.5", {"buckets": 2_000_000, "drop": 0.5}),
]


def hyper(opts: dict) -> np.ndarray:
    mode = {"document": NEG_DOCUMENT, "uniform": NEG_UNIFORM}[opts["neg_mode"]]
    values = {**opts, "neg_mode": mode, "lr_min": opts["lr"] * TrainConfig().min_lr_fraction}
    return np.array([float(values[h]) for h in HP], dtype=np.float64)


def train_prototype(corpus, opts: dict, threads: int, seed: int = 1):
    """Train one prototype; returns ``(W, B, seconds)`` (B: bigram rows, shape (buckets, d), or (0, d))."""
    from scbow.training.start import (
        corpus_weights,
        init_vectors,
        keep_probabilities,
        noise_table,
        output_biases,
        step_rates,
        trainable_targets,
    )

    cfg = TrainConfig(seed=seed)
    weights = corpus_weights(corpus, cfg)
    W = init_vectors(len(corpus.vocab), cfg, weights)
    rate = step_rates(weights, corpus.vocab.counts, cfg)
    counts = np.asarray(corpus.vocab.counts, dtype=np.float64)
    B = np.zeros((int(opts["buckets"]), cfg.dim), dtype=np.float32)
    rate_b = float(np.average(rate, weights=counts))  # a bigram row steps as the average token's row
    raw = corpus.stats.get("raw_tokens") or int(counts.sum())
    keep = keep_probabilities(counts, raw, opts["s2v_sample"])
    if opts["s2v_weight"] > 0:
        Wo = np.zeros((len(corpus.vocab), cfg.dim + 1), dtype=np.float32)
        Wo[:, -1] = output_biases(counts, keep, int(opts["s2v_negatives"]))
    else:
        Wo = np.zeros((1, cfg.dim + 1), dtype=np.float32)
    table = noise_table(counts)
    a = np.ascontiguousarray(weights, dtype=np.float32)
    order = trainable_targets(corpus)
    np.random.default_rng(seed).shuffle(order)
    t0 = time.perf_counter()
    proto_epoch(W, B, Wo, a, keep, table, corpus.tokens, corpus.offsets, corpus.sent_doc, corpus.doc_offsets,
                order, rate, np.float32(rate_b), hyper(opts), seed, max(threads, 1) * 8)
    return W, B, time.perf_counter() - t0


class BigramModel:
    """A model whose sentence average also holds its bigram rows (the ``bigrams`` prototype).

    The average is over the sentence's tokens (unknown ones hashed, as the product's model
    does) and the bigrams of consecutive known words, each a row of ``B``.
    """

    def __init__(self, model, B):
        self.model, self.B, self.V = model, B, len(model.vocab)

    def embed(self, sentences) -> np.ndarray:
        from scbow.text.tokenize import tokenize

        base = self.model.embed(sentences).astype(np.float64)
        out = np.empty_like(base)
        index = self.model.vocab.index
        for n, sentence in enumerate(sentences):
            toks = tokenize(sentence)
            ids = [index[t] for t in toks if t in index]
            rows = [bigram_row(w1, w2, len(self.B)) for w1, w2 in zip(ids, ids[1:])]
            total = base[n] * len(toks) + (self.B[rows].sum(axis=0) if rows else 0.0)
            out[n] = total / max(len(toks) + len(rows), 1)
        return out


def score(corpus, W, B, dev, sets):
    from scbow.training.postprocess import CommonComponents
    from scbow.vectors.model import Model

    from .quality import Scored

    cfg = TrainConfig()
    mean, U = CommonComponents(corpus, cfg.components_removed, cfg.seed).fit(W)
    W = np.array(W, dtype=np.float32)
    CommonComponents.apply_rows(W, mean, U)
    model = Model(corpus.vocab, W, {"unknown": cfg.unknown, "unknown_scale": cfg.unknown_scale})
    if len(B):
        B = np.array(B, dtype=np.float32)
        # the same affine map as the word rows: the average of mapped rows is the mapped average
        CommonComponents.apply_rows(B, mean, U)
        return Scored(BigramModel(model, B).embed, dev, sets)
    return Scored(model.embed, dev, sets)


def main(argv=None) -> None:
    from scbow.training.corpus import load_corpus
    from scbow.training.trainer import train
    from scbow.use.evaluate import read_sts

    from .quality import Scored, dev_path, sts_sets

    ap = argparse.ArgumentParser(prog="python -m benchmarks.run prototypes", description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="10M")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", default="", help="semicolon-separated labels of the grid to run (all by default)")
    ap.add_argument("--out", default="benchmarks/results/prototypes")
    ap.add_argument("--into", metavar="JSON", default=None,
                    help="also add the table as a section of this report (search.json) and rewrite its markdown")
    args = ap.parse_args(argv)
    if args.threads < 1:
        ap.error(f"--threads {args.threads}: at least 1")
    if args.into and not Path(args.into).is_file():
        ap.error(f"--into {args.into}: no such report (benchmarks/results/search.json is the one meant)")
    grid = GRID
    if args.only:
        want = [s.strip() for s in args.only.split(";") if s.strip()]
        grid = [g for g in GRID if g[1] in want or g[1].split(" (")[0] in want]
        if not grid:
            ap.error(f"--only matched nothing; labels: {'; '.join(g[1] for g in GRID)}")
    path = corpus_path(args.corpus)
    corpus = load_corpus([path], TrainConfig().min_count, 0)
    dev, sets = read_sts(dev_path()), sts_sets()
    rows = []
    t0 = time.perf_counter()
    product = train(corpus, TrainConfig(threads=args.threads, word_passes=0), quiet=True)
    s = Scored(product.model.embed, dev, sets)
    rows.append({"idea": "product", "label": "the product's defaults (scbow.train)", "dev_pearson": s.dev["pearson"],
                 "test_pearson_mean": s.mean, "train_seconds": time.perf_counter() - t0, "settings": {}})
    say(f"product defaults: dev {s.dev['pearson']:.4f} test {s.mean:.4f}")
    for idea, label, over in grid:
        opts = {**BASE, **over}
        W, B, secs = train_prototype(corpus, opts, args.threads)
        s = score(corpus, W, B, dev, sets)
        rows.append({"idea": idea, "label": label, "dev_pearson": s.dev["pearson"], "test_pearson_mean": s.mean,
                     "train_seconds": secs, "settings": over})
        say(f"{label}: dev {s.dev['pearson']:.4f} test {s.mean:.4f} ({secs:.0f} s)")
    result = {"corpus": args.corpus, "threads": args.threads, "base": BASE, "rows": rows,
              "context": context(threads=args.threads)}
    publish(result, f"# Objective prototypes on {args.corpus}\n\n" + section_markdown(result, level=2), args,
            "objective_prototypes")


def publish(result: dict, md: str, args, key: str) -> None:
    """Write the report to ``args.out``; with ``args.into`` also store it as ``key`` of that
    search report (``search.json``) and rewrite its markdown, where it is a section."""
    json_path, md_path = write_report(Path(args.out), result, md)
    say(f"wrote {json_path} and {md_path}")
    if args.into:
        json_path, md_path = add_section(Path(args.into), key, result)
        say(f"added the section to {json_path} and {md_path}")


def section_markdown(result: dict, level: int = 2) -> str:
    """The prototypes' table and machine, as a report or as a section of ``search.md``."""
    rows = result["rows"]
    base = next((r for r in rows if r["idea"] == "baseline"), None)
    table = [(r["idea"], r["label"], f"{r['dev_pearson']:.4f}",
              "-" if base is None or r is base or r["idea"] == "product" else f"{r['dev_pearson'] - base['dev_pearson']:+.4f}",
              f"{r['test_pearson_mean']:.4f}", f"{r['train_seconds']:.0f}") for r in rows]
    h = "#" * level
    return "\n\n".join([
        f"{h} Objective prototypes ({result['corpus']}, `benchmarks/prototypes.py`)",
        __doc__.split("\n\n", 2)[2].split("\n\nThe prototype's")[0].strip(),
        "The `baseline` row is the sentence objective alone in the prototype kernel; each idea's dev change is "
        "against it. Chosen on STS-B dev only; the 19-set test mean is shown, not used. A row's seconds are its "
        "training's wall time (the first prototype row's include compiling the kernel; the product's row, its "
        "whole `train` call).",
        md_table(("idea", "setting", "STS-B dev", "dev vs baseline", "test mean (19 sets)", "train s"), table),
        f"Regenerate: `python -m benchmarks.run prototypes --corpus {result['corpus']} --threads {result['threads']}`"
        " (`--into benchmarks/results/search.json` also rewrites this section of `search.md`)",
        machine_section(result["context"], level + 1),
    ])


if __name__ == "__main__":
    sys.exit(main())
