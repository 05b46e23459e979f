"""The speed suite's report: its JSON record rendered as Markdown (benchmarks/results/speed.md)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from .common import RESULTS_DIR, context_markdown, human, md_table


def _s(st: dict, fmt=human) -> tuple:
    return fmt(st["median"]), fmt(st["min"]), fmt(st["max"]), f"{st['spread']:.0%}" if st["spread"] is not None else ""


def mib(nbytes) -> str:
    return "n/a" if nbytes is None else f"{nbytes / 2**20:.0f} MiB"


def _sec(x):
    return f"{x:.3f}"


def render(r: dict) -> str:
    from .speed import DEFINITIONS, GENSIM_FILED, PAPER_DIM, SECTIONS  # the suite's own constants

    s = r["settings"]
    parts = [
        "# Speed benchmark",
        f"`{' '.join(r['context']['command'])}`: corpus **{s['corpus']}**, dim {s['dim']}, threads {s['threads']}, "
        f"{s['repeats']} repeat(s) (median, min, max and spread over them), end to end and memory on "
        f"{s['e2e_threads']} threads. Harness wall time {r['harness_seconds']:.0f} s. Load average (1/5/15 min) at the "
        f"start {r['context']['machine']['load_average_1_5_15']}, at the end {r['load_average_at_end']}: a machine "
        "shared with other work gives noisy absolute figures, so the targets are judged on ratios from this one run.",
    ]
    if s["quick"]:
        parts.append("**Quick run** (`--quick`): a small corpus and one repeat, to check the plumbing; its figures "
                     "are not the project's.")
    rows = []
    for t in r["targets"]:
        met = "not measured" if t["met"] is None else ("**yes**" if t["met"] else "**no**")
        note = t["bound"] if t["met"] is False or t["met"] is None else ""
        if t["context"]:
            note = (note + "; " if note else "") + t["context"]
        rows.append((t["target"], t["goal"], t["measured"], met, note))
    parts.append("## Targets\n\n" + md_table(("target", "goal", "measured", "met", "what bounds it / context"), rows))

    k = r.get("kernel")
    if k:
        c = k["compile"]
        parts.append(
            f"## Training kernel\n\nOne epoch of {k['targets_per_epoch']:,} targets "
            f"({k['mean_tokens_per_target']:.2f} kept tokens per target) through the real CPU backend, in the "
            f"trainer's batches of {k['batch']:,} targets as `scbow.training.trainer.train` drives them; its `run` calls "
            "timed.\n\n"
            + md_table(("kernel", "threads", "examples/s median", "min", "max", "spread", "corpus tokens/s", "scaling",
                        "efficiency"),
                       [(row["kernel"], row["threads"], *_s(row["examples_per_s"]), human(row["corpus_tokens_per_s"]),
                         row.get("scaling", ""), row.get("efficiency", "")) for row in k["rows"].values()])
            + "\n\nCompile (the first backend built and run on a tiny batch, apart from the figures above): "
            f"1 thread {c['serial_first_call_seconds']} s "
            f"({'kernels loaded from the on-disk cache' if c['serial_cache']['hit'] else 'kernels compiled'}), "
            + (f"{c['parallel_threads']} threads {c['parallel_first_call_seconds']} s (Python threads running the "
               "same cached chunk kernel: nothing left to compile)." if c["parallel_first_call_seconds"] is not None
               else "no run on several threads."))
        t = k["torch"]
        if t["rows"]:
            w = t["worker"]
            parts.append(
                "## PyTorch implementation of the same objective\n\n"
                f"`benchmarks/torch_scbow.py`, torch {w['torch']}: EmbeddingBag means, cosine softmax, autograd, "
                f"plain SGD on the batch-mean loss (weight decay included), batch {w['batch_size']}, "
                f"{'sparse' if w['sparse'] else 'dense'} gradients, `torch.set_num_threads(threads)`; "
                f"{t['batches_timed']} batches timed after {t['warmup_batches']} warm-up batches, batches built "
                "before the clock starts. Same examples as the kernel (target, neighbours, negatives from the "
                "document). The peer computes the paper's plain objective: the per-word step factors of the "
                "frequency weights are one multiply per row in the kernel and are left out of it."
                + (f" Checked before timing: its loss and gradient on {w['oracle_check']['examples']} examples "
                   f"match `scbow.reference` (largest relative error {w['oracle_check']['max_loss_rel_err']:.1e} in "
                   f"the loss, {w['oracle_check']['max_grad_rel_err']:.1e} in the gradient)."
                   if w.get("oracle_check") else "") + "\n\n"
                + md_table(("threads", "examples/s median", "min", "max", "spread", "kernel / torch"),
                           [(row["threads"], *_s(row["examples_per_s"]), f"{row.get('scbow_over_torch', 'n/a')}x")
                            for row in t["rows"].values()]))
        elif t["note"]:
            parts.append(f"## PyTorch implementation\n\nNot measured: {t['note']}")
        bw = r.get("bandwidth")
        if bw:
            sh = r["example_shape"]
            parts.append(
                "## Bandwidth context\n\n"
                f"{sh['sentences_per_example']} sentences and {sh['tokens_per_example']} tokens per example "
                f"(from {sh['sampled_targets']:,} examples): {bw['bytes_per_example'] / 1e3:.1f} KB of rows per "
                f"example. Matrix {bw['matrix_bytes'] / 1e6:.1f} MB; L3 "
                f"{mib(bw['l3_bytes'])}.\n\n"
                + md_table(("", "GB/s"), [
                    *[(f"kernel rows touched, {row['kernel']} {row['threads']} thread(s)", row["row_gb_per_s"])
                      for row in bw["rows"].values()],
                    (f"np.copyto, {bw['copy_48mb']['bytes'] / 1e6:.0f} MB, 1 thread (read + write)",
                     round(bw["copy_48mb"]["gb_per_s"]["median"], 2)),
                    (f"np.copyto, the matrix ({bw['copy_matrix']['bytes'] / 1e6:.1f} MB), 1 thread",
                     round(bw["copy_matrix"]["gb_per_s"]["median"], 2)),
                ]))

    w = r.get("wordpart")
    if w:
        rows = [(row["threads"], *_s(row["seconds"], _sec), human(row["sentences_per_second"]),
                 human(row["kept_tokens_per_second"]),
                 _sec(row["gensim_seconds"]["median"]) if "gensim_seconds" in row else "n/a",
                 f"{row['gensim_over_scbow']}x" if "gensim_over_scbow" in row else "n/a") for row in w["rows"]]
        gver = next((x.get("gensim") for x in w["runs"] if x["system"] == "gensim"), None)
        parts.append(
            f"## The word part\n\nOne pass of the word part (`scbow.training.wordpart`: skip-gram with negative "
            f"sampling, {w['dim']} dims, window {w['window']}, {w['negatives']} noise words, subsampling threshold "
            f"{w['sample']:g}) over the {w['sentences']:,} sentences ({w['kept_tokens_per_pass']:,} tokens kept "
            "by subsampling in a pass), through `WordPart.run` in the trainer's batches, alternating with one "
            + (f"epoch of gensim {gver}'s skip-gram with the same settings on the same tokens (its `train` call "
               "alone, the vocabulary built before the clock starts)" if gver else "epoch of gensim (not installed)")
            + ".\n\n"
            + md_table(("threads", "seconds median", "min", "max", "spread", "sentences/s", "kept tokens/s",
                        "gensim seconds", "gensim / scbow"), rows)
            + "\n\nA default run makes `word_passes` such passes after the sentence part's epoch (End to end "
            "below shows both parts of a default run).")

    e = r.get("e2e")
    if e:
        rows = []
        for row in e["rows"].values():
            ph = ", ".join(f"{k} {v}" for k, v in row["phases"].items())
            rows.append((row["system"], row["dim"], *_s(row["seconds"], _sec), row.get("over_gensim", "n/a"),
                         _sec(row["process_wall_seconds"]["median"]), ph, f"{row['peak_rss_mib']:.0f}"))
        g = e["rows"].get(f"gensim-{PAPER_DIM}")
        gen = ""
        if g:
            gr = [x for x in e["runs"] if x["system"] == "gensim"]
            gen = (f"\n\ngensim {gr[0]['gensim']} (compiled routines: FAST_VERSION {gr[0]['fast_version']}): "
                   f"{gr[0]['sentences']:,} non-empty lines, {gr[0]['raw_words']:,} raw words after "
                   f"`simple_preprocess`, training at a median "
                   f"{human(statistics.median(x['train_raw_words_per_s'] for x in gr))} raw words/s "
                   f"(before filing: {GENSIM_FILED['seconds']} s, {human(GENSIM_FILED['raw_words_per_s'])} words/s "
                   "on 10M).")
        parts.append(
            f"## End to end\n\nRaw text (`{Path(e['text']).name}`, decompressed once) to a saved model, one epoch, "
            f"{e['threads']} threads, every run a fresh process (scbow with an empty corpus cache). "
            f"{e['order']}.\n\n"
            + md_table(("system", "dim", "seconds median", "min", "max", "spread", "/ gensim", "process wall",
                        "phases (medians, s)", "peak RSS MiB"), rows) + gen
            + "\n\nscbow is the defaults (one epoch of the sentence part, then the word part's passes of "
            "skip-gram); scbow-sentence the sentence part alone (`--word-passes 0`), one pass over the corpus as "
            "gensim's one epoch of CBOW is. scbow's phases: compile = its first training call on a tiny corpus (loads "
            "the kernels from numba's on-disk cache, compiling them when the cache is empty); kernel = the sentence "
            "part; word_part = its skip-gram passes; post_process = the common-component removal and assembling "
            "the rows. gensim's tokenize = "
            "`simple_preprocess` of every line. Process wall = the whole process, interpreter and imports "
            "included.")
    elif e is None and "e2e" in s["sections"]:
        parts.append("## End to end\n\nNot measured.")

    p = r.get("preprocess")
    if p:
        parts.append(
            f"## Preprocessing\n\n{p['raw_tokens']:,} raw tokens, {p['kept_tokens']:,} kept.\n\n"
            + md_table(("step", "median", "min", "max", "spread"), [
                ("read and tokenize (the encode's first phase), tokens/s", *_s(p["tokenize_tokens_per_s"])),
                ("tokenize, count and encode (`load_corpus(use_cache=False)`, plain text), tokens/s",
                 *_s(p["encode_tokens_per_s"])),
                ("the same, seconds", *_s(p["encode_seconds"], _sec)),
                ("reload of the cached corpus (memory-mapped), seconds", *_s(p["cache_reload_seconds"], _sec)),
                ("reload and read every page, seconds", *_s(p["cache_reload_and_read_all_seconds"], _sec)),
            ])
            + f"\n\nCounting and encoding are {p['count_and_encode_share']:.0%} of the encode time. From the "
            f"`.xz` file (decompression included, once): {p['encode_xz_seconds']} s, "
            f"{human(p['encode_xz_tokens_per_s'])} tokens/s. Cache build: {p['cache_build_seconds']} s, "
            f"{p['cache_bytes'] / 2**20:.1f} MiB. Encoder warm-up (not counted): {p['encoder_warmup_seconds']} s."
            + (f" Decompressing the corpus to the scratch folder: {r['text']['seconds']} s, "
               f"{r['text']['mb_per_s']} MB/s." if not r["text"]["reused"] else ""))

    inf = r.get("inference")
    if inf:
        parts.append(
            f"## Inference\n\n{inf['pairs']:,} pairs in {inf['sets']} STS sets, read once; model: "
            f"{inf['model_source']} ({inf['vocab_size']:,} words, {inf['dim']} dims"
            + (f", load {inf['load_seconds']} s" if inf["load_seconds"] is not None else "") + ").\n\n"
            + md_table(("", "median s", "min", "max", "spread"), [
                ("tokenize, embed, cosine (`pair_cosines` over every set)", *_s(inf["cosines_seconds"], _sec)),
                ("the same plus Pearson and Spearman (`score_set`)", *_s(inf["with_correlations_seconds"], _sec)),
                ("tokenize only (context)", *_s(inf["tokenize_only_seconds"], _sec)),
            ])
            + f"\n\nFirst call (cold): {inf['first_call_seconds']} s. {human(inf['pairs_per_s'])} pairs/s; the "
            f"paper: {inf['paper']['pairs']:,} pairs in {inf['paper']['seconds']} s "
            f"({human(inf['paper']['pairs_per_s'])} pairs/s).")

    m = r.get("memory")
    if m:
        rows = []
        for row in m["rows"].values():
            rows.append((row["corpus"], f"{row['tokens']:,}", f"{row['vocab_size']:,}",
                         f"{row['token_bytes'] / 2**20:.1f}", f"{row['matrix_bytes'] / 2**20:.1f}",
                         row["idle_mib"].get("VmRSS"), row.get("peak_training_loop_mib"), row.get("peak_mib"),
                         row.get("added_training_loop_ratio"), row.get("added_ratio"), row.get("peak_ratio"),
                         row["seconds"]))
        parts.append(
            f"## Memory\n\nOne epoch, {m['threads']} threads, dim {m['dim']}, a fresh process per corpus: kernels "
            "compiled on a tiny corpus, peak reset, then the cached corpus loaded (memory-mapped) and trained "
            "(`scbow.training.trainer.train`, post-processing included). MiB.\n\n"
            + md_table(("corpus", "tokens", "vocab", "token ids", "matrix", "idle RSS", "peak, end of epoch",
                        "peak, end", "added/(ids+matrix), epoch", "added/(ids+matrix), end", "peak/(ids+matrix)",
                        "seconds"), rows))

    ab_file = RESULTS_DIR / "ab_speed.json"
    if ab_file.is_file():
        from .ab import medians_table

        ab = json.loads(ab_file.read_text(encoding="utf-8"))
        sides = ab["settings"]
        parts.append(
            "## Against an earlier checkout (A/B)\n\n"
            f"From `benchmarks/results/ab_speed.md` (`python -m benchmarks.run ab`; its own run, "
            f"{ab['context'].get('date_utc', 'date n/a')}): kernel examples/s of commit "
            f"{(sides['after']['commit'] or 'n/a')[:12]} (after) against {(sides['before']['commit'] or 'n/a')[:12]} "
            f"(before) on corpus {sides['corpus_label']}, {sides['rounds']} alternating rounds of fresh processes.\n\n"
            + medians_table(ab))
    if k:
        parts.append("## What was tried on the kernel\n\nThe experiments on the kernel, each with its measured "
                     "effect, are listed in `benchmarks/NOTES.md`; this run measures the kernel as it is.")

    skipped = [x for x in SECTIONS if x not in s["sections"]]
    notes = list(r.get("notes", []))
    if skipped:
        notes.append("sections not run: " + ", ".join(skipped))
    if notes:
        parts.append("## Notes\n\n" + "\n".join(f"- {n}" for n in notes))
    parts.append("## Definitions\n\n" + "\n".join(f"- **{k}**: {v}" for k, v in DEFINITIONS.items()))
    extra = r["context"]
    parts.append(context_markdown(extra) + f"\n\nNumba threads available: {s['numba_num_threads']}; "
                 f"L3: {mib(r.get('l3_bytes'))}.")
    return "\n\n".join(parts)
