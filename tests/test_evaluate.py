"""STS reading, scoring, significance tests and the overlap control (scbow.use.evaluate), and the
``evaluate`` command."""

import json
import re
import shutil
import warnings
from unittest.mock import ANY

import numpy as np
import pytest
from conftest import assert_clean_error, make_runner
from scipy.stats import pearsonr, spearmanr, wilcoxon

from scbow.cli import main
from scbow.errors import ModelError
from scbow.text.vocab import Vocab
from scbow.use.evaluate import (
    SIF_A,
    OverlapControl,
    STSError,
    STSScore,
    _rowwise_pearson,
    bootstrap_pearson_diff,
    correlations,
    evaluate_models,
    evaluate_systems,
    format_table,
    overlap_weights,
    pair_cosines,
    read_sts,
    score_set,
    summarize,
    wilcoxon_test,
)
from scbow.vectors.model import Model
from scbow.vectors.modeldir import save_model

WORDS = ["the", "cat", "dog", "sat", "ran", "on", "mat", "a", "big", "small", "red", "house"]

PAIRS = [
    (4.8, "The cat sat on the mat.", "A cat sat on a mat"),
    (0.4, "The dog ran.", "A red house"),
    (3.1, "A big dog", "the big cat"),
    (1.9, "small red house", "the dog sat"),
    (2.5, "The cat ran on the mat", "the dog ran on a mat"),
    (0.0, "zebra quagga", "the cat"),  # first side has no known word: not scored
    (4.0, "Big house", "a big house"),
]


def tiny_model(dim=6, seed=3):
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((len(WORDS), dim)).astype(np.float32)
    return Model(Vocab(WORDS, np.arange(len(WORDS), 0, -1)), vectors)


def write_sts(path, pairs=PAIRS):
    path.write_text("".join(f"{g}\t{a}\t{b}\n" for g, a, b in pairs), encoding="utf-8")
    return path


# --- read_sts -------------------------------------------------------------------------


def test_read_sts_parses_fields_name_blank_lines_and_crlf_and_names_unreadable_files(tmp_path):
    path = tmp_path / "2012.toy.tsv"
    path.write_bytes("\ufeff4.5\tOne é.\tTwo\r\n\n  \n0\ta\tb\n".encode())  # a byte order mark is not text
    sts = read_sts(path)
    assert sts.name == "2012.toy"
    assert sts.gold.dtype == np.float64 and sts.gold.tolist() == [4.5, 0.0]
    assert sts.first == ["One é.", "a"] and sts.second == ["Two", "b"]
    with pytest.raises(STSError, match="missing.tsv: no such file"):
        read_sts(tmp_path / "missing.tsv")
    with pytest.raises(STSError, match="is a directory"):
        read_sts(tmp_path)
    latin = tmp_path / "latin1.tsv"
    latin.write_bytes("1\tcaf\xe9\tb\n".encode("latin-1"))
    with pytest.raises(STSError, match=r"latin1.tsv: not valid utf-8 text; it may be Latin-1 \(cp1252\).*--encoding cp1252"):
        read_sts(latin)
    assert read_sts(latin, "latin-1").first == ["café"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("4.5\tonly one sentence\n", "line 1 has 2 tab-separated fields, expected 3"),
        ("1\ta\tb\n2\ta\tb\textra\n", "line 2 has 4 tab-separated fields"),
        ("high\ta\tb\n", "line 1: gold score 'high' is not a number"),
        ("4_5\ta\tb\n", "gold score '4_5' is not a number"),  # float() reads 45
        ("\uff14.\uff15\ta\tb\n", "is not a number"),  # fullwidth digits: float() reads 4.5
        ("nan\ta\tb\n", "gold score 'nan' is not a number"),
        *((f"1.0\ta\tb\n{gold}\tc\td\n", "line 2: .*not a number within") for gold in ("1e308", "-1e308", "1e7")),
        ("\n\n", "no sentence pairs"),
    ],
)
def test_read_sts_malformed(tmp_path, content, message):
    path = tmp_path / "bad.tsv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(STSError, match=message):
        read_sts(path)


# --- word pairs (model.wv.evaluate_word_pairs), read as STS files are ------------------


def word_pairs_model() -> Model:
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(12)]
    return Model(Vocab(words, [9] * 12), rng.standard_normal((12, 5)).astype(np.float32), {"unknown": "omit"})


def test_word_pairs_skip_a_byte_order_mark_comments_and_blank_lines(tmp_path):
    model = word_pairs_model()
    lines = [f"w{i}\tw{i + 1}\t{score}" for i, score in enumerate([3.5, 1.0, 8.25, 2.0, 6.0, 4.75])]
    plain, marked = tmp_path / "plain.tsv", tmp_path / "marked.tsv"
    plain.write_text("\n".join(lines) + "\n", encoding="utf-8")
    marked.write_bytes(("\ufeff" + lines[0] + "\r\n# a comment\r\n\r\n" + "\r\n".join(lines[1:]) + "\r\n").encode())
    # the first pair was 'w0' with the mark before it: outside the vocabulary, left out in silence
    assert model.wv.evaluate_word_pairs(marked) == model.wv.evaluate_word_pairs(plain)
    assert model.wv.evaluate_word_pairs(plain)[2] == 0.0
    triples = [(f"w{i}", f"w{i + 1}", s) for i, s in enumerate([3.5, 1.0, 8.25, 2.0, 6.0, 4.75])]
    assert model.wv.evaluate_word_pairs(triples) == model.wv.evaluate_word_pairs(plain)


@pytest.mark.parametrize(
    "line, message",
    [
        ("w1\tw2", "line 2 has 2 tab-separated fields, expected 3"),
        ("w1 w2 5.0", "line 2 has 1 tab-separated field, expected 3"),
        ("w1\tw2\thigh", "line 2: score 'high' is not a number"),
        ("w1\tw2\tnan", "line 2: score 'nan' is not a number within"),  # gave (nan, nan, 0.0)
        ("w1\tw2\tinf", "line 2: score 'inf' is not a number within"),  # gave a finite, wrong Spearman
        ("w1\tw2\t1e7", "line 2: score '1e7' is not a number within"),
    ],
)
def test_word_pairs_refuse_a_bad_line_naming_the_file_and_the_line(tmp_path, line, message):
    path = tmp_path / "pairs.tsv"
    path.write_text(f"w0\tw1\t1.0\n{line}\nw2\tw3\t2.0\nw4\tw5\t3.0\n", encoding="utf-8")
    with pytest.raises(STSError, match=re.escape(str(path)) + ": " + message):
        word_pairs_model().wv.evaluate_word_pairs(path)


@pytest.mark.parametrize("score", [float("nan"), float("inf"), -1e7])
def test_word_pairs_given_as_triples_refuse_a_score_that_is_not_finite(score):
    triples = [("w0", "w1", 1.0), ("w1", "w2", score), ("w2", "w3", 2.0), ("w4", "w5", 3.0)]
    with pytest.raises(ValueError, match=r"pair 2 \('w1', 'w2'\): score"):
        word_pairs_model().wv.evaluate_word_pairs(triples)


# --- scoring ----------------------------------------------------------------------------


def test_score_set_matches_scipy_and_leaves_out_pairs_without_known_words_or_an_embedding(tmp_path):
    model = tiny_model()
    sts = read_sts(write_sts(tmp_path / "toy.tsv"))
    score = score_set(model.encode, sts)

    expected = np.array([model.similarity([a], [b])[0, 0] for _, a, b in PAIRS])
    assert np.isnan(expected[5]) and np.isnan(score.predictions[5])
    np.testing.assert_allclose(score.predictions, expected, rtol=1e-14, equal_nan=True)  # pair_cosines: float64
    assert (score.pairs, score.scored) == (7, 6)

    ok = np.isfinite(expected)
    gold = np.array([g for g, _, _ in PAIRS])
    assert score.pearson == pytest.approx(pearsonr(gold[ok], expected[ok])[0], abs=1e-6)
    assert score.spearman == pytest.approx(spearmanr(gold[ok], expected[ok])[0], abs=1e-6)

    def embed(sentences):  # a zero or missing embedding: NaN
        table = {"x": [1.0, 0.0], "y": [0.0, 2.0], "zero": [0.0, 0.0], "none": [np.nan, np.nan]}
        return np.array([table[s] for s in sentences])

    cos = pair_cosines(embed, ["x", "x", "zero", "none"], ["x", "y", "x", "x"])
    np.testing.assert_allclose(cos, [1.0, 0.0, np.nan, np.nan], equal_nan=True)
    sts = read_sts(write_sts(tmp_path / "t.tsv", [(1, "cat", "dog"), (2, "zebra", "cat"), (3, "the mat", "a mat")]))
    score = score_set(tiny_model().encode, sts)  # too few pairs scored
    assert score.scored == 2 and np.isnan(score.pearson) and np.isnan(score.spearman)
    # cosines that differ only by rounding are constant: no correlation of their noise, no scipy warning
    noise = np.array([0.9999999999999998, 0.9999999999999998, 1.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert all(np.isnan(correlations(np.array([1.0, 2, 3, 4]), noise)))
        assert correlations(np.array([1.0, 2, 3, 4]), 0.5 + np.array([0, 1, 2, 3]) * 1e-9)[1] == pytest.approx(1.0)


def _score(name, pearson, spearman, scored, pairs=None):
    return STSScore(name, pairs or scored, scored, pearson, spearman, np.zeros(0))


def test_summarize_mean_is_over_sets_weighted_is_by_scored_pairs():
    scores = [_score("a", 0.5, 0.4, 100), _score("b", 0.2, 0.1, 300, pairs=320), _score("c", np.nan, np.nan, 2)]
    s = summarize(scores)
    assert s["pearson_mean"] == pytest.approx((0.5 + 0.2) / 2)
    assert s["spearman_mean"] == pytest.approx((0.4 + 0.1) / 2)
    assert s["pearson_weighted"] == pytest.approx((0.5 * 100 + 0.2 * 300) / 400)
    assert s["spearman_weighted"] == pytest.approx((0.4 * 100 + 0.1 * 300) / 400)
    assert s["sets_in_mean"] == 2
    assert np.isnan(summarize([_score("c", np.nan, np.nan, 2)])["pearson_mean"])


# --- significance -----------------------------------------------------------------------


def synthetic(n=400, seed=7):
    rng = np.random.default_rng(seed)
    gold = rng.uniform(0, 5, n)
    good = gold / 5 + 0.1 * rng.standard_normal(n)
    bad = gold / 5 + 0.8 * rng.standard_normal(n)
    return gold, good, bad


def test_wilcoxon_tells_a_clearly_better_system_and_the_bootstrap_is_reproducible_over_scored_pairs():
    _, good, bad = synthetic()
    bad = bad + 0.3  # a systematic shift: the systems clearly score the pairs differently
    good[:5] = np.nan
    bad[-3:] = np.nan
    stat, p = wilcoxon_test(good, bad)
    ref = wilcoxon(good[5:-3], bad[5:-3])
    assert stat == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue)
    assert p < 1e-4
    assert wilcoxon_test(synthetic()[1], synthetic()[1]) == (0.0, 1.0)  # identical systems
    stat, p = wilcoxon_test(np.array([1.0, np.nan]), np.array([np.nan, 2.0]))
    assert np.isnan(stat) and np.isnan(p)
    gold, good, bad = synthetic()
    assert bootstrap_pearson_diff(gold, good, good.copy()) == (0.0, 0.0, 0.0)
    first = bootstrap_pearson_diff(gold, good, bad, resamples=200, seed=5)
    assert bootstrap_pearson_diff(gold, good, bad, resamples=200, seed=5) == first
    assert bootstrap_pearson_diff(gold, good, bad, resamples=200, seed=6) != first
    # unscored pairs are dropped; three are needed
    gold, good, bad = synthetic(n=50)
    good_nan = good.copy()
    good_nan[:10] = np.nan
    diff, _, _ = bootstrap_pearson_diff(gold, good_nan, bad, resamples=100)
    assert diff == pytest.approx(pearsonr(gold[10:], good[10:])[0] - pearsonr(gold[10:], bad[10:])[0])
    assert all(np.isnan(bootstrap_pearson_diff(gold[:2], good[:2], bad[:2])))
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((5, 30)), rng.standard_normal((5, 30))
    expected = [np.corrcoef(x[i], y[i])[0, 1] for i in range(5)]
    np.testing.assert_allclose(_rowwise_pearson(x, y), expected)


# --- overlap control --------------------------------------------------------------------


def test_overlap_control_averages_all_tokens_repeats_count_and_is_deterministic():
    cos = pair_cosines(OverlapControl(dim=50).embed, ["The zebra grazed.", "a b"], ["the ZEBRA grazed .", "c d"])
    assert cos[0] == pytest.approx(1.0, abs=1e-6)
    assert abs(cos[1]) < 0.5  # no shared token: nearly orthogonal random vectors
    control = OverlapControl(dim=20)
    emb = control.embed(["Qwxz qwxz the", ""])
    assert emb.shape == (2, 20) and emb.dtype == np.float32
    expected = (2 * control.vector("qwxz") + control.vector("the")) / 3
    np.testing.assert_allclose(emb[0], expected, rtol=1e-5)
    assert np.isnan(emb[1]).all()
    with pytest.raises(TypeError):
        control.embed("one sentence")
    # deterministic: a different history of seen tokens (a different "vocabulary") does not change a vector
    sentences = ["the cat sat", "a quagga", "the cat sat"]
    control.embed([f"word{i}" for i in range(2000)] + ["zebra cat"])
    np.testing.assert_array_equal(OverlapControl(dim=20).embed(sentences), control.embed(sentences))
    np.testing.assert_array_equal(control.embed(sentences[:1]), control.embed(sentences)[:1])


def test_weighted_overlap_control_weighs_each_token_by_sif_and_evaluate_names_it(tmp_path):
    """The weighted control: a/(a + p(w)) from the vocabulary counts; a word outside it weighs 1."""
    words, counts = ["the", "cat", "mat"], [900, 50, 10]
    w = overlap_weights(counts, 1000, 1e-3)
    np.testing.assert_allclose(w, [1e-3 / (1e-3 + c / 1000) for c in counts], rtol=1e-6)
    np.testing.assert_array_equal(overlap_weights(counts, 1000, 0.0), overlap_weights(counts, 1000, SIF_A))
    control = OverlapControl.weighted(words, counts, 1000, 1e-3, dim=12)
    plain = OverlapControl(dim=12)
    emb = control.embed(["the cat zebra"])[0]
    expected = (w[0] * plain.vector("the") + w[1] * plain.vector("cat") + plain.vector("zebra")) / 3
    np.testing.assert_allclose(emb, expected, rtol=1e-5)
    # the frequent word hardly counts: "the cat" is nearly "cat", unlike in plain overlap
    cos = pair_cosines(control.embed, ["the cat"], ["cat"])[0]
    assert cos > 0.99 > pair_cosines(plain.embed, ["the cat"], ["cat"])[0]
    model = tiny_model()
    model.vocab.counts[:] = np.arange(len(WORDS), 0, -1) * 100
    model.config.update(frequency_weight=0.01, unknown="hash")  # its own rule: 'zebra quagga' is scored too
    model.info["corpus"] = {"raw_tokens": int(model.vocab.counts.sum()) + 500}
    save_model(model, tmp_path / "m")
    sts = write_sts(tmp_path / "toy.tsv")
    report = evaluate_models([sts], model=tmp_path / "m", control="overlap", resamples=100)
    assert list(report["comparisons"]) == ["weighted overlap"] and "a = 0.01" in report["sources"]["weighted overlap"]
    assert report["sets"][0]["scored"] == 7
    expected = OverlapControl.weighted(WORDS, model.vocab.counts, int(model.vocab.counts.sum()) + 500, 0.01)
    s = read_sts(sts)
    assert report["sets"][0]["comparisons"]["weighted overlap"]["pearson"] == pytest.approx(
        score_set(expected.embed, s).pearson)
    plain = evaluate_models([sts], model=tmp_path / "m", control="plain-overlap", resamples=100)
    assert list(plain["comparisons"]) == ["plain overlap"]
    assert plain["sets"][0]["comparisons"]["plain overlap"]["pearson"] == pytest.approx(
        score_set(OverlapControl(300).embed, s).pearson)
    for shown, name in ((report, "weighted overlap"), (plain, "plain overlap")):  # named beside the model
        table = format_table(shown)
        top = next(line for line in table.splitlines() if line.split()[:1] == ["model"])  # the systems' row
        assert f"{name}: untrained control" in table and name in top


# --- report -----------------------------------------------------------------------------


def test_evaluate_systems_report_and_table(tmp_path):
    sets = [read_sts(write_sts(tmp_path / "toy.tsv")), read_sts(write_sts(tmp_path / "toy2.tsv", PAIRS[:5]))]
    model = tiny_model()
    report = evaluate_systems({"model": model.encode, "overlap": OverlapControl(16).embed}, sets, resamples=200)
    assert report["system"] == "model" and [s["name"] for s in report["sets"]] == ["toy", "toy2"]
    toy = report["sets"][0]
    assert (toy["pairs"], toy["scored"]) == (7, 6)
    over = toy["comparisons"]["overlap"]
    assert over["scored"] == 7 and over["common"] == 6
    assert set(over) >= {"pearson", "spearman", "wilcoxon_statistic", "wilcoxon_p", "pearson_diff", "pearson_diff_ci95"}
    assert report["pearson_mean"] == pytest.approx(np.mean([s["pearson"] for s in report["sets"]]))
    assert report["pearson_weighted"] == pytest.approx((toy["pearson"] * 6 + report["sets"][1]["pearson"] * 5) / 11)
    assert report["comparisons"]["overlap"]["sets_in_mean"] == 2

    table = format_table(report)
    assert "toy2" in table and "wilcox p" in table and "95% CI" in table
    assert "It shows the systems differ, not which is better." in table
    assert "mean: unweighted over sets; weighted: weighted by the pairs scored" in table
    assert "pairs with a side without any known word (no embedding) are not scored" in table
    assert len(table.splitlines()[1]) > 80 and table.count("\ntoy2 ") == 1
    narrow = format_table(report, width=80)  # too narrow for one table: the scores, then the tests
    assert max(map(len, narrow.splitlines())) <= 80 and narrow.count("\ntoy2 ") == 2
    assert format_table(report, width=300) == table
    sets = [read_sts(write_sts(tmp_path / "t.tsv", [(1, "cat", "dog"), (2, "zebra", "cat"), (3, "the", "a")]))]
    report = evaluate_systems({"model": tiny_model().encode}, sets)
    assert report["sets"][0]["pearson"] is None and report["pearson_mean"] is None
    assert " - " in format_table(report)


@pytest.mark.parametrize("level", [0.8, 0.95])
def test_bootstrap_interval_matches_a_plain_loop_at_the_requested_level(level):
    """The vectorised bootstrap against a loop over the same resamples, at two levels."""
    rng = np.random.default_rng(11)
    gold = rng.uniform(0, 5, 60)
    a = gold + rng.normal(0, 1.0, 60)
    b = gold + rng.normal(0, 2.0, 60)
    diff, low, high = bootstrap_pearson_diff(gold, a, b, resamples=400, seed=3, level=level)
    loop_rng = np.random.default_rng(3)
    diffs = []
    for _ in range(400):
        i = loop_rng.integers(0, 60, size=60)
        diffs.append(pearsonr(gold[i], a[i])[0] - pearsonr(gold[i], b[i])[0])
    tail = 100 * (1 - level) / 2
    assert diff == pytest.approx(pearsonr(gold, a)[0] - pearsonr(gold, b)[0], abs=1e-12)
    assert (low, high) == pytest.approx(tuple(np.percentile(diffs, [tail, 100 - tail])), abs=1e-9)


# --- the evaluate command ------------------------------------------------------------


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    words = WORDS + ["."]
    model = Model(Vocab(words, np.ones(len(words))), rng.standard_normal((len(words), 8)).astype(np.float32))
    save_model(model, tmp_path / "model")
    baseline = tmp_path / "baseline.txt"  # word2vec text, a smaller vocabulary: 'house' is unknown
    rows = [f"{w} " + " ".join(f"{x:.5f}" for x in rng.standard_normal(5)) for w in words if w != "house"]
    baseline.write_text(f"{len(rows)} 5\n" + "\n".join(rows) + "\n", encoding="utf-8")
    sts = tmp_path / "sts"
    sts.mkdir()
    write_sts(sts / "2012.a.tsv", PAIRS[:6])  # a side without a known word: 6 pairs, 5 scored
    write_sts(sts / "2013.b.tsv", [(4.0, "Big house", "a big house"), (1.0, "the mat", "a dog ran"),
                                   (2.2, "red cat", "small cat"), (0.5, "on a mat", "the big house")])
    return {"model": str(tmp_path / "model"), "baseline": str(baseline), "sts": sts, "tmp": tmp_path}


def run(*args, env=None):
    return make_runner().invoke(main, ["evaluate", *map(str, args)], env=env)


def test_table_of_the_default_sts_folder(files):
    result = run("-m", files["model"], env={"SCBOW_STS_DIR": str(files["sts"])})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    header = next(line for line in lines if line.startswith("set "))
    assert header.split() == ["set", "pairs", "scored", "pearson", "spearman"]
    row = next(line for line in lines if line.startswith("2012.a "))
    assert row.split()[1:3] == ["6", "5"] and any(line.startswith("2013.b ") for line in lines)
    assert any(line.startswith("mean ") for line in lines) and any(line.startswith("weighted ") for line in lines)
    # the table's notes: test_evaluate_systems_report_and_table
    result = run("-m", files["model"], "--json", files["sts"] / "2013.b.tsv", files["sts"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert [s["name"] for s in out["sets"]] == ["2013.b", "2012.a"]  # in the order given, each once
    assert "each file is read once" in result.stderr
    assert out["system"] == "model" and out["comparisons"] == {} and set(out["notes"]) >= {"mean", "unscored"}
    hashed = json.loads(run("-m", files["model"], "--json", "--unknown", "hash", files["sts"] / "2012.a.tsv").stdout)
    assert hashed["sets"][0]["scored"] == 6 and "unknown words: hash" in hashed["sources"]["model"]  # 'zebra quagga' too


def test_the_real_sts_files(files):
    from conftest import DATA_DIR, missing_data

    path = DATA_DIR / "sts" / "2012.MSRvid.tsv"
    if not path.is_file():
        missing_data(f"real STS set {path}")
    [row] = evaluate_models([path], model=files["model"], resamples=100)["sets"]
    assert row["pairs"] == 750 and 0 < row["scored"] <= 750


def test_baseline_word2vec_and_the_overlap_control_alone(files, monkeypatch):
    """evaluate_models, which the command prints as it is (its table notes: test_evaluate_systems_report_and_table)."""
    out = evaluate_models([files["sts"]], model=files["model"], baseline=files["baseline"], resamples=100)
    assert out["sources"]["baseline"] == files["baseline"]
    b = out["sets"][1]["comparisons"]["baseline"]
    assert b["scored"] == 4 and b["common"] == 4  # 'house' alone is unknown, no side is only 'house'
    assert b["pearson_diff"] == pytest.approx(out["sets"][1]["pearson"] - b["pearson"])
    low, high = b["pearson_diff_ci95"]
    assert low <= high and 0 <= b["wilcoxon_p"] <= 1
    assert out["comparisons"]["baseline"]["pearson_mean"] is not None
    (files["tmp"] / "empty").mkdir()  # no default model there: the control alone, as with none (below)
    monkeypatch.setenv("SCBOW_MODEL", str(files["tmp"] / "empty"))
    assert evaluate_models([files["sts"]], control="plain-overlap", resamples=100)["system"] == "plain overlap"
    damaged = shutil.copytree(files["model"], files["tmp"] / "damaged")
    (damaged / "config.json").unlink()  # a damaged default model is refused, with a control or without
    monkeypatch.setenv("SCBOW_MODEL", str(damaged))
    with pytest.raises(ModelError, match="missing config.json"):
        evaluate_models([files["sts"]], control="plain-overlap")
    monkeypatch.setenv("SCBOW_MODEL", str(files["tmp"] / "no-model-here"))  # (a dangling link: the same)
    out = evaluate_models([files["sts"]], control="plain-overlap", resamples=100)
    assert out["system"] == "plain overlap" and list(out["sources"]) == ["plain overlap"]
    a = out["sets"][0]
    assert a["scored"] == a["pairs"] == 6  # every token has a vector: unknown words count too
    assert -1 <= a["pearson"] <= 1
    # the weighted control weighs by a model's counts: with no model it is one clear error
    with pytest.raises(ModelError, match="--control overlap.*plain-overlap"):
        evaluate_models([files["sts"]], control="overlap")
    # and without -m it takes the default model
    monkeypatch.setenv("SCBOW_MODEL", files["model"])
    assert set(evaluate_models([files["sts"]], control="overlap", resamples=100)["sources"]) == {"model", "weighted overlap"}
    # a default model that is a word2vec file is scored beside a control too (it was left out in silence)
    monkeypatch.setenv("SCBOW_MODEL", files["baseline"])
    out = evaluate_models([files["sts"]], control="plain-overlap", resamples=100)
    assert out["sources"] == {"model": files["baseline"], "plain overlap": ANY}


def test_errors(files):
    """Each a one-line error of the command (how it prints one: test_cli); a malformed line: test_read_sts_malformed."""
    (files["tmp"] / "gold.tsv").write_text("four\tone\ttwo\n", encoding="utf-8")
    (files["tmp"] / "empty").mkdir()
    with pytest.raises(STSError, match="missing.tsv: no such STS file"):
        evaluate_models([files["tmp"] / "missing.tsv"], model=files["model"])
    with pytest.raises(STSError, match="no \\*.tsv"):
        evaluate_models([files["tmp"] / "empty"], model=files["model"])
    with pytest.raises(ModelError, match="no such baseline"):
        evaluate_models([files["sts"]], model=files["model"], baseline=files["tmp"] / "nope.bin")
    result = run("-m", files["model"], env={"SCBOW_STS_DIR": str(files["tmp"] / "nowhere")})
    assert result.output.strip() == assert_clean_error(result, "SCBOW_STS_DIR", exit_code=1)  # the whole output
    with pytest.raises(ModelError, match="not a vectors file"):
        evaluate_models([files["sts"]], model=files["model"], baseline=files["tmp"] / "gold.tsv")
