"""Exported folders against the model they came from: the 19 STS sets, 2015.headlines and STS-B dev.

    python -m benchmarks.run export_parity --model /path/to/model [--model ...]

Each model is exported with ``scbow-numba export --format model2vec`` and ``--format
sentence-transformers`` (default options), and each folder is loaded the way its library loads
it: model2vec's ``StaticModel.from_pretrained``; sentence-transformers' ``SentenceTransformer``
where it is installed, else what its ``StaticEmbedding`` module computes, from the folder's own
files (the ``tokenizers`` tokenizer's ids without special tokens, the mean of their
``embedding.weight`` rows; ``tests/test_export.py`` checks that this equals the library).
Every system is scored with the same cosine and Pearson as ``scbow-numba evaluate``, against
``Model.encode`` with the model's own rule (its default) and with the other rules. Goal: each
folder within 0.005 of ``encode``'s default on the mean of the 19 sets, 0.01 on 2015.headlines.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import scbow
from scbow.use.evaluate import read_sts, score_set

from .common import RESULTS_DIR, WORK_ROOT, context, context_markdown, data_dir, have, md_table, say, write_report

WORK = WORK_ROOT / "export_parity"
GOALS = {"mean19": 0.005, "headlines": 0.01}


def parse_args(argv=None, prog=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, action="append", required=True, help="a model directory (repeatable)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "export_parity")
    return parser.parse_args(argv)


def export(model: Path, fmt: str, folder: Path) -> str:
    """Run the CLI's export; returns its stderr (the line saying what it wrote)."""
    if folder.exists():
        shutil.rmtree(folder)
    command = [sys.executable, "-c", "from scbow.cli import main; main()"]
    done = subprocess.run([*command, "export", "-m", str(model), "--format", fmt, "-o", str(folder)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"export {fmt} failed: {done.stderr.strip()}")
    return done.stderr.strip()


def static_embedding(folder: Path):
    """``encode`` of a sentence-transformers folder: the library's where installed, else what its
    StaticEmbedding computes from the folder's files."""
    if have("sentence_transformers"):
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(folder), device="cpu")
        return "sentence-transformers", lambda sentences: model.encode(sentences, convert_to_numpy=True)
    import tokenizers
    from safetensors.numpy import load_file

    inner = folder / "0_StaticEmbedding"
    tok = tokenizers.Tokenizer.from_file(str(inner / "tokenizer.json"))
    rows = load_file(str(inner / "model.safetensors"))["embedding.weight"]

    def encode(sentences):
        out = np.zeros((len(sentences), rows.shape[1]), dtype=np.float32)
        for n, enc in enumerate(tok.encode_batch(list(sentences), add_special_tokens=False)):
            if enc.ids:
                out[n] = rows[enc.ids].mean(axis=0)
        return out

    return "StaticEmbedding's computation (sentence-transformers not installed)", encode


def scores(embed, sets, dev) -> dict:
    tests = [score_set(embed, s) for s in sets]
    return {"dev": score_set(embed, dev).pearson, "mean19": float(np.mean([t.pearson for t in tests])),
            "headlines": next(t.pearson for t in tests if t.name == "2015.headlines"),
            "sets": {t.name: t.pearson for t in tests}}


def main(argv=None, prog=None) -> None:
    args = parse_args(argv, prog)
    sets = [read_sts(p) for p in sorted((data_dir() / "sts").glob("*.tsv"))]
    dev = read_sts(data_dir() / "sts-dev" / "stsb.dev.tsv")
    sentences = list(dict.fromkeys(s for t in [*sets, dev] for s in t.first + t.second))
    report = {"models": [], "goals": GOALS}
    for path in args.model:
        model = scbow.load(path)
        own = model.unknown_rule[0]
        say(f"{path}: {model!r}, unknown words: {own}")
        systems = {}
        for rule in dict.fromkeys([own, "pieces", "hash", "omit"]):
            name = f"encode (unknown={rule})" + (", the default" if rule == own else "")
            systems[name] = scores(lambda s, r=rule: model.encode(s, unknown=r), sets, dev)
        reference = model.encode(sentences, unknown="pieces" if own != "omit" else "omit").astype(np.float64)
        lines, gaps = {}, {}
        from model2vec import StaticModel

        for fmt in ("model2vec", "sentence-transformers"):
            folder = WORK / Path(path).name / fmt
            lines[fmt] = export(path, fmt, folder)
            if fmt == "model2vec":
                m2v = StaticModel.from_pretrained(str(folder))
                how, encode = "model2vec StaticModel", m2v.encode
            else:
                how, encode = static_embedding(folder)
            name = f"{fmt} folder ({how})"
            systems[name] = scores(encode, sets, dev)
            got = np.asarray(encode(sentences), dtype=np.float64)
            ok = np.isfinite(reference).all(axis=1) & (np.linalg.norm(got, axis=1) > 0)
            cos = (got[ok] * reference[ok]).sum(1) / np.linalg.norm(got[ok], axis=1) / np.linalg.norm(reference[ok], axis=1)
            gaps[name] = {"sentences": int(ok.sum()), "min_cosine_to_encode": float(cos.min())}
            say(f"  {name}: mean19 {systems[name]['mean19']:.4f}, min cosine to encode {cos.min():.6f}")
        default = systems[next(k for k in systems if k.endswith("the default"))]
        verdicts = {name: {k: systems[name][k] - default[k] for k in GOALS} for name in gaps}
        report["models"].append({"path": str(path), "repr": repr(model), "unknown": own, "systems": systems,
                                 "export_lines": lines, "folder_vs_encode": gaps, "diff_vs_default": verdicts})
    report["context"] = context("model2vec", "tokenizers", "sentence_transformers")
    write_report(args.out, report, markdown(report), echo=True)


def markdown(report: dict) -> str:
    out = ["# Exported folders against the model", "", __doc__.split("\n\n", 2)[2].replace("\n", " ").strip(), ""]
    for m in report["models"]:
        out += [f"## {m['path']}", "", f"`{m['repr']}`; its own rule for unknown words: `{m['unknown']}`.", ""]
        rows = [[name, f"{s['mean19']:.4f}", f"{s['headlines']:.4f}", f"{s['dev']:.4f}"] for name, s in m["systems"].items()]
        out += [md_table(["system", "mean of 19 STS sets", "2015.headlines", "STS-B dev"], rows), ""]
        rows = []
        reference = "pieces" if m["unknown"] != "omit" else "omit"  # what the folders carry
        for name, diff in m["diff_vs_default"].items():
            gap = m["folder_vs_encode"][name]
            if all(abs(diff[k]) <= goal for k, goal in GOALS.items()):
                verdict = "met"
            elif all(diff[k] >= -goal for k, goal in GOALS.items()):
                verdict = f"above the default: the folder carries {reference}, the model's own rule is {m['unknown']}"
            else:
                verdict = "MISSED"
            rows.append([name, f"{diff['mean19']:+.4f}", f"{diff['headlines']:+.4f}",
                         f"{gap['min_cosine_to_encode']:.6f} over {gap['sentences']:,}", verdict])
        out += [md_table(["folder", "mean of 19 minus encode's default (goal +-0.005)",
                          "headlines minus default (goal +-0.01)",
                          f"lowest cosine to encode(unknown={reference})'s row, per sentence", "goal"], rows), ""]
        out += ["What `export` printed:", "", "```", *m["export_lines"].values(), "```", ""]
    out += [context_markdown(report["context"])]
    return "\n".join(out)


if __name__ == "__main__":
    main()
