"""Issue 14: files, paths and commands a user already knows how to use."""

from __future__ import annotations

import pytest
from test_cli import assert_clean_error

from scbow.cli import main
from scbow.vectors.formats import load_model


@pytest.fixture(scope="module")
def trained(healthy):
    """The small CLI-trained model of test_hostile, without a word part (read-only here)."""
    return healthy[0]



def test_evaluate_control_keeps_the_default_model(tmp_path, runner, trained, monkeypatch):
    sts = tmp_path / "s.tsv"
    sts.write_text("4\tthe cat sat\tthe cat sat down\n1\tthe dog ran\ta cat slept\n3\tthe cat ran\tthe dog sat\n")
    monkeypatch.setenv("SCBOW_MODEL", str(trained))
    result = runner.invoke(main, ["evaluate", "--control", "overlap", str(sts), "--json"])
    assert result.exit_code == 0, result.output
    assert set(__import__("json").loads(result.stdout)["sources"]) == {"model", "weighted overlap"}
    monkeypatch.setenv("SCBOW_MODEL", str(tmp_path / "none"))
    result = runner.invoke(main, ["evaluate", "--control", "plain-overlap", str(sts), "--json"])
    assert result.exit_code == 0, result.output
    assert set(__import__("json").loads(result.stdout)["sources"]) == {"plain overlap"}


def test_similarity_pairs_matches_one_at_a_time(tmp_path, runner, trained):
    pairs = [("the cat sat", "the dog ran"), ("a cat", "a cat"), ("", "the dog"), ("the man walked", "zzz qqq")]
    path = tmp_path / "pairs.tsv"
    path.write_text("".join(f"{a}\t{b}\n" for a, b in pairs[:2]) + "".join(f"3.5\t{a}\t{b}\n" for a, b in pairs[2:]))
    result = runner.invoke(main, ["similarity", "-m", str(trained), "--pairs", str(path)])
    assert result.exit_code == 0, result.output
    got = result.stdout.splitlines()
    assert len(got) == len(pairs)
    model = load_model(trained)
    for line, (a, b) in zip(got, pairs):
        expected = model.similarity(a, b)
        assert (line == "nan") if expected != expected else float(line) == pytest.approx(expected, abs=1e-4)
    assert "1 had a side with nothing to average" in result.stderr
    piped = runner.invoke(main, ["similarity", "-m", str(trained), "--pairs", "-"], input=path.read_text())
    assert piped.stdout == result.stdout
    bad = tmp_path / "bad.tsv"
    bad.write_text("a\tb\nonly one field\n")
    assert_clean_error(runner.invoke(main, ["similarity", "-m", str(trained), "--pairs", str(bad)]), "line 2")
    assert_clean_error(runner.invoke(main, ["similarity", "-m", str(trained), "a"]), "give two sentences")
    assert_clean_error(runner.invoke(main, ["similarity", "-m", str(trained), "a", "b", "--pairs", str(path)]),
                       "not both")


