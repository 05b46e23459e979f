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
    assert "million lines a minute" not in text("README.md")  # the old, unsourced wording


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
