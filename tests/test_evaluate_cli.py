"""The ``scbow-numba evaluate`` command, through click's CliRunner."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from scbow.cli import main
from scbow.text.vocab import Vocab
from scbow.vectors.model import Model
from scbow.vectors.modeldir import save_model

WORDS = ["the", "cat", "dog", "sat", "ran", "on", "mat", "a", "big", "small", "red", "house", "."]

SET_A = [
    (4.8, "The cat sat on the mat.", "A cat sat on a mat"),
    (0.4, "The dog ran.", "A red house"),
    (3.1, "A big dog", "the big cat"),
    (1.9, "small red house", "the dog sat"),
    (2.5, "The cat ran on the mat", "the dog ran on a mat"),
    (0.0, "zebra quagga", "the cat"),
]
SET_B = [
    (4.0, "Big house", "a big house"),
    (1.0, "the mat", "a dog ran"),
    (2.2, "red cat", "small cat"),
    (0.5, "on a mat", "the big house"),
]


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    model = Model(Vocab(WORDS, np.ones(len(WORDS))), rng.standard_normal((len(WORDS), 8)).astype(np.float32))
    save_model(model, tmp_path / "model")
    baseline = tmp_path / "baseline.txt"  # word2vec text, a smaller vocabulary: 'house' is unknown
    rows = [f"{w} " + " ".join(f"{x:.5f}" for x in rng.standard_normal(5)) for w in WORDS if w != "house"]
    baseline.write_text(f"{len(rows)} 5\n" + "\n".join(rows) + "\n", encoding="utf-8")
    sts = tmp_path / "sts"
    sts.mkdir()
    for name, pairs in (("2012.a.tsv", SET_A), ("2013.b.tsv", SET_B)):
        (sts / name).write_text("".join(f"{g}\t{x}\t{y}\n" for g, x, y in pairs), encoding="utf-8")
    return {"model": str(tmp_path / "model"), "baseline": str(baseline), "sts": sts, "tmp": tmp_path}


def run(*args, env=None):
    return CliRunner().invoke(main, ["evaluate", *map(str, args)], env=env)


def test_table(files):
    result = run("-m", files["model"], files["sts"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    header = next(line for line in lines if line.startswith("set "))
    assert header.split() == ["set", "pairs", "scored", "pearson", "spearman"]
    row = next(line for line in lines if line.startswith("2012.a "))
    assert row.split()[1:3] == ["6", "5"]
    assert any(line.startswith("mean ") for line in lines) and any(line.startswith("weighted ") for line in lines)
    assert "mean: unweighted over sets; weighted: weighted by the pairs scored" in result.output
    assert "pairs with a side without any known word (no embedding) are not scored" in result.output


def test_json_structure_and_default_sts_dir(files):
    result = run("-m", files["model"], "--json", env={"SCBOW_STS_DIR": str(files["sts"])})
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["system"] == "model" and out["comparisons"] == {}
    assert [s["name"] for s in out["sets"]] == ["2012.a", "2013.b"]
    a, b = out["sets"]
    assert (a["pairs"], a["scored"], b["pairs"], b["scored"]) == (6, 5, 4, 4)
    assert out["pearson_mean"] == pytest.approx((a["pearson"] + b["pearson"]) / 2)
    assert out["pearson_weighted"] == pytest.approx((a["pearson"] * 5 + b["pearson"] * 4) / 9)
    assert out["spearman_weighted"] == pytest.approx((a["spearman"] * 5 + b["spearman"] * 4) / 9)
    assert set(out["notes"]) >= {"mean", "unscored"}


def test_files_and_folders_mix(files):
    result = run("-m", files["model"], "--json", files["sts"] / "2013.b.tsv", files["sts"])
    assert result.exit_code == 0, result.output
    assert [s["name"] for s in json.loads(result.stdout)["sets"]] == ["2013.b", "2012.a", "2013.b"]


def test_baseline_word2vec(files):
    result = run("-m", files["model"], "--baseline", files["baseline"], "--json", files["sts"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["sources"]["baseline"] == files["baseline"]
    b = out["sets"][1]["comparisons"]["baseline"]
    assert b["scored"] == 4 and b["common"] == 4  # 'house' alone is unknown, no side is only 'house'
    assert b["pearson_diff"] == pytest.approx(out["sets"][1]["pearson"] - b["pearson"])
    low, high = b["pearson_diff_ci95"]
    assert low <= high and 0 <= b["wilcoxon_p"] <= 1
    assert out["comparisons"]["baseline"]["pearson_mean"] is not None

    table = run("-m", files["model"], "--baseline", files["baseline"], files["sts"])
    assert table.exit_code == 0, table.output
    assert "baseline" in table.output and "wilcox p" in table.output and "95% CI" in table.output
    assert "shows the systems differ, not which is better" in table.output


def test_control_overlap_alone(files, monkeypatch):
    monkeypatch.setenv("SCBOW_MODEL", str(files["tmp"] / "no-model-here"))
    result = run("--control", "plain-overlap", "--json", files["sts"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["system"] == "plain overlap" and list(out["sources"]) == ["plain overlap"]
    a = out["sets"][0]
    assert a["scored"] == a["pairs"] == 6  # every token has a vector: unknown words count too
    assert -1 <= a["pearson"] <= 1
    # the weighted control weighs by a model's counts: with no model it is one clear error
    one_line_error(run("--control", "overlap", "--json", files["sts"]), "--control overlap", "plain-overlap")


@pytest.mark.parametrize("control, name", [("overlap", "weighted overlap"), ("plain-overlap", "plain overlap")])
def test_control_beside_model(files, control, name):
    result = run("-m", files["model"], "--control", control, "--json", files["sts"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["system"] == "model" and list(out["comparisons"]) == [name]
    c = out["sets"][0]["comparisons"][name]
    assert (c["scored"], c["common"]) == (6, 5)
    assert ("SIF" in out["sources"][name]) == (control == "overlap")
    table = run("-m", files["model"], "--control", control, files["sts"])
    assert f"{name}: untrained control" in table.stdout and name in table.stdout.splitlines()[3]


def one_line_error(result, *fragments):
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    for fragment in fragments:
        assert fragment in lines[0]


def test_errors(files):
    bad = files["tmp"] / "bad"
    bad.mkdir()
    (bad / "tabs.tsv").write_text("1\tone\ttwo\n2.5\tonly one\n", encoding="utf-8")
    (bad / "gold.tsv").write_text("four\tone\ttwo\n", encoding="utf-8")
    empty = files["tmp"] / "empty"
    empty.mkdir()

    one_line_error(run("-m", files["model"], files["tmp"] / "missing.tsv"), "missing.tsv", "no such STS file")
    one_line_error(run("-m", files["model"], bad / "tabs.tsv"), "line 2 has 2 tab-separated fields")
    one_line_error(run("-m", files["model"], bad / "gold.tsv"), "gold score 'four' is not a number")
    one_line_error(run("-m", files["model"], empty), "no *.tsv")
    one_line_error(run("-m", files["tmp"] / "nomodel", files["sts"]), "no such model")
    one_line_error(run("-m", files["model"], "--baseline", files["tmp"] / "nope.bin", files["sts"]), "no such baseline")
    one_line_error(run("-m", files["model"], env={"SCBOW_STS_DIR": str(files["tmp"] / "nowhere")}), "SCBOW_STS_DIR")
    one_line_error(run("-m", files["model"], "--baseline", bad / "gold.tsv", files["sts"]), "not a vectors file")
