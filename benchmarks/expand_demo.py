"""Vocabulary expansion and pretrained starts from gensim word2vec vectors, on the STS-B dev set.

Trains a default Siamese CBOW model on a corpus (min count 5), and gensim word2vec (CBOW)
vectors on the same corpus, tokenized by our tokenizer, with min count 1, so that the
word2vec space knows every word of the corpus and ours only the frequent ones. Then:

- expands our model from the word2vec vectors (``scbow.training.pretrained.expand_vocabulary``:
  a linear map fitted on the shared words), with all new words or only the most frequent,
  and scores the STS-B dev set (never the test sets) before and after, with the dev
  set's token coverage and the pairs that get a score;
- trains again with ``init=`` the word2vec vectors (``train --init-vectors``), rescaled to
  the random init's scale (the default) and as they are.

    python -m benchmarks.run expand_demo [--corpus 10M] [--threads 1] [--model DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from scbow.config import TrainConfig
from scbow.text.tokenize import tokenize, tokenize_lines
from scbow.training.corpus import load_corpus, open_text, read_corpus
from scbow.training.pretrained import expand_vocabulary, pretrained_init
from scbow.training.trainer import train
from scbow.use.evaluate import read_sts, score_set
from scbow.vectors.formats import load_model
from scbow.vectors.model import Model
from scbow.vectors.modeldir import save_model

from .common import REPO_ROOT, context, context_markdown, corpus_path, data_dir, md_table, say, write_report


def tokenized_copy(src: Path, dst: Path) -> int:
    """Our tokenizer's tokens of every non-empty line of ``src``, space-joined, one line each."""
    n = 0
    tmp = dst.with_suffix(".tmp")
    with open_text(src) as fh, open(tmp, "w", encoding="utf-8") as out:
        while True:
            lines = fh.readlines(1 << 22)
            if not lines:
                break
            text = " ".join(tokenize_lines("".join(lines)))
            for line in text.split("\n"):
                line = line.strip()
                if line:
                    out.write(line + "\n")
                    n += 1
    tmp.replace(dst)
    return n


def word2vec_vectors(corpus: Path, work: Path, args) -> Path:
    out = work / f"w2v-{args.corpus}-mc{args.w2v_min_count}-d{args.dim}-e{args.w2v_epochs}.bin"
    if out.exists():
        say(f"word2vec vectors: reusing {out}")
        return out
    from gensim.models import Word2Vec

    tokens = work / f"tokens-{args.corpus}.txt"
    if not tokens.exists():
        say(f"tokenizing {corpus} -> {tokens}")
        tokenized_copy(corpus, tokens)
    say(f"training gensim word2vec (min_count={args.w2v_min_count}, {args.dim} dims, {args.w2v_epochs} epochs, "
        "1 worker)")
    t0 = time.perf_counter()
    w2v = Word2Vec(corpus_file=str(tokens), vector_size=args.dim, min_count=args.w2v_min_count,
                   epochs=args.w2v_epochs, workers=1, seed=args.seed)
    w2v.wv.save_word2vec_format(str(out), binary=True)
    say(f"  {len(w2v.wv):,} words in {time.perf_counter() - t0:.0f} s")
    return out


def dev_row(name: str, model: Model, dev, extra: dict | None = None) -> dict:
    tokens = [t for s in dev.first + dev.second for t in tokenize(s)]
    known = sum(t in model.vocab.index for t in tokens)
    types = set(tokens)
    score = score_set(model.embed, dev)
    row = {"model": name, "vocab": len(model), "dev_token_coverage": round(known / len(tokens), 4),
           "dev_type_coverage": round(sum(t in model.vocab.index for t in types) / len(types), 4),
           "pairs_scored": score.scored, "pairs": score.pairs,
           "pearson": round(score.pearson, 4), "spearman": round(score.spearman, 4), **(extra or {})}
    say("  " + ", ".join(f"{k} {v}" for k, v in row.items()))
    return row


def reading(rows: list[dict]) -> str:
    """The numbers that say why the expansion does what it does, in one paragraph."""
    by = {r["model"]: r for r in rows}
    full = by["ours expanded: all new words"]
    scaled = by["diagnostic: all new words, mapped vectors scaled to our median norm"]
    norms = scaled["norm_medians"]
    rand = [r["pearson"] for r in rows if r["model"].startswith("diagnostic: all new words, random directions")]
    return (
        "## Reading the diagnostics\n\n"
        f"The least-squares map explains R2 = {full['r2']} of the variance of our vectors, and mapped and true "
        f"vectors of held-out shared words have a mean cosine of {full['heldout_cosine']}. Least squares then "
        f"predicts close to the mean: the added vectors have a median norm of {norms['added_median']:.2e} against "
        f"{norms['ours_median']:.2e} for ours ({norms['ours_median'] / norms['added_median']:.0f}x shorter), so they "
        f"hardly move an average (Pearson {rows[0]['pearson']} -> {full['pearson']}). The two diagnostic rows "
        f"(not features) stretch the added vectors to our median norm: the mapped directions score {scaled['pearson']}, "
        f"random directions of the same length {min(rand)} to {max(rand)} over {len(rand)} seeds. " + (
            "The mapped directions are within the spread of random ones: what the stretched vectors gain is what "
            "any distinct vector per new word gains (a rare word shared by two sentences counts as overlap), not "
            "what the map carries." if min(rand) - 0.005 <= scaled["pearson"] <= max(rand) + 0.005 else
            f"The mapped directions score {'above' if scaled['pearson'] > max(rand) else 'below'} random ones."))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.run expand_demo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="10M", choices=("1M", "10M", "100M"))
    ap.add_argument("--threads", type=int, default=1, help="training threads (1 leaves a core to others)")
    ap.add_argument("--model", type=Path, default=None, help="an already trained model of the corpus (default: train one)")
    ap.add_argument("--dim", type=int, default=TrainConfig().dim)
    ap.add_argument("--w2v-min-count", type=int, default=1)
    ap.add_argument("--w2v-epochs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-init", action="store_true", help="skip the two --init-vectors trainings")
    ap.add_argument("--work", type=Path, default=REPO_ROOT / "benchmarks" / ".work" / "expand")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "expand")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    ctx = context()
    corpus_file = corpus_path(args.corpus)
    dev = read_sts(data_dir() / "sts-dev" / "stsb.dev.tsv")
    config = TrainConfig(dim=args.dim, threads=args.threads, seed=args.seed)

    if args.model is not None:
        ours = load_model(args.model, mmap=False)
        say(f"our model: {args.model}")
    else:
        say(f"training our model on {corpus_file} ({args.threads} thread(s))")
        ours = train(read_corpus([corpus_file], config.min_count, config.max_vocab, quiet=True), config, quiet=True).model
        save_model(ours, args.work / f"ours-{args.corpus}")
    w2v_path = word2vec_vectors(corpus_file, args.work, args)
    w2v = load_model(w2v_path)

    say("STS-B dev:")
    rows = [dev_row("ours (min count 5)", ours, dev), dev_row("word2vec alone (min count 1)", w2v, dev)]
    expansions = []
    variants = [("all new words", 0, False), ("all new words, affine map", 0, True),
                ("first 20,000 new words", 20_000, False), ("first 5,000 new words", 5_000, False)]
    for label, max_words, intercept in variants:
        t0 = time.perf_counter()
        expanded, report = expand_vocabulary(ours, w2v, max_words=max_words, intercept=intercept,
                                             source_name=w2v_path.name)
        report["seconds"] = round(time.perf_counter() - t0, 2)
        expansions.append({"variant": label, **report})
        rows.append(dev_row(f"ours expanded: {label}", expanded, dev,
                            {"shared": report["shared"], "added": report["added"], "r2": round(report["r2"], 4),
                             "heldout_cosine": round(report["heldout_cosine"], 4)}))
        if label == "all new words":
            # diagnostic, not a feature: do the mapped directions help once they are as long as ours?
            V = np.array(expanded.vectors, dtype=np.float32)
            old = np.linalg.norm(V[: len(ours)], axis=1)
            new = np.linalg.norm(V[len(ours):], axis=1, keepdims=True)
            norms = {"ours_median": float(np.median(old)), "added_median": float(np.median(new))}
            V[len(ours):] *= np.median(old) / np.maximum(new, 1e-30)
            rows.append(dev_row("diagnostic: all new words, mapped vectors scaled to our median norm",
                                Model(expanded.vocab, V), dev, {"norm_medians": norms}))
            # ... and random directions of that length: what any distinct vector per new word gives
            for seed in range(3):
                R = np.random.default_rng(seed).standard_normal(V[len(ours):].shape)
                V[len(ours):] = R * (np.median(old) / np.linalg.norm(R, axis=1, keepdims=True))
                rows.append(dev_row(f"diagnostic: all new words, random directions of our median norm (seed {seed})",
                                    Model(expanded.vocab, V), dev))

    if not args.no_init:
        corpus = load_corpus([corpus_file], config.min_count, config.max_vocab)
        for label, rescale in (("init from word2vec, rescaled (default)", True),
                               ("init from word2vec, not rescaled", False)):
            say(f"training: {label}")
            info = {}

            def init(vocab, rescale=rescale, info=info):
                W, summary = pretrained_init(vocab, w2v, config, name=w2v_path.name, rescale=rescale)
                info.update(summary)
                return W

            t0 = time.perf_counter()
            model = train(corpus, config, quiet=True, init=init).model
            rows.append(dev_row(f"ours, {label}", model, dev,
                                {"rows_initialised": info["rows_initialised"], "train_seconds":
                                 round(time.perf_counter() - t0, 1)}))

    head = ["model", "vocab", "dev token coverage", "pairs scored", "Pearson", "Spearman", "notes"]

    def notes(r):
        keys = ("shared", "added", "r2", "heldout_cosine", "rows_initialised")
        return ", ".join(f"{k} {r[k]:,}" if isinstance(r[k], int) else f"{k} {r[k]}" for k in keys if k in r)

    table = [[r["model"], f"{r['vocab']:,}", f"{100 * r['dev_token_coverage']:.2f}%",
              f"{r['pairs_scored']} / {r['pairs']}", r["pearson"], r["spearman"], notes(r)] for r in rows]
    base = rows[0]
    markdown = "\n\n".join([
        f"# Vocabulary expansion and pretrained starts, STS-B dev, gutenberg-{args.corpus}",
        f"Command: `python -m benchmarks.run expand_demo --corpus {args.corpus} --threads {args.threads}"
        + (f" --model {args.model}`: a model trained beforehand with the defaults and --threads 1 (with one "
           "thread, the run this script would make)." if args.model else "`."),
        f"Our model: TrainConfig defaults (min count {config.min_count}, {config.dim} dims, "
        f"{config.epochs} epochs), {args.threads} thread(s). word2vec: gensim CBOW on the same corpus "
        f"tokenized by our tokenizer, min count {args.w2v_min_count}, {args.dim} dims, {args.w2v_epochs} epochs, "
        "1 worker. Expansion: least-squares map from the word2vec space into ours fitted on the shared words "
        "(r2: variance of our vectors explained; heldout_cosine: mean cosine of mapped and true vectors on a "
        "held-out tenth of the shared words, fitted without them). 'first N new words': the N most frequent "
        "word2vec words we lack. Init rows: our vocabulary's rows that start from the word2vec vectors. "
        "Dev token coverage: share of the dev set's tokens that are in the vocabulary. One run each; runs "
        "of the trainer differ by about 0.01 (README).",
        md_table(head, table),
        f"Coverage gained by expanding with every new word: dev tokens {100 * base['dev_token_coverage']:.2f}% -> "
        f"{100 * rows[2]['dev_token_coverage']:.2f}%, pairs scored {base['pairs_scored']} -> "
        f"{rows[2]['pairs_scored']}, Pearson {base['pearson']} -> {rows[2]['pearson']}.",
        reading(rows),
        context_markdown(ctx),
    ])
    write_report(args.out, {"corpus": args.corpus, "threads": args.threads, "rows": rows,
                            "expansions": expansions, "context": ctx}, markdown)
    say(f"wrote {args.out}.md")


if __name__ == "__main__":
    main()
