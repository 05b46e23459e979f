"""The model card, the ``README.md`` of an exported folder (:mod:`scbow.vectors.hubfolder`): front
matter the Hugging Face hub and model2vec read, what the model is and was trained on, its scores,
how to load it."""

from __future__ import annotations

import json
import os

from ..text.tokenize import TOKENIZER_VERSION

# what the tokenizer does to text, in words (scbow.text.tokenize)
TOKENIZER_RULE = ("NFKC, typographic quotes as ASCII, lowercase, then each Han ideograph, each kana and each Thai "
                  "cluster, words (with their combining marks) and single punctuation marks")
ENGLISH = {"the", "of", "and", "to", "a", "in", "that", "is", "was", "he", "it", "for"}


def languages(words) -> list[str]:
    """The card's ``language`` codes, guessed from the most frequent words: ``ja`` when kana are among
    them, ``zh`` for Han without kana, ``ko`` for Hangul, ``th`` for Thai, ``en`` when most of the
    commonest English words are (other languages of the Latin script are not told apart: none)."""
    top = list(words[:200])
    text = "".join(top)
    if any("\u3041" <= c <= "\u30ff" for c in text):
        return ["ja"]
    scripts = (("zh", "\u4e00", "\u9fff"), ("ko", "\uac00", "\ud7a3"), ("th", "\u0e01", "\u0e4e"))
    found = [code for code, lo, hi in scripts if sum(lo <= c <= hi for c in text) > len(text) // 4]
    if found:
        return found[:1]
    return ["en"] if len(ENGLISH & set(top[:50])) >= 8 else []


SHOWN_SETTINGS = ("dim", "word_passes", "word_dim", "epochs", "negatives", "frequency_weight", "common_components",
                  "unknown", "seed")


def model_card(model, fmt: str, n_rows: int, added: int, name: str, license: str | None = None,
               restored: int = 0, pieces: int = 0) -> str:
    """README.md for a ``fmt`` folder named ``name`` of ``n_rows`` rows: ``added`` words added
    (``restored`` of them with their own trained rows), ``pieces`` rows for unknown words' pieces."""
    library = "sentence-transformers" if fmt == "sentence-transformers" else "model2vec"
    tags = [library, "sentence-similarity", "feature-extraction", "static-embeddings", "siamese-cbow", "scbow-numba"]
    if fmt == "model2vec":
        tags.insert(1, "sentence-transformers")  # the folder loads there too
    front = ["---", f"library_name: {library}", "tags:", *[f"- {t}" for t in tags]]
    codes = languages(model.vocab.words)
    if codes:
        front += ["language:", *[f"- {code}" for code in codes]]
    if license:
        front.append(f"license: {json.dumps(license, ensure_ascii=False)}")  # a JSON string is a YAML string
    front += ["pipeline_tag: sentence-similarity", "---", ""]
    info, config = model.info, model.config
    corpus = info.get("corpus") if isinstance(info.get("corpus"), dict) else {}
    lines = [f"# {name}", "",
             "Static sentence embeddings from scbow-numba (Siamese CBOW, Kenter et al. 2016): "
             "a sentence vector is the mean of its words' rows. No transformer, no GPU: encoding is a table look-up.",
             "", "## What it is", ""]
    files = corpus.get("files")
    if isinstance(files, list) and files:
        lines.append(f"- Trained on: {', '.join(os.path.basename(str(f)) for f in files)}"
                     + (f" ({corpus['raw_tokens']:,} tokens, {corpus.get('sentences', 0):,} sentences)"
                        if isinstance(corpus.get("raw_tokens"), int) else ""))
    elif info.get("source"):
        lines.append(f"- Vectors from: {os.path.basename(str(info['source']))}")
    lines.append(f"- Vocabulary: {len(model.vocab):,} words"
                 + (f" (seen at least {corpus['min_count']} times)" if isinstance(corpus.get("min_count"), int) else "")
                 + (f", and {added:,} more words" + (f", {restored:,} of them left out above with their trained rows, the "
                                                      "others" if restored else "")
                    + " with the hashed vectors scbow-numba gives unknown words" if added else "")
                 + (f", and {pieces:,} pieces that unknown words are split into" if pieces else "")
                 + f"; {model.dim} dimensions; {n_rows:,} rows with the unknown token's")
    settings = ", ".join(f"{k} {config[k]}" for k in SHOWN_SETTINGS if k in config)
    if settings:
        lines.append(f"- Settings: {settings}")
    lines.append(f"- Tokenizer: scbow-numba tokenizer version {TOKENIZER_VERSION} ({TOKENIZER_RULE}), "
                 "reproduced by `tokenizer.json`")
    curve = info.get("curve")
    points = curve.get("points") if isinstance(curve, dict) else None
    if isinstance(points, list) and points and isinstance(points[-1], dict) and isinstance(points[-1].get("dev"), dict):
        dev, tests = points[-1]["dev"], points[-1].get("test")

        def score(key):  # a correlation the curve could not compute (recorded as null) is not a number
            return "n/a" if dev.get(key) is None else f"{dev[key]:.4f}"

        lines += ["", "## Scores", "",
                  f"STS Benchmark dev set ({dev.get('pairs', '?')} pairs), recorded by scbow-numba at the end of training "
                  f"(unknown words: {curve.get('unknown', 'omit')}): Pearson {score('pearson')}, "
                  f"Spearman {score('spearman')}."]
        if isinstance(tests, dict) and isinstance(tests.get("pearson_mean"), (int, float)):
            sets = tests.get("pearson") if isinstance(tests.get("pearson"), dict) else {}
            lines.append(f"Mean Pearson over {len(sets) or 'the'} STS test sets: {tests['pearson_mean']:.4f}.")
    imports, loader = (("from model2vec import StaticModel", "StaticModel.from_pretrained") if fmt == "model2vec" else
                       ("from sentence_transformers import SentenceTransformer", "SentenceTransformer"))
    load = ["```python", imports, "", f'model = {loader}("PATH")  # this folder',
            'embeddings = model.encode(["A first sentence.", "A second one."])', "```"]
    if fmt == "model2vec":
        load += ["", "sentence-transformers loads this folder too: `SentenceTransformer(\"PATH\")`."]
    if pieces:
        how = ("A word outside the vocabulary is split into pieces (WordPiece: the vocabulary's words and their runs "
               "of up to two characters, each piece a row), as scbow-numba splits it, so cosine similarities equal "
               "scbow-numba's (`scbow.load(MODEL).encode(sentences, unknown=\"pieces\")`"
               + (", the model's own rule)." if model.unknown_rule[0] == "pieces" else
                  "). The model's own rule gives each unknown word one hashed vector, which a table of tokens cannot "
                  "carry; pieces score a little higher on the STS-B dev set.")
               + " A sentence with nothing to average (no known word, no piece) embeds as zeros.")
    else:
        how = ("Words outside the vocabulary are left out, as the model's own rule does. A sentence with no known "
               "word embeds as zeros. Cosine similarities equal scbow-numba's "
               "(`scbow.load(MODEL).encode(sentences, unknown=\"omit\")`).")
    lines += ["", "## Use", "", *load, "", how]
    return "\n".join(front + lines) + "\n"

