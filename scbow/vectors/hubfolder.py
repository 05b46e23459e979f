"""The sentence-transformers and model2vec folders, written here (neither library is imported).

Both embed a sentence as we do, the mean of static token rows: ``tokenizer.json``, the rows in
``model.safetensors`` with a last zero row for the unknown token (sentence-transformers averages it in,
which scales a sentence vector, never turns it), the configuration and a model card. Unknown words
travel as pieces with rows of their own (a model whose rule is ``omit`` exports a plain word table).
"""

from __future__ import annotations

import json
import os
import struct
from collections import Counter
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..files import atomic_dir, foreign, output_path, resolved
from ..outputs import refuse_inside_ours, register_kind
from ..reading import os_error_text
from ..text.reader import check_text, open_text
from .card import model_card
from .hubtokenizer import tokenizer_json
from .numeric import hashed_vectors

# the names each folder holds: an existing folder of only these is replaced whole
FILES = {"sentence-transformers": ("README.md", "config_sentence_transformers.json", "modules.json", "0_StaticEmbedding"),
         "model2vec": ("README.md", "config.json", "model.safetensors", "tokenizer.json", "modules.json")}
ST_MODULE = "sentence_transformers.models.StaticEmbedding"


@register_kind
def output_kind(directory: Path) -> str | None:
    """``"a sentence-transformers folder"`` or ``"a model2vec folder"`` when ``directory`` is one."""
    if not (directory / "modules.json").is_file():
        return None
    if (directory / "0_StaticEmbedding" / "model.safetensors").is_file():
        return "a sentence-transformers folder"
    if (directory / "model.safetensors").is_file() and (directory / "tokenizer.json").is_file():
        return "a model2vec folder"
    return None


def check_folder_output(path: os.PathLike, fmt: str) -> None:
    """ModelError unless a ``fmt`` folder may be written at ``path``: a new folder, or one this format wrote."""
    output = Path(path)
    if output.name in ("", "..") or resolved(output) == resolved(Path.cwd()):  # a link loop resolves, not raises
        raise ModelError(f"-o {output}: give the new folder a name (the export replaces a folder whole; "
                         "not the current one)")
    if os.path.exists(output) and not output.is_dir():  # a dangling link is no folder yet: its target is made
        raise ModelError(f"-o {output}: exists and is not a folder; a {fmt} export is a folder (choose a new name)")
    output_path(output)  # a link into a folder that does not exist is refused, as every -o LINK is
    refuse_inside_ours(output)
    why = foreign(output, FILES[fmt]) if output.is_dir() else None
    if why is not None:
        for other, names in FILES.items():
            if other != fmt and foreign(output, names) is None:  # one we wrote
                raise ModelError(f"-o {output}: holds a {other} export; a {fmt} export is not written over "
                                 "it (choose a new name)")
        raise ModelError(f"-o {output}: {why}, so it is not replaced (move that away)")


def write_folder(model, path: Path, fmt: str, extra_words=(), license: str | None = None, whole=None) -> dict:
    """Write ``model`` as a ``fmt`` folder at ``path``, atomically (replacing only a folder of this format's
    files); ``extra_words``, ``whole``: :func:`export_rows`. Returns ``rows``, ``added``, ``restored``,
    ``pieces``, ``unk``."""
    st = fmt == "sentence-transformers"
    pieces = (whole or model).unknown_rule[0] != "omit"  # what the model does with unknown words, as far as it travels
    tokens, rows, added, restored = export_rows(model, extra_words, whole, pieces)
    n_pieces = len(tokens) - len(model.vocab) - len(added)
    spec = tokenizer_json(tokens, max([model.pieces.max_chars, *map(len, added)]) if pieces
                          else None)
    card = model_card(model, fmt, len(rows), len(added), path.name or "model", license, restored, n_pieces)
    try:
        with atomic_dir(path, same_kind=lambda d: foreign(d, FILES[fmt])) as tmp:
            inner = tmp / "0_StaticEmbedding" if st else tmp
            inner.mkdir(exist_ok=True)
            write_safetensors(inner / "model.safetensors", {"embedding.weight" if st else "embeddings": rows})
            (inner / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
            _json(tmp / "modules.json", [{"idx": 0, "name": "0", "path": inner.name if st else ".", "type": ST_MODULE}])
            if st:  # max_length and normalize are read by model2vec, which loads this folder too: no cut at 512 tokens
                _json(tmp / "config_sentence_transformers.json",
                      {"model_type": "SentenceTransformer", "prompts": {}, "default_prompt_name": None,
                       "similarity_fn_name": "cosine", "max_length": None, "normalize": False})
            else:  # max_length null: model2vec cuts nothing (its default cuts at 512 tokens)
                _json(tmp / "config.json", {"model_type": "model2vec", "architectures": ["StaticModel"],
                                            "tokenizer_name": None, "apply_pca": None, "hidden_dim": int(model.dim),
                                            "normalize": False, "max_length": None, "pooling": "mean",
                                            "embedding_dtype": "float32"})
            (tmp / "README.md").write_text(card, encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"cannot write {path}: {os_error_text(exc)}") from None
    return {"rows": len(rows), "added": len(added), "restored": restored, "pieces": n_pieces,
            "unk": spec["model"]["unk_token"]}


def _json(path: Path, value) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def write_safetensors(path: os.PathLike, tensors: dict) -> None:
    """Write float32 2-D arrays as ``safetensors.numpy.save_file`` does, a row block at a time (a memory-mapped
    matrix is never copied whole)."""
    header, offset = {}, 0
    for name, array in tensors.items():
        size = int(np.prod(array.shape)) * 4
        header[name] = {"dtype": "F32", "shape": [int(n) for n in array.shape], "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(text)))
        fh.write(text)
        for array in tensors.values():
            for start in range(0, len(array), 1 << 14):
                fh.write(np.ascontiguousarray(array[start:start + (1 << 14)], dtype="<f4").tobytes())


def export_rows(model, extra_words=(), whole=None, pieces: bool = False) -> tuple[list[str], np.ndarray, list[str], int]:
    """``(tokens, rows, added, restored)``: the model's words, the ``extra_words`` it lacks, then with
    ``pieces`` the new pieces; their float32 rows and a last zero row (the unknown token's). An added
    word's row is what ``whole.encode(..., unknown="hash")`` gives it (``whole``: the model ``model``
    is a subset of): its trained row (``restored``) or its hashed vector; a piece's, its hashed vector."""
    words = list(model.vocab.words)
    known = set(words)
    added = []
    for word in extra_words:
        if word not in known and word:
            known.add(word)
            added.append(word)
    new = [p for p in model.pieces.new if p not in known] if pieces else []
    rows = np.zeros((len(words) + len(added) + len(new) + 1, model.dim), dtype=np.float32)
    rows[:len(words)] = model.vectors  # copied straight in: a mapped matrix is never held twice
    whole = model if whole is None else whole
    own = [whole.vocab.index.get(word) for word in added]  # a word the subset left out: its trained row
    hashed = [i for i, j in enumerate(own) if j is None]
    if hashed:
        norm = whole.unknown_scale("hash") * whole.unknown_norm()
        rows[[len(words) + i for i in hashed]] = hashed_vectors([added[i] for i in hashed], model.dim, norm)
    for i, j in enumerate(own):
        if j is not None:
            rows[len(words) + i] = whole.vectors[j]
    if new:
        norm = whole.unknown_scale("pieces") * whole.unknown_norm()
        rows[len(words) + len(added):-1] = hashed_vectors(new, model.dim, norm)
    return words + added + new, rows, added, len(added) - len(hashed)


def words_of(paths, tokenize, encoding: str = "utf-8") -> list[str]:
    """The tokens of the text files ``paths`` (compressed too, read in ``encoding``), most frequent first; binary data refused."""
    counts = Counter()
    for path in paths:
        with open_text(path, encoding=encoding) as fh:
            while block := fh.read(1 << 22):
                if not block.endswith("\n"):  # whole lines only: a word is never cut in two
                    block += fh.readline()
                check_text(path, block)
                counts.update(tokenize(block))
    return [w for w, _ in counts.most_common()]
