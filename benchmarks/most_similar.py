"""Speed of word neighbours: ``model.wv.most_similar`` beside gensim's ``KeyedVectors.most_similar`` on the same vectors.

    python -m benchmarks.run most_similar                    # the 100M model of benchmarks.quality, if there
    python -m benchmarks.run most_similar --model PATH --queries 200 --rounds 3

The model: ``--model``, else the 100M model ``benchmarks.quality`` trained, else one trained
here on 1M; loaded memory-mapped (as users get it) and with ``mmap=False``. gensim gets a
``KeyedVectors`` of the same float32 rows. After untimed warm-up queries, every query is timed
on each system back to back, the order alternating, so that a change in the machine's load hits
both alike; then the two top-n lists of each query are compared (same words, same order,
cosines within ``1e-5``; where they differ, the cosine gap tells a near tie). The comparison
with the float64 implementation this replaced is history: its code is in git at commit 59c4a92.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import time
from pathlib import Path

import numpy as np

import scbow

from .common import (
    REPO_ROOT,
    RESULTS_DIR,
    WORK_ROOT,
    context,
    context_markdown,
    corpus_path,
    md_table,
    peak_rss_mib,
    say,
    timed,
    write_report,
)
from .targets import TARGETS

GOAL_RATIO = TARGETS["most_similar_over_gensim"].value
COSINE_TOLERANCE = 1e-5
QUALITY_MODEL = WORK_ROOT / "quality" / "scbow-100M-c36ac6717165c352"
WORK = WORK_ROOT / "most_similar"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run most_similar", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model", type=Path, default=None,
                        help=f"model directory or word2vec file [default: {QUALITY_MODEL.relative_to(REPO_ROOT)} "
                             "if present, else a model trained on the 1M corpus]")
    parser.add_argument("--queries", type=int, default=200, help="how many query words")
    parser.add_argument("--skip", type=int, default=20, help="vocabulary rank of the first query word")
    parser.add_argument("--stride", type=int, default=5, help="take every this-many-th alphabetic word")
    parser.add_argument("--topn", type=int, default=10, help="neighbours per query")
    parser.add_argument("--rounds", type=int, default=3, help="timed passes over all the queries")
    parser.add_argument("--warmup", type=int, default=20, help="untimed queries per system first")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "most_similar", help="report prefix (.json and .md)")
    args = parser.parse_args(argv)
    for name in ("queries", "topn", "rounds", "stride"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.skip < 0 or args.warmup < 0:
        parser.error("--skip and --warmup must be at least 0")
    return args


def find_model(arg: Path | None) -> Path:
    if arg is not None:
        return arg
    if QUALITY_MODEL.is_dir():
        return QUALITY_MODEL
    path = WORK / "scbow-1M"
    if not path.is_dir():
        say(f"no model given and none at {QUALITY_MODEL}: training one on the 1M corpus -> {path}")
        model = scbow.train([corpus_path("1M")])
        model.save(path)
    return path


def blas_info() -> dict:
    """The BLAS numpy uses and its thread count (asked through ctypes; None where it cannot be)."""
    info = {"name": None, "version": None, "threads": None}
    try:
        config = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        info["name"], info["version"] = config.get("name"), config.get("version")
    except Exception:  # only a description
        pass
    try:
        maps = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return info
    libs = sorted({line.split()[-1] for line in maps if "openblas" in line.lower() and line.split()[-1].startswith("/")})
    for lib in libs:
        try:
            handle = ctypes.CDLL(lib)
        except OSError:
            continue
        for symbol in ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
                       "openblas_get_num_threads64_", "openblas_get_num_threads"):
            fn = getattr(handle, symbol, None)
            if fn is not None:
                fn.restype = ctypes.c_int
                info["threads"] = int(fn())
                return info
    return info


def query_words(model, skip: int, stride: int, n: int) -> list[str]:
    words = [w for w in model.wv.index_to_key[skip:] if w.isalpha()][::stride][:n]
    if len(words) < n:
        say(f"only {len(words)} query words in this vocabulary (asked for {n})")
    return words


def compare(ours: list, theirs: list) -> dict:
    """How two top-n lists agree: identical (same words, same order, cosines within tolerance) or not, and why."""
    words_a, words_b = [w for w, _ in ours], [w for w, _ in theirs]
    cos_b = dict(theirs)
    shared = [w for w in words_a if w in cos_b]
    max_diff = max((abs(c - cos_b[w]) for w, c in ours if w in cos_b), default=0.0)
    out = {"same_words": set(words_a) == set(words_b), "same_order": words_a == words_b,
           "max_cosine_diff": max_diff, "shared": len(shared)}
    out["identical"] = out["same_order"] and max_diff <= COSINE_TOLERANCE
    if not out["identical"]:
        # the words in one list only, or out of order: how far apart are their cosines?
        differing = [i for i, (a, b) in enumerate(zip(words_a, words_b)) if a != b]
        first = differing[0] if differing else len(words_a)
        near = [c for _, c in ours[first:]] + [c for _, c in theirs[first:]]
        out["first_difference_rank"] = first + 1
        out["cosine_spread_from_there"] = (max(near) - min(near)) if near else 0.0
        out["ours"], out["gensim"] = ours, theirs
    return out


def main(argv=None) -> None:
    args = parse_args(argv)
    from gensim.models import KeyedVectors

    ctx = context("gensim")
    ctx["blas"] = blas_info()
    path = find_model(args.model)
    say(f"model: {path}")
    with timed() as t_load:
        model = scbow.load(path)
    in_memory = scbow.load(path, mmap=False)
    say(f"  {model!r}")
    with timed() as t_gensim_build:
        # the columns our ranking uses (a model's word part, when it has one), for the same task
        kv = KeyedVectors(in_memory.wv.vector_size)
        kv.add_vectors(list(model.wv.index_to_key), np.asarray(in_memory.wv.vectors))
    words = query_words(model, args.skip, args.stride, args.queries)
    topn = args.topn
    systems = {
        "ours": lambda w: model.wv.most_similar(w, topn=topn),
        "ours, mmap=False": lambda w: in_memory.wv.most_similar(w, topn=topn),
        "gensim": lambda w: kv.most_similar(w, topn=topn),
    }

    say(f"warm-up: {args.warmup} queries per system")
    first_call = {}
    for name, fn in systems.items():
        with timed() as t:
            fn(words[0])
        first_call[name] = t.seconds
        for w in words[1 : 1 + args.warmup]:
            fn(w)

    say(f"timing: {args.rounds} rounds x {len(words)} queries x {len(systems)} systems, topn {topn}")
    times = {name: [] for name in systems}
    names = list(systems)
    load_before_run = os.getloadavg()
    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    for r in range(args.rounds):
        for q, w in enumerate(words):
            order = names if (q + r) % 2 == 0 else names[::-1]
            for name in order:
                start = time.perf_counter()
                systems[name](w)
                times[name].append(time.perf_counter() - start)
        say(f"  round {r + 1}: median ours {statistics.median(times['ours'][-len(words):]) * 1e3:.2f} ms, "
            f"gensim {statistics.median(times['gensim'][-len(words):]) * 1e3:.2f} ms, load {os.getloadavg()[0]:.2f}")
    cpu_per_wall = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    load_after_run = os.getloadavg()

    summary = {}
    for name, ts in times.items():
        ms = np.array(ts) * 1e3
        summary[name] = {"calls": len(ms), "median_ms": round(float(np.median(ms)), 3), "mean_ms": round(float(ms.mean()), 3),
                         "p10_ms": round(float(np.percentile(ms, 10)), 3), "p90_ms": round(float(np.percentile(ms, 90)), 3),
                         "min_ms": round(float(ms.min()), 3), "first_call_ms": round(first_call[name] * 1e3, 2)}
    paired = np.array(times["ours"]) / np.array(times["gensim"])
    ratios = {
        "median": round(summary["ours"]["median_ms"] / summary["gensim"]["median_ms"], 3),
        "mean": round(summary["ours"]["mean_ms"] / summary["gensim"]["mean_ms"], 3),
        "median_of_paired": round(float(np.median(paired)), 3),
        "median_mmap_false": round(summary["ours, mmap=False"]["median_ms"] / summary["gensim"]["median_ms"], 3),
    }

    say("agreement")
    checks = [compare(model.wv.most_similar(w, topn=topn), [(a, float(c)) for a, c in kv.most_similar(w, topn=topn)])
              for w in words]
    same_mmap = sum(model.wv.most_similar(w, topn=topn) == in_memory.wv.most_similar(w, topn=topn) for w in words)
    agreement = {
        "queries": len(checks),
        "identical": sum(c["identical"] for c in checks),
        "same_words": sum(c["same_words"] for c in checks),
        "same_order": sum(c["same_order"] for c in checks),
        "max_cosine_diff": max(c["max_cosine_diff"] for c in checks),
        "mmap_and_in_memory_identical": same_mmap,
        "differences": [{"query": w, **c} for w, c in zip(words, checks) if not c["identical"]],
    }

    result = {
        "context": ctx,
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "model": {"path": str(path), "repr": repr(model), "words": len(model), "dim": model.dim,
                  "vectors_mib": round(model.vectors.nbytes / 2**20, 1)},
        "query_words": words,
        "setup_seconds": {"scbow_load": round(t_load.seconds, 3), "gensim_build": round(t_gensim_build.seconds, 3)},
        "load_average_before": [round(x, 2) for x in load_before_run],
        "load_average_after": [round(x, 2) for x in load_after_run],
        "cpu_per_wall_during_timing": round(cpu_per_wall, 2),
        "per_query": summary,
        "ratio_ours_over_gensim": ratios,
        "goal": {"max_ratio": GOAL_RATIO, "met": ratios["median"] <= GOAL_RATIO and ratios["mean"] <= GOAL_RATIO},
        "agreement": agreement,
        "peak_rss_mib": peak_rss_mib(),
    }
    write_report(args.out, result, markdown(result))
    say(f"ours {summary['ours']['median_ms']:.2f} ms vs gensim {summary['gensim']['median_ms']:.2f} ms per query "
        f"(median; ratio {ratios['median']:.2f}, mean ratio {ratios['mean']:.2f}); "
        f"{agreement['identical']}/{agreement['queries']} top-{topn} lists identical")


def markdown(r: dict) -> str:
    s, ratios, a, goal = r["per_query"], r["ratio_ours_over_gensim"], r["agreement"], r["goal"]
    ctx = r["context"]
    blas = ctx["blas"]
    topn = r["settings"]["topn"]
    lines = [
        "# Word neighbours: `model.wv.most_similar` beside gensim",
        "",
        f"Model: `{r['model']['path']}`: {r['model']['repr']} ({r['model']['vectors_mib']} MiB of float32 vectors).",
        f"Queries: {a['queries']} frequent words (every {r['settings']['stride']}th alphabetic word from rank "
        f"{r['settings']['skip']} on), `topn={topn}`, {r['settings']['rounds']} rounds, each query timed on every "
        "system back to back in alternating order, after "
        f"{r['settings']['warmup']} untimed warm-up queries per system. gensim: `KeyedVectors(dim)` + "
        "`add_vectors(words, vectors)` from the same float32 arrays.",
        f"BLAS: {blas['name']} {blas['version']}, {blas['threads']} threads (both systems' matrix-vector product).",
        "",
        "## Goal",
        "",
        md_table(("goal", "measured (median / mean per query)", "verdict"), [
            (f"ours at most {goal['max_ratio']}x gensim per query", f"{ratios['median']:.2f}x / {ratios['mean']:.2f}x",
             "**met**" if goal["met"] else "**not met**"),
        ]),
        "",
        "## Time per query",
        "",
        md_table(("system", "calls", "median ms", "mean ms", "p10 ms", "p90 ms", "min ms", "first call ms"), [
            (name, v["calls"], f"{v['median_ms']:.2f}", f"{v['mean_ms']:.2f}", f"{v['p10_ms']:.2f}", f"{v['p90_ms']:.2f}",
             f"{v['min_ms']:.2f}", f"{v['first_call_ms']:.1f}") for name, v in s.items()
        ]),
        "",
        f"Ratio ours / gensim: median {ratios['median']:.3f}, mean {ratios['mean']:.3f}, median of the per-query "
        f"ratios {ratios['median_of_paired']:.3f}; in memory (`mmap=False`) against gensim, median "
        f"{ratios['median_mmap_false']:.3f}.",
        "",
        "Both do one float32 matrix-vector product over every row per query, which reads the whole matrix "
        "and sets the time. Ours multiplies by inverse row norms computed on the first call (that call's "
        "extra time above; kept until `vectors` is assigned) and finds the top n by partitioning a sample, "
        "then the candidates above its n-th value, then re-scores the few words within float32 rounding of "
        "the n-th best in float64. gensim divides by its cached norms and partitions all the scores.",
        "",
        f"Load average before the timed rounds {r['load_average_before']}, after {r['load_average_after']} "
        f"(the machine may be shared); CPU time per wall-clock second during them {r['cpu_per_wall_during_timing']}.",
    ]
    lines += [
        "",
        "## Agreement with gensim",
        "",
        md_table(("", "queries"), [
            (f"top-{topn} identical (same words, same order, cosines within {COSINE_TOLERANCE:g})",
             f"{a['identical']} of {a['queries']}"),
            ("same words (any order)", f"{a['same_words']} of {a['queries']}"),
            ("same order", f"{a['same_order']} of {a['queries']}"),
            ("memory-mapped and in-memory results identical", f"{a['mmap_and_in_memory_identical']} of {a['queries']}"),
        ]),
        "",
        f"Largest cosine difference for a word in both lists: {a['max_cosine_diff']:.2e} (ours are float64 "
        "cosines, gensim's float32).",
    ]
    if a["differences"]:
        lines += ["", "Where they differ (near ties: gensim's order comes from float32 rounding):", "",
                  md_table(("query", "first differing rank", "cosine spread from there", "ours", "gensim"), [
                      (d["query"], d["first_difference_rank"], f"{d['cosine_spread_from_there']:.1e}",
                       ", ".join(f"{w} {c:.7f}" for w, c in d["ours"][d["first_difference_rank"] - 1:][:3]),
                       ", ".join(f"{w} {c:.7f}" for w, c in d["gensim"][d["first_difference_rank"] - 1:][:3]))
                      for d in a["differences"][:10]])]
    lines += ["", context_markdown(ctx), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
