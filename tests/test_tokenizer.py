"""The tokenizer (scbow.text.tokenize): the units of the scripts written without spaces (Japanese,
Chinese, Thai), the faster regexes for text without them; and the exported
folders' ``tokenizer.json`` (scbow.vectors.hubtokenizer) splitting Japanese exactly as ``encode``
does, through model2vec and sentence-transformers (each skips where absent)."""

from __future__ import annotations

import json
import lzma

import numpy as np
import pytest
from conftest import CORPUS_1M, DATA_DIR, make_runner, missing_data, train_args

import scbow
from scbow.cli import main
from scbow.text.tokenize import tokenize, tokenize_lines

JSTS = DATA_DIR / "sts-ja" / "jsts.dev.tsv"
AOZORA = DATA_DIR / "corpus" / "aozora-ja-40M.jsonl.xz"

HAND_WRITTEN = [  # (text, tokens)
    ("日本語のテキストです", ["日", "本", "語", "の", "テ", "キ", "ス", "ト", "で", "す"]),
    ("人々はすごーいと言った。", ["人", "々", "は", "す", "ご", "ー", "い", "と", "言", "っ", "た", "。"]),
    ("ｶﾀｶﾅとＡＢＣ123", ["カ", "タ", "カ", "ナ", "と", "abc123"]),  # NFKC: half-width kana, full-width letters
    ("我爱北京天安门。今天天气很好", ["我", "爱", "北", "京", "天", "安", "门", "。",
                                     "今", "天", "天", "气", "很", "好"]),
    ("他说：“你好！”", ["他", "说", ":", '"', "你", "好", "!", '"']),
    ("𠮟る", ["𠮟", "る"]),  # an ideograph outside the basic plane
    ("ภาษาไทยไม่มีช่องว่าง", ["ภา", "ษา", "ไท", "ย", "ไม่", "มี", "ช่", "อ", "ง", "ว่า", "ง"]),
    ("น้ำ ๒๕๖๗ ๆ", ["น้\u0e4dา", "๒๕๖๗", "ๆ"]),  # NFKC writes ำ as a mark and า; Thai digits are a word
    ("iPhone 15を買った", ["iphone", "15", "を", "買", "っ", "た"]),
]


def split(tok, text: str) -> list[str]:
    return [piece for piece, _ in tok.pre_tokenizer.pre_tokenize_str(tok.normalizer.normalize_str(text))]


def hub_tokenizer():
    from scbow.vectors.hubtokenizer import tokenizer_json

    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (installed with model2vec) is absent")
    return tokenizers.Tokenizer.from_str(json.dumps(tokenizer_json(["the"])))


def jsts_sentences() -> list[str]:
    from scbow.use.evaluate import read_sts

    if not JSTS.is_file():
        missing_data(f"JSTS dev {JSTS}")
    sts = read_sts(JSTS)
    return list(dict.fromkeys(sts.first + sts.second))


@pytest.mark.parametrize("text, tokens", HAND_WRITTEN, ids=[t for t, _ in HAND_WRITTEN])
def test_units_of_the_scripts_without_spaces(text, tokens):
    assert tokenize(text) == tokens


def test_english_tokens_as_under_the_whole_regex():
    """The regex with the units gives the faster regex's tokens on English (so text without the scripts
    may take the faster one), line by line and on a block of lines."""
    from scbow.text.tokenize import _patterns, _unit_patterns, fold

    if not CORPUS_1M.is_file():
        missing_data(f"real corpus {CORPUS_1M}")
    with lzma.open(CORPUS_1M, "rt", encoding="utf-8") as fh:
        lines = fh.read().splitlines()[::5]
    (fast, fast_lines), (whole, whole_lines, _) = _patterns(), _unit_patterns()
    lines = [fold(line).lower() for line in lines]
    assert len(lines) > 10000 and all(whole.findall(line) == fast.findall(line) for line in lines)
    block = "\n".join(lines[:3000])
    assert whole_lines.findall(block) == fast_lines.findall(block) == tokenize_lines(block)


def test_ascii_regex_as_the_general_one():
    """The regexes ASCII text takes split it as the general ones: every ASCII character alone, between
    letters and next to an apostrophe, and random ASCII strings, line by line and as one block."""
    import random

    from scbow.text.tokenize import _ASCII_OR_NEWLINE_RE, _ASCII_RE, _patterns

    chars = [chr(c) for c in range(128)]
    rng = random.Random(0)
    texts = [f"{c}|a{c}b|'{c}'|a'{c}" for c in chars]
    texts += ["".join(rng.choices(chars + list("ab'_1 "), k=rng.randint(1, 30))) for _ in range(3000)]
    general, general_lines = _patterns()
    assert all(_ASCII_RE.findall(t) == general.findall(t) for t in texts)
    block = "\n".join(texts)
    assert _ASCII_OR_NEWLINE_RE.findall(block) == general_lines.findall(block)


def test_lines_keep_their_line_ends_in_every_script():
    text = "日本語です\nthe end\nภาษา"
    assert tokenize_lines(text) == ["日", "本", "語", "で", "す", "\n", "the", "end", "\n", "ภา", "ษา"]
    assert tokenize_lines("A b.\n\nC!\n") == ["a", "b", ".", "\n", "\n", "c", "!", "\n"]
    assert scbow.tokenize("A b.\nC!") == ["a", "b", ".", "c", "!"]  # the package's tokenize: no line ends


def test_exported_tokenizer_splits_as_ours():
    tok = hub_tokenizer()
    texts = jsts_sentences() + [t for t, _ in HAND_WRITTEN] + ["the end, don’t ＡＢＣ हिन्दी"]
    assert all(split(tok, t) == tokenize(t) for t in texts)


@pytest.mark.parametrize("text", ["ΟΔΟΣ ΟΔΟΣ. ΣΑΣ Σ", "1⅞ miles, 2½", "don’t ‘quote’ “me”", "ﬁne ＡＢＣ ㋿ 🯱🯲",
                                  "İstanbul naïve Ǆemal", "a_b c--d\te\u00a0f\u2028g", "", "   ",
                                  "हिन्दी भाषा", "שָׁלוֹם q\u0304'q\u0304 \u0301a", "ΟΔΟ\u0301Σ"])
def test_exported_tokenizer_catches(text):
    """The probe's catches: Python's \\w and \\s (fractions), final sigma, NFKC of newer characters,
    combining marks in words."""
    assert split(hub_tokenizer(), text) == tokenize(text)


def test_final_sigma_looks_back_past_at_most_sigma_lookbehind_marks():
    """The one documented difference: Python looks back past any number of case-ignorable
    characters before a final sigma; the exported normalizer past SIGMA_LOOKBEHIND of them."""
    from scbow.vectors.hubtokenizer import SIGMA_LOOKBEHIND

    tok = hub_tokenizer()
    near, far = "A" + "'" * SIGMA_LOOKBEHIND + "Σ", "A" + "'" * (SIGMA_LOOKBEHIND + 1) + "Σ"
    assert split(tok, near) == tokenize(near)
    assert split(tok, far) != tokenize(far)


@pytest.mark.slow
def test_exported_tokenizer_on_every_code_point():
    """Every character alone, between Latin letters, before a final sigma, between ideographs and between
    Thai letters: the only differences are characters Python's Unicode tables do not have yet (category
    Cn), which ``tokenizers`` lowercases."""
    import sys
    import unicodedata

    tok = hub_tokenizer()
    points = [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    forms = [lambda c: chr(c), lambda c: f"a{chr(c)}b", lambda c: f"A{chr(c)}Σ", lambda c: f"日{chr(c)}の",
             lambda c: f"ก{chr(c)}า"]
    differ = []
    for start in range(0, len(points), 512):
        chunk = points[start:start + 512]
        # a block of characters, each form between spaces, checked at once; one at a time only in a block that differs
        if all(split(tok, t) == tokenize(t) for t in (" ".join(f(c) for c in chunk) for f in forms)):
            continue
        differ += [c for c in chunk if any(split(tok, f(c)) != tokenize(f(c)) for f in forms)]
    assert all(unicodedata.category(chr(c)) == "Cn" for c in differ), [hex(c) for c in differ]
    assert len(differ) <= 60, len(differ)  # 55 on Python 3.11 (Unicode 14) with tokenizers 0.23 (Unicode 16)


@pytest.fixture(scope="module")
def japanese_model(tmp_path_factory):
    """A small model trained on the first Aozora works, prepared by ``prepare`` (no library)."""
    if not AOZORA.is_file():
        missing_data(f"Aozora corpus {AOZORA}")
    base = tmp_path_factory.mktemp("ja")
    with lzma.open(AOZORA, "rt", encoding="utf-8") as fh:
        (base / "works.jsonl").write_text("".join(next(fh) for _ in range(30)), encoding="utf-8")
    runner = make_runner()
    result = runner.invoke(main, ["prepare", str(base / "works.jsonl"), "-o", str(base / "corpus.txt"),
                                  "--segmenter", "lines", "-q"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, train_args(base / "corpus.txt", base / "model"))
    assert result.exit_code == 0, result.output
    return base / "model"


@pytest.mark.parametrize("fmt", ["model2vec", "sentence-transformers"])
def test_exported_folders_encode_japanese_as_encode(japanese_model, tmp_path, fmt):
    """Cosine 1.000000 against ``Model.encode`` on every JSTS dev sentence, unknown words in pieces."""
    from scbow.vectors.numeric import row_cosines

    model = scbow.load(japanese_model)
    out = tmp_path / fmt
    result = make_runner().invoke(main, ["export", "-m", str(japanese_model), "--format", fmt, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "language:\n- ja\n" in (out / "README.md").read_text(encoding="utf-8")  # the card's guess
    sentences = jsts_sentences()
    ours = model.encode(sentences)
    ok = ~np.isnan(ours).any(axis=1)
    assert ok.all()
    loaders = [lambda: pytest.importorskip("model2vec", reason="model2vec is absent").StaticModel.from_pretrained]
    if fmt == "sentence-transformers":
        loaders.append(lambda: pytest.importorskip(
            "sentence_transformers", reason="sentence-transformers (and torch) are absent").SentenceTransformer)
    for loader in loaders:
        theirs = np.asarray(loader()(str(out)).encode(sentences), dtype=np.float64)
        assert np.round(row_cosines(theirs, ours.astype(np.float64)), 6).min() == 1.0


def test_neighbors_of_a_word_of_several_tokens_names_them(japanese_model):
    from conftest import assert_clean_error

    result = make_runner().invoke(main, ["neighbors", "-m", str(japanese_model), "東京"])
    assert_clean_error(result, "'東京' is 2 tokens", "東 京 (neighbors 東 京")
