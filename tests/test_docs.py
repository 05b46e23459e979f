"""The docs quote one figure once: a number README and docs/commands.md both give must agree, with each
other and with the report it comes from."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def text(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def test_the_embed_speed_is_the_reports_figure_wherever_it_is_quoted():
    report = re.search(r"\| >= 1\.00M sentences/min on 2 cores from raw text \| ([\d.]+)M lines/min \|",
                       text("benchmarks/results/embed.md"))
    assert report, "benchmarks/results/embed.md: its goal row moved"
    quoted = {name: re.findall(r"([\d.]+)M lines a minute", " ".join(text(name).split()))
              for name in ("README.md", "docs/commands.md")}
    assert all(quoted.values()), quoted
    assert {float(x) for xs in quoted.values() for x in xs} == {round(float(report.group(1)), 1)}, quoted


def test_the_quick_start_models_numbers_agree_across_the_docs():
    readme = " ".join(text("README.md").split())
    commands = " ".join(text("docs/commands.md").split())
    # the vocabulary of the 10M quick-start model: the train output and the repr example
    vocab = re.search(r"corpus: [\d,]+ tokens, ([\d,]+) words in the vocabulary", readme).group(1)
    assert f"<scbow Model: {vocab} words x 450 dims" in readme
    # house's nearest words: README's table (the word part's column) and docs/commands.md's -n 3
    row = re.search(r"\| house \| [^|]+ \| ([^|]+) \|", readme).group(1)
    listed = re.search(r"`neighbors house -n 3` prints (\w+) [\d.]+, (\w+) [\d.]+, (\w+) [\d.]+", commands)
    assert listed and list(listed.groups()) == [w.strip() for w in row.split(",")][:3], (row, listed)


def test_the_readme_python_examples_of_the_two_faces_run_as_written(tmp_path, monkeypatch):
    """The README's lines from ``# sentences`` to ``model.save`` run, as written, on a small model with a
    word part; the rules they state in their comments hold."""
    import shutil

    import numpy as np

    import scbow
    from scbow.text.vocab import Vocab
    from scbow.vectors.model import Model

    block = re.search(r"```python\nimport scbow\n(.*?)```", text("README.md"), re.S).group(1)
    lines = block.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("# sentences"))
    last = next(i for i, line in enumerate(lines) if line.startswith('model.save("copy")'))
    pairs = [line.split("\t") for line in text("benchmarks/data/wordsim353.tsv").splitlines()[1:]]
    words = list(dict.fromkeys(["the", "a", "man", "is", "eating", "someone", "eats", "sky", "blue", "first",
                                "sentence", "second", "one", "cat", "sat", "dog", "ran", "king", "queen", "woman",
                                "house", "pet", "table"] + [w for p in pairs for w in p[:2]]))
    rng = np.random.default_rng(0)
    model = Model(Vocab(words, np.full(len(words), 1000)), rng.standard_normal((len(words), 12)).astype(np.float32),
                  {"dim": 8, "word_passes": 3, "word_dim": 4, "unknown": "pieces", "unknown_scale": 0.35})
    shutil.copy(ROOT / "benchmarks" / "data" / "wordsim353.tsv", tmp_path / "wordsim353.tsv")
    (tmp_path / "questions-words.txt").write_text(": family\nman king woman queen\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    scope = {"scbow": scbow, "model": model}
    exec(compile("\n".join(lines[first:last + 1]), "README.md", "exec"), scope)
    wv = scope["wv"]
    assert wv.vector_size == 4 and model.parts == {"sentence": (0, 8), "word": (8, 12)}
    assert wv.similarity("king", "queen") + wv.distance("king", "queen") == 1.0
    assert scope["emb"].shape == (3, 12) and model.similarity(scope["emb"], scope["emb"]).shape == (3, 3)
    assert scbow.load(tmp_path / "v.bin").dim == 4 and scbow.load(tmp_path / "copy").dim == 12
