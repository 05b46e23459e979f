"""Unknown words as pieces against one hashed vector a word: the rule's choice on the STS-B dev set.

    python -m benchmarks.run unknown_pieces --model /path/to/10M-model --model /path/to/100M-model

For each model (trained with the defaults), the STS-B dev set is scored with unknown words
left out (``omit``), with one hashed vector a word (``hash`` at the model's recorded scale),
and split into pieces (``pieces``, ``scbow.vectors.pieces``) for each longest piece of
``--chars`` characters and each ``--scales`` multiple of the model's unknown-word norm.
The rule and its two settings are chosen on dev alone; the mean over the 19 SemEval test
sets and 2015.headlines (the set with the most unknown words) are printed beside, never
used for the choice. ``pieces rows``: the rows the pieces add to an exported folder.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import scbow
import scbow.vectors.pieces as pieces_module
from scbow.config import TrainConfig
from scbow.use.evaluate import bootstrap_pearson_diff, read_sts, score_set

from .common import RESULTS_DIR, context, context_markdown, data_dir, md_table, say, write_report


def parse_args(argv=None, prog=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, action="append", required=True, help="a model directory (repeatable)")
    parser.add_argument("--chars", default="2,3,4", help="longest piece, in characters (comma-separated)")
    parser.add_argument("--scales", default="0.25,0.35,0.5,0.75,1.0", help="piece norms as multiples of unknown_norm")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "unknown_pieces")
    return parser.parse_args(argv)


def scores(model, sets, dev, **rule) -> dict:
    def embed(sentences):
        return model.encode(sentences, **rule)

    d = score_set(embed, dev)
    tests = [score_set(embed, s) for s in sets]
    return {"dev": d.pearson, "dev_pred": d.predictions, "mean19": float(np.mean([t.pearson for t in tests])),
            "headlines": next(t.pearson for t in tests if t.name == "2015.headlines")}


def main(argv=None, prog=None) -> None:
    args = parse_args(argv, prog)
    chars = [int(c) for c in args.chars.split(",")]
    scales = [float(s) for s in args.scales.split(",")]
    sets = [read_sts(p) for p in sorted((data_dir() / "sts").glob("*.tsv"))]
    dev = read_sts(data_dir() / "sts-dev" / "stsb.dev.tsv")
    default_chars = pieces_module.PIECE_CHARS
    report = {"models": []}
    try:
        for path in args.model:
            model = scbow.load(path)
            say(f"{path}: {model!r}")
            rows = []
            base = scores(model, sets, dev, unknown="hash", unknown_scale=model.unknown_scale("hash"))
            rows.append({"rule": "hash", "chars": None, "scale": model.unknown_scale("hash"), **base})
            rows.append({"rule": "omit", "chars": None, "scale": None, **scores(model, sets, dev, unknown="omit")})
            for c in chars:
                pieces_module.PIECE_CHARS = c
                fresh = scbow.load(path)  # its pieces built with this length
                n_pieces = len(fresh.pieces.new)
                for s in scales:
                    rows.append({"rule": "pieces", "chars": c, "scale": s, "pieces_rows": n_pieces,
                                 **scores(fresh, sets, dev, unknown="pieces", unknown_scale=s)})
                    say(f"  pieces {c} chars x {s}: dev {rows[-1]['dev']:.4f}")
            for row in rows:
                diff, lo, hi = bootstrap_pearson_diff(dev.gold, row["dev_pred"], base["dev_pred"], resamples=2000)
                row["dev_diff_vs_hash"] = [diff, lo, hi]
                del row["dev_pred"]
            best = max((r for r in rows if r["rule"] == "pieces"), key=lambda r: r["dev"])
            report["models"].append({"path": str(path), "words": len(model), "rows": rows, "best_pieces": best})
    finally:
        pieces_module.PIECE_CHARS = default_chars
    report["context"] = context()
    write_report(args.out, report, markdown(report), echo=True)


def markdown(report: dict) -> str:
    out = ["# Unknown words as pieces: STS-B dev", "",
           f"Command: `python -m benchmarks.run unknown_pieces` ({__doc__.splitlines()[0]}). The choice is made on "
           "the STS-B dev set only; the 19 test sets' mean and 2015.headlines are shown beside, not used. "
           "`diff vs hash`: dev Pearson minus hash's, with a paired bootstrap 95% interval (2000 resamples).", ""]
    settings = {}
    for m in report["models"]:
        for r in m["rows"]:
            if r["rule"] == "pieces":
                settings.setdefault((r["chars"], r["scale"]), []).append(r["dev"])
    hashed = np.mean([r["dev"] for m in report["models"] for r in m["rows"] if r["rule"] == "hash"])
    default = (pieces_module.PIECE_CHARS, TrainConfig.unknown_scale)
    table = [[c, s, f"{np.mean(d):.4f}", f"{np.mean(d) - hashed:+.4f}", "the default" if (c, s) == default else ""]
             for (c, s), d in sorted(settings.items(), key=lambda kv: -np.mean(kv[1]))]
    out += ["## Dev Pearson, mean over the models", "",
            f"Hash (each model's own scale): {hashed:.4f}. The default is the setting with the fewest rows within "
            "0.002 of the best mean: longer pieces (3 or 4 characters: 8 and 38 times the rows of 2 on 100M, "
            "up to 93% more rows in a 10M model's folder) gain less than that, inside the bootstrap intervals "
            "below.", "",
            md_table(["longest piece", "scale", "dev, mean over models", "minus hash", ""], table), ""]
    for m in report["models"]:
        best = m["best_pieces"]
        out += [f"## {m['path']}", "", f"{m['words']:,} words. Best pieces on dev: {best['chars']} characters x "
                f"{best['scale']} ({best['dev']:.4f}).", ""]
        table = []
        for r in m["rows"]:
            d, lo, hi = r["dev_diff_vs_hash"]
            table.append([r["rule"], r["chars"] or "", r["scale"] if r["scale"] is not None else "",
                          f"{r.get('pieces_rows', 0):,}" if r["rule"] == "pieces" else "", f"{r['dev']:.4f}",
                          f"{d:+.4f} [{lo:+.4f}, {hi:+.4f}]" if r["rule"] != "hash" else "",
                          f"{r['mean19']:.4f}", f"{r['headlines']:.4f}"])
        out += [md_table(["rule", "longest piece", "scale", "pieces rows", "dev", "diff vs hash [95% CI]",
                          "mean of 19 (not used)", "2015.headlines (not used)"], table), ""]
    out += [context_markdown(report["context"])]
    return "\n".join(out)


if __name__ == "__main__":
    main()
