"""The word part's settings, chosen on STS-B dev: passes, width, subsampling and mix.

    python -m benchmarks.run word_part --corpus 100M --variants 3x300,5x150 --threads 2
    python -m benchmarks.run word_part --corpus 10M --variants 3x300 --samples 1e-5,1e-4,1e-3

Each variant is ``PASSESxWIDTH``; each is trained by the product (``scbow.training.trainer.train``
with ``word_passes`` and ``word_dim``, the other settings at their defaults), once per
subsampling threshold. The mix is a scalar on the word columns, so every mix of
:data:`MIXES` is scored from one training. Per row: STS-B dev (what chooses), the 19-set test
mean (shown, not used), WordSim-353 and SimLex-999 (Spearman on the word columns), the wall
time of the word part, and what the width costs (the model's bytes, the sentences embedded per
second). The report is ``benchmarks/results/word_part_search.{md,json}``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from .common import context, context_markdown, md_table, say, write_report

MIXES = (0.25, 0.4, 0.5, 0.6, 0.75, 1.0)


def parse_variants(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split(","):
        passes, _, width = item.strip().partition("x")
        out.append((int(passes), int(width)))
    return out


def embed_rate(model, sentences) -> float:
    t = time.perf_counter()
    for _ in range(3):
        model.embed(sentences)
    return 3 * len(sentences) / (time.perf_counter() - t)


def main(argv=None) -> None:
    from types import SimpleNamespace

    from scbow.config import TrainConfig
    from scbow.training import wordpart
    from scbow.training.trainer import train
    from scbow.use.evaluate import read_sts
    from scbow.vectors.model import Model

    from . import quality as q

    ap = argparse.ArgumentParser(prog="python -m benchmarks.run word_part", description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default="100M")
    ap.add_argument("--variants", default="3x300", help="PASSESxWIDTH, comma-separated")
    ap.add_argument("--samples", default="rule",
                    help="subsampling thresholds, comma-separated; 'rule': the product's (wordpart.sample_threshold)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="benchmarks/results/word_part_search")
    args = ap.parse_args(argv)

    label, path = q.resolve_corpus(args.corpus)
    corpus, _, encoding = q.encode_corpus(path, TrainConfig().min_count)
    dev, sets = read_sts(q.dev_path()), q.sts_sets()
    sentences = [s for pair in zip(dev.first, dev.second) for s in pair]
    rows = []
    base = TrainConfig(threads=args.threads)
    alone = None
    rule = wordpart.sample_threshold
    for sample in [x.strip() for x in args.samples.split(",")]:
        if sample == "rule":
            wordpart.sample_threshold = rule
            sample = rule(corpus.stats.get("raw_tokens") or int(np.asarray(corpus.vocab.counts).sum()))
        else:
            sample = float(sample)
            wordpart.sample_threshold = lambda raw, s=sample: s
        for passes, width in [(0, 0)] * (alone is None) + parse_variants(args.variants):
            cfg = base.replace(word_passes=passes, word_dim=width or base.word_dim, word_mix=1.0)
            t0 = time.perf_counter()
            result = train(corpus, cfg, quiet=True)
            wall = time.perf_counter() - t0
            M = np.asarray(result.model.vectors)
            d = cfg.dim
            for mix in (MIXES if passes else (0.0,)):
                rows_now = M.copy() if passes else M
                if passes:
                    rows_now[:, d:] *= np.float32(mix)
                model = Model(corpus.vocab, rows_now, result.model.config, result.model.info)
                scored = q.Scored(model.embed, dev, sets)
                ws = q.word_similarity({"m": SimpleNamespace(M=np.asarray(model.word_vectors))}, corpus.vocab)
                row = {"sample": sample if passes else None, "passes": passes, "width": width, "mix": mix,
                       "dev_pearson": scored.dev["pearson"], "test_pearson_mean": scored.mean,
                       "wordsim353": ws["WordSim-353"]["spearman"]["m"], "simlex999": ws["SimLex-999"]["spearman"]["m"],
                       "train_wall_seconds": round(wall, 1),
                       "word_part_seconds": (result.model.info["training"].get("word_part") or {}).get("kernel_seconds"),
                       "model_mb": round(M.nbytes / 2**20, 1),
                       "embed_sentences_per_second": round(embed_rate(model, sentences))}
                rows.append(row)
                say(f"sample {sample:g} passes {passes} width {width} mix {mix}: dev {row['dev_pearson']:.4f} "
                    f"test {row['test_pearson_mean']:.4f} WordSim {row['wordsim353']:.3f} SimLex {row['simlex999']:.3f} "
                    f"({wall:.0f} s)")
            if passes == 0:
                alone = rows[-1]
    best = max(rows, key=lambda r: r["dev_pearson"])
    best["chosen"] = True
    result = {"corpus": label, "threads": args.threads, "encoding": encoding, "rows": rows,
              "context": context(threads=args.threads)}
    write_report(args.out, result, markdown(result), echo=True)


def markdown(result: dict) -> str:
    rows = result["rows"]
    table = [[("-" if r["sample"] is None else f"{r['sample']:g}") + (" (chosen)" if r.get("chosen") else ""),
              r["passes"], r["width"] or "-", r["mix"], f"{r['dev_pearson']:.4f}", f"{r['test_pearson_mean']:.4f}",
              f"{r['wordsim353']:.3f} / {r['simlex999']:.3f}", r["word_part_seconds"] or "-",
              r["train_wall_seconds"], r["model_mb"], f"{r['embed_sentences_per_second']:,}"] for r in rows]
    return (f"# The word part's settings on {result['corpus']}\n\n"
            "Each variant trained by `scbow-numba train`'s trainer with the other settings at their defaults; "
            "the mix scored from one training (a scalar on the word columns). STS-B dev chooses (bold); the "
            "19-set test mean and the word sets (Spearman of the word columns' cosines) are shown, not used. "
            "Passes 0 is the sentence part alone. Times on the wall clock of this machine, "
            f"{result['threads']} threads; embed speed: the 3,000 STS-B dev sentences through `Model.embed`.\n\n"
            + md_table(["sample", "passes", "width", "mix", "STS-B dev", "test mean (19)", "WordSim / SimLex",
                        "word part s", "train wall s", "model MB", "embed sent/s"], table)
            + "\n\nRegenerate: `python -m benchmarks.run word_part --corpus " + result["corpus"] + " ...`\n\n"
            + context_markdown(result["context"]))


if __name__ == "__main__":
    main()
