"""Model directories and word2vec files (scbow.vectors.formats, modeldir, word2vec): save, load, damage."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import re
import shutil
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_clean_error

import scbow
from scbow.cli import main
from scbow.text.vocab import Vocab
from scbow.use.evaluate import evaluate_models
from scbow.vectors import modeldir
from scbow.vectors.export import export_word2vec
from scbow.vectors.formats import ModelError, load_model, load_word2vec
from scbow.vectors.model import Model
from scbow.vectors.modeldir import FORMAT_VERSION, model_id, save_model

WORDS = ["the", ",", "cat", "don't", "état", "sat", "dog", "naïve", "o'clock", "."]


def make_model(seed=0, dim=7, words=WORDS) -> Model:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((len(words), dim)).astype(np.float32)
    vectors[0, 0] = 1e-30  # tiny and huge values survive the text format
    vectors[1, 1] = -9.87654e14  # the largest a model may hold is 1e15 (formats.MAX_VALUE)
    counts = np.arange(len(words), 0, -1) * 10
    config = {"dim": dim, "lr": 0.05, "negative_mode": "document", "seed": seed}
    info = {"corpus": {"sentences": 123}, "training": {"examples": 456, "final_loss": 1.2}}
    return Model(Vocab(words, counts), vectors, config, info)


def assert_same_model(a: Model, b: Model):
    assert a.vocab.words == b.vocab.words
    assert np.array_equal(np.asarray(a.vectors), np.asarray(b.vectors))


def without_id(info: dict) -> dict:
    """A loaded model's info less the ``model_id`` its save recorded."""
    return {k: v for k, v in info.items() if k != "model_id"}


@pytest.mark.parametrize("mmap", [True, False])
def test_save_load_round_trip(tmp_path, mmap):
    model = make_model()
    out = save_model(model, tmp_path / "a" / "b" / "m")  # missing parents are made
    assert sorted(os.listdir(out)) == ["config.json", "vectors.npy", "vocab.txt"]
    loaded = load_model(out, mmap=mmap)
    assert_same_model(model, loaded)
    assert loaded.vocab.counts.tolist() == model.vocab.counts.tolist()
    assert loaded.vectors.dtype == np.float32
    assert isinstance(loaded.vectors, np.memmap) == mmap
    assert loaded.config == model.config
    assert loaded.info == model.info  # save_model set model.info's model_id to the one it recorded
    meta = json.loads((out / "config.json").read_text())
    assert meta["format_version"] == FORMAT_VERSION
    assert loaded.info["model_id"] == meta["model_id"] and len(meta["model_id"]) == 32  # a new id every save
    assert json.loads((save_model(model, out) / "config.json").read_text())["model_id"] != meta["model_id"]
    assert meta["config"] == model.config
    # a loaded model is usable
    assert loaded.similarity(["the cat"], ["the cat"])[0, 0] == pytest.approx(1.0, abs=1e-6)
    if mmap:  # read-only; a writable copy's changes never reach the file
        assert not loaded.vectors.flags.writeable
        with pytest.raises(ValueError):
            loaded.vectors[0, 0] = 1.0
    else:
        assert loaded.vectors.flags.writeable
        loaded.vectors[0] = 0.0
        loaded.vectors = loaded.vectors  # reassigned: the model's cached norms follow
        assert_same_model(load_model(out), model)
        assert dict(loaded.wv.most_similar(loaded.wv.index_to_key[1], topn=9, min_count=0))[loaded.wv.index_to_key[0]] == 0.0


def test_a_save_replaces_the_old_model_whole_or_not_at_all(tmp_path):
    """Model.save and scbow.load; a save over a model (from its own memory-mapped vectors too) replaces it in one
    step, and a failed one leaves it as it was."""
    path, model = tmp_path / "m", make_model()
    assert model.save(path) == path
    export_word2vec(model, tmp_path / "v.txt")
    assert_same_model(scbow.load(tmp_path / "v.txt"), model)
    back = scbow.load(path)
    assert_same_model(back, model)
    assert back.config == model.config and back.info == model.info and isinstance(back.vectors, np.memmap)
    Model(back.vocab, back.vectors * 0.5, back.config, back.info).save(path)
    np.testing.assert_array_equal(scbow.load(path, mmap=False).vectors, model.vectors * 0.5)
    old = make_model(seed=2, dim=5, words=WORDS[:4])
    save_model(old, path)
    assert_same_model(load_model(path), old)
    assert load_model(path).dim == 5
    assert sorted(os.listdir(tmp_path)) == ["m", "v.txt"]  # no temporary or old copies left
    broken = make_model(seed=3)

    def fail(_path):
        raise OSError(28, "No space left on device")

    broken.vocab.save = fail
    with pytest.raises(ModelError, match="No space left"):
        save_model(broken, path)
    assert_same_model(load_model(path), old)
    assert sorted(os.listdir(tmp_path)) == ["m", "v.txt"]


def test_save_refuses_what_is_no_model_and_load_a_missing_one_a_pipe_or_a_device(tmp_path):
    d = tmp_path / "precious"
    d.mkdir()
    (d / "thesis.tex").write_text("years of work")
    with pytest.raises(ModelError, match="not empty"):
        save_model(make_model(), d)
    assert os.listdir(d) == ["thesis.tex"] and (d / "thesis.tex").read_text() == "years of work"
    (d / "config.json").write_text('{"name": "my-app"}')  # only looks like a model
    try:
        save_model(make_model(), d)
    except ModelError:
        pass
    assert (d / "thesis.tex").read_text() == "years of work"
    f = tmp_path / "m"
    f.write_text("a file")
    with pytest.raises(ModelError, match="not a directory"):
        save_model(make_model(), f)
    assert f.read_text() == "a file"
    with pytest.raises(ModelError, match="no such model"):
        load_model(tmp_path / "nope")
    os.mkfifo(tmp_path / "fifo")
    for path in (tmp_path / "fifo", Path("/dev/zero")):
        with pytest.raises(ModelError, match=f"^{path}: not a regular file"):  # it said 'Not a directory'
            load_model(path)


class _Payload:
    """Unpickling this calls ``open(marker, "w")``: it creates the file ``marker``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _config(path: Path, change) -> None:
    meta = json.loads((path / "config.json").read_text())
    change(meta)
    (path / "config.json").write_text(json.dumps(meta))


def _vectors(path: Path, change) -> None:
    vectors = np.load(path / "vectors.npy")
    np.save(path / "vectors.npy", change(vectors))


def _set(vectors, value):
    vectors[len(vectors) // 2, 3] = value
    return vectors


def _cut(path: Path, keep: float) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def _big_count(path: Path) -> None:
    lines = path.read_text().splitlines()
    lines[1] = f"{lines[1].rsplit(' ', 1)[0]} {10 ** 30}"
    path.write_text("\n".join(lines) + "\n")


def _scaled(scale: float):
    return lambda v: (v.astype(np.float64) / np.abs(v).max() * scale).astype(np.float32)


def _curve(path: Path, **dev) -> None:
    """A learning curve of one point, whose dev scores are ``dev``."""
    (path / "curve.json").write_text(json.dumps({"points": [{"examples": 10, "dev": {"pearson": 0.5, **dev}}]}))


DAMAGE = {  # kind -> (what is done to a copy of a model directory, the words the error must hold)
    "missing-vectors.npy": (lambda d: (d / "vectors.npy").unlink(), "vectors.npy"),
    "missing-vocab.txt": (lambda d: (d / "vocab.txt").unlink(), "vocab.txt"),
    "missing-config.json": (lambda d: (d / "config.json").unlink(), "config.json"),
    "truncated-vectors-0.99": (lambda d: _cut(d / "vectors.npy", 0.99), "vectors"),
    "truncated-vectors-0.5": (lambda d: _cut(d / "vectors.npy", 0.5), "vectors"),
    "truncated-vectors-0.1": (lambda d: _cut(d / "vectors.npy", 0.1), "vectors"),
    "empty-vectors": (lambda d: _cut(d / "vectors.npy", 0), "vectors"),
    "wrong-dtype": (lambda d: _vectors(d, lambda v: v.astype(np.float64)), "float32"),
    "pickle": (lambda d: np.save(d / "vectors.npy", np.array([_Payload(d.parent / "pwned")], dtype=object),
                                 allow_pickle=True), ""),
    "vectors-shape": (lambda d: np.save(d / "vectors.npy", np.zeros((3, 4), dtype=np.float32)), "rows"),
    "vocab-short": (lambda d: (d / "vocab.txt").write_text("\n".join((d / "vocab.txt").read_text().splitlines()[:-2])
                                                          + "\n"), "rows"),
    "vocab-malformed": (lambda d: (d / "vocab.txt").write_text("the 10\ncat\n"), "vocab.txt"),
    "vocab-truncated": (lambda d: _cut(d / "vocab.txt", 0.5), ""),
    "count-too-big": (lambda d: _big_count(d / "vocab.txt"), "larger than any corpus"),
    "config-not-json": (lambda d: (d / "config.json").write_bytes(b"{not json"), "config.json"),
    "config-not-utf8": (lambda d: (d / "config.json").write_bytes(b"\xff\xfe garbage"), "config.json"),
    "config-a-list": (lambda d: (d / "config.json").write_bytes(b"[1, 2]"), "config.json"),
    "config-only-config": (lambda d: (d / "config.json").write_bytes(b'{"config": {}}'), "config.json"),
    "config-truncated": (lambda d: _cut(d / "config.json", 0.5), "config.json"),
    "config-newer": (lambda d: _config(d, lambda m: m.update(format_version=FORMAT_VERSION + 1)), "newer"),
    "config-dim-text": (lambda d: _config(d, lambda m: m["config"].update(dim="abc")), "dim must be"),
    "config-dim-disagrees": (lambda d: _config(d, lambda m: m["config"].update(dim=17)), "records dim"),
    "config-negatives": (lambda d: _config(d, lambda m: m["config"].update(negatives=-3)), "negatives must be"),
    "config-not-object": (lambda d: _config(d, lambda m: m.update(config=[1, 2])), "not an object"),
    "config-tokenizer-older": (lambda d: _config(d, lambda m: m["corpus"].update(tokenizer_version="3")),
                               "tokenizer version '3', not '4'"),
    "nan": (lambda d: _vectors(d, lambda v: _set(v, np.nan)), "NaN or inf"),
    "inf": (lambda d: _vectors(d, lambda v: _set(v, np.inf)), "NaN or inf"),
    "-inf": (lambda d: _vectors(d, lambda v: _set(v, -np.inf)), "NaN or inf"),
    "no-dims": (lambda d: _vectors(d, lambda v: np.zeros((len(v), 0), np.float32)), "0 dimensions"),
    "zero": (lambda d: _vectors(d, _scaled(0.0)), "zero or nearly so"),
    "nearly-zero": (lambda d: _vectors(d, _scaled(1e-30)), "zero or nearly so"),
    "too-large": (lambda d: _vectors(d, _scaled(1e30)), "too large"),
    "sum-overflows": (lambda d: _vectors(d, _scaled(3e38 / 50)), "too large"),
    "curve-a-directory": (lambda d: (d / "curve.json").mkdir(), "curve.json: damaged model (a directory"),
    "curve-a-pipe": (lambda d: os.mkfifo(d / "curve.json"), "curve.json: damaged model (a pipe or a device"),
    "curve-a-device": (lambda d: (d / "curve.json").symlink_to("/dev/zero"), "curve.json: damaged model (a pipe or a device"),
    "curve-spearman-text": (lambda d: _curve(d, spearman="high"), "point 1: dev spearman is not a correlation"),
    "curve-spearman-large": (lambda d: _curve(d, spearman=3), "point 1: dev spearman is not a correlation"),
    "curve-pairs-text": (lambda d: _curve(d, pairs="1500"), "point 1: dev pairs is not a count"),
}


def _contents(folder: Path) -> dict:
    """Each file's bytes by name (None for what is no file: a directory or a pipe put there)."""
    return {p.name: p.read_bytes() if p.is_file() else None for p in folder.iterdir()}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_every_damage_to_a_model_is_one_error_and_reading_changes_nothing(tmp_path, healthy, kind):
    model = shutil.copytree(healthy[0], tmp_path / "model")
    damage, fragment = DAMAGE[kind]
    damage(model)
    before = _contents(model)
    for mmap in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no overflow warning on the way to the error
            with pytest.raises(ModelError, match=re.escape(fragment) or None):
                load_model(model, mmap=mmap)
    assert _contents(model) == before  # reading never repairs or deletes
    assert not (tmp_path / "pwned").exists()  # nothing was unpickled
    if kind == "pickle":  # the payload does work when unpickled: the test above can fail
        np.load(model / "vectors.npy", allow_pickle=True)
        assert (tmp_path / "pwned").exists()


def test_every_command_refuses_a_damaged_model(tmp_path, runner, healthy):
    """Each command that reads a model, with one damaged (every damage: the test above)."""
    model = shutil.copytree(healthy[0], tmp_path / "model")
    DAMAGE["nan"][0](model)
    sts = tmp_path / "pairs.tsv"
    sts.write_text("4.0\tthe cat sat\tthe cat sat down\n1.0\tthe dog ran\ta cat slept\n2.5\tthe cat ran\tthe dog sat\n")
    (tmp_path / "lines.txt").write_text("the cat sat\nthe dog ran\n")
    commands = {
        "similarity": ["similarity", "-m", model, "the cat sat", "the dog ran"],
        "evaluate": ["evaluate", "-m", model, sts],
        "evaluate-baseline": ["evaluate", "-m", healthy[0], "--baseline", model, sts],
        "embed": ["embed", "-m", model, tmp_path / "lines.txt", "-o", tmp_path / "out.npy", "-q"],
        "export": ["export", "-m", model, "-o", tmp_path / "out.txt"],
        "neighbors": ["neighbors", "-m", model, "cat"],
        "neighbors-sentence": ["neighbors", "-m", model, "--sentence", "the cat", "--in", tmp_path / "lines.txt"],
    }
    for name, argv in commands.items():
        result = runner.invoke(main, [str(a) for a in argv])
        assert_clean_error(result, "NaN or inf", exit_code=1)
        assert "nan" not in result.stdout.lower(), (name, result.stdout)
        for out in ("out.npy", "out.txt", "out.png"):
            assert not (tmp_path / out).exists(), (name, out)


@pytest.mark.parametrize("kind", ["curve-a-directory", "curve-a-pipe", "curve-a-device", "curve-spearman-text"])
def test_a_damaged_learning_curve_is_named_by_every_command_that_shows_it(tmp_path, runner, healthy, kind):
    """info, similarity, export and plot read the curve with the model: damage there is refused, not passed over as
    no curve (the recorded scores gone), left to fail as a bug while the model card is written, or read without end."""
    model = shutil.copytree(healthy[0], tmp_path / "model")
    DAMAGE[kind][0](model)
    for argv in (["info", model], ["similarity", "-m", model, "the cat", "the dog"], ["plot", model, "-o", tmp_path / "out.png"],
                 ["export", "-m", model, "--format", "model2vec", "-o", tmp_path / "out"]):
        says = "curve.json: damaged" if argv[0] == "plot" else DAMAGE[kind][1]  # plot: "damaged learning curve"
        assert_clean_error(runner.invoke(main, [str(a) for a in argv]), says, exit_code=1)
    assert sorted(os.listdir(tmp_path)) == ["model"]


def test_a_model_of_an_older_version_loads(tmp_path, healthy):
    """Settings it lacks are fine, unknown ones ignored."""
    old = shutil.copytree(healthy[0], tmp_path / "old")
    meta = json.loads((old / "config.json").read_text())
    for key in ("frequency_weight", "count_power", "unknown", "unknown_scale"):
        del meta["config"][key]
    meta["config"]["retired_setting"] = 7
    (old / "config.json").write_text(json.dumps(meta))
    assert load_model(old).dim == load_model(healthy[0]).dim


@pytest.mark.parametrize("body, says", [
    (b"2 3\nthe 1 2 nan\ncat 1 2 3\n", ""), (b"2 3\nthe 1 2 inf\ncat 1 2 3\n", ""), (b"2 3\nthe 1 2 1e400\ncat 1 2 3\n", ""),
    (b"2 3\nthe 1 2 -Infinity\ncat 1 2 3\n", ""), (b"2 0\nthe\ncat\n", ""), (f"2 {10 ** 20}\nthe 1\ncat 2\n".encode(), ""),
    (b"1 3\nfoo 1e39 1 2\n", "NaN or inf"),
    (b"2 3\nthe " + np.float32([1, np.nan, 2]).tobytes() + b"\ncat " + np.float32([1, 2, 3]).tobytes() + b"\n", "NaN or inf"),
])
def test_word2vec_files_with_damaged_numbers_are_refused(tmp_path, runner, body, says):
    path = tmp_path / "vectors.txt"
    path.write_bytes(body)
    result = runner.invoke(main, ["similarity", "-m", str(path), "the", "cat"])
    assert_clean_error(result, str(path), says, exit_code=1)
    assert "Warning" not in result.output


@pytest.mark.parametrize("compress", [None, gzip.open, bz2.open])
@pytest.mark.parametrize("layout", ["word2vec-text", "word2vec-binary", "glove"])
def test_compressed_word2vec_and_headerless_glove_load(tmp_path, healthy, compress, layout):
    model = load_model(healthy[0])
    plain = tmp_path / "v"
    export_word2vec(model, plain, binary=layout == "word2vec-binary")
    data = plain.read_bytes()
    if layout == "glove":
        data = data.split(b"\n", 1)[1]  # GloVe: no 'count dim' line
    path = tmp_path / "vectors"
    if compress is None:
        path.write_bytes(data)
    else:
        with compress(path, "wb") as fh:
            fh.write(data)
    loaded = load_word2vec(path)
    assert loaded.vocab.words == model.vocab.words
    np.testing.assert_array_equal(loaded.vectors, model.vectors)
    assert loaded.info["format"] == ("glove-text" if layout == "glove" else layout)


@pytest.mark.parametrize("first, says", [("A Modern Cinderella", "a 'count dim' line and GloVe"), ("the 10", "word-count list")])
def test_a_file_whose_first_line_is_no_vectors_is_refused_before_the_rest_is_read(tmp_path, first, says):
    """A corpus given as a model was decompressed whole (36 s, 1.1 GB for gutenberg-100M) before its first line
    refused it: here the rest is damaged xz, so only a refusal by the first line passes; the error says what is expected."""
    data = lzma.compress((first + "\n" + "Some more text of a book, line after line.\n" * 20000).encode())
    path = tmp_path / "corpus.txt.xz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError, match=f"not a vectors file.*{says}"):
        load_word2vec(path)


# -- A model read while saves replace it: the old model or the new one, whole -----------


def two_models() -> dict:
    """Two models any mix of shows: other words ("a..." and "b..."), rows, dimensions and settings,
    and a learning curve (curve.json, an optional file) in one of them only."""
    models = {}
    for name, rows, dim in (("a", 40, 8), ("b", 50, 12)):
        vectors = np.random.default_rng(rows).standard_normal((rows, dim)).astype(np.float32)
        vocab = Vocab([f"{name}{i}" for i in range(rows)], np.arange(rows, 0, -1) * 10)
        info = {"which": name, **({"curve": {"points": [{"examples": 1, "dev": None}]}} if name == "a" else {})}
        models[name] = Model(vocab, vectors, {"dim": dim, "seed": rows}, info)
    return models


def load_while_saving(where, loads: int, seconds: float):
    """Load ``where`` up to ``loads`` times (or for ``seconds``) while a thread saves two models into it
    in turn; every load must be one of them whole. Returns the loads of each and the saves done."""
    from collections import Counter

    models = two_models()
    save_model(models["a"], where)
    stop, saves, failed = threading.Event(), [0], []

    def writer():
        try:
            while not stop.is_set():
                for model in models.values():
                    save_model(model, where)
                    saves[0] += 1
        except BaseException as exc:  # noqa: BLE001 (reported by the test)
            failed.append(exc)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    seen: Counter = Counter()
    deadline = time.monotonic() + seconds
    try:
        while seen.total() < loads and time.monotonic() < deadline and not failed:
            model = load_model(where, mmap=seen.total() % 2 == 0)  # any error fails the test
            want = models[model.vocab.words[0][0]]
            assert model.vocab.words == want.vocab.words
            assert model.vocab.counts.tolist() == want.vocab.counts.tolist()
            assert np.array_equal(np.asarray(model.vectors), want.vectors)
            assert model.config == want.config and without_id(model.info) == without_id(want.info)
            seen[want.info["which"]] += 1
    finally:
        stop.set()
        thread.join()
    assert not failed, failed
    return seen, saves[0]


@pytest.mark.parametrize("loads, seconds", [(2000, 4), pytest.param(10_000, 600, marks=pytest.mark.slow)])
def test_a_model_read_while_saves_replace_it_is_one_of_them_whole(tmp_path, loads, seconds):
    seen, saves = load_while_saving(tmp_path / "x", loads=loads, seconds=seconds)
    # the reads overlapped the saves: both models were seen (a loaded machine manages fewer saves)
    assert seen["a"] and seen["b"] and saves >= 2
    assert loads < 10_000 or seen.total() == 10_000


@pytest.mark.parametrize("at", ["vectors.npy", "vocab.txt", "config.json", "curve.json", "every read"])
def test_a_save_landing_between_a_reads_files_restarts_the_read(tmp_path, monkeypatch, at):
    """A save swapping a new model in just before the reader opens ``at`` restarts the read: the new model whole
    (curve.json, only model a's, not taken for absent); a save before every read is one clean error."""
    models, where = two_models(), tmp_path / "x"
    save_model(models["a"], where)
    opened, saves = modeldir.ModelFiles._open, []

    def save_first(self, name):
        if name == at and not saves:
            saves.append(save_model(models["b"], where))
        elif at == "every read" and name == "vocab.txt":
            saves.append(save_model(models["ab"[len(saves) % 2]], where))
        return opened(self, name)

    monkeypatch.setattr(modeldir.ModelFiles, "_open", save_first)
    if at == "every read":
        with pytest.raises(ModelError, match=f"replaced {modeldir.LOAD_ATTEMPTS} times while it was being read"):
            load_model(where)
        assert len(saves) == modeldir.LOAD_ATTEMPTS
        return
    model = load_model(where)
    assert saves and model.vocab.words == models["b"].vocab.words and without_id(model.info) == without_id(models["b"].info)
    assert np.array_equal(np.asarray(model.vectors), models["b"].vectors)


@pytest.mark.parametrize("binary", [False, True])
def test_word2vec_files_to_and_from_gensim(tmp_path, binary):
    KeyedVectors = pytest.importorskip("gensim.models").KeyedVectors
    model = make_model()
    path = export_word2vec(model, tmp_path / "v", binary=binary)
    assert path.read_bytes().split(b"\n", 1)[0] == f"{len(WORDS)} 7".encode()
    kv = KeyedVectors.load_word2vec_format(str(path), binary=binary)
    assert list(kv.index_to_key) == WORDS
    np.testing.assert_allclose(kv.vectors, model.vectors, rtol=0 if binary else 1e-6, atol=0 if binary else 1e-6)
    back = load_word2vec(path)
    assert back.info["format"] == ("word2vec-binary" if binary else "word2vec-text")
    assert_same_model(back, model)  # text: 9 significant digits round-trip float32 exactly
    kv.save_word2vec_format(str(tmp_path / "g"), binary=binary)  # a file gensim wrote
    back = load_word2vec(tmp_path / "g")
    assert back.vocab.words == WORDS
    np.testing.assert_allclose(back.vectors, kv.vectors, rtol=0 if binary else 1e-6)


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_a_text_file_with_non_ascii_words_is_read_as_text_at_any_dimension(tmp_path, dim):
    # the bytes after the first word once decided text or binary: 'é' within them meant binary; at dim 1 the
    # header tells these 'word number' lines from a word-count list (test_word_number_lines_are_not_vectors)
    rows = {"a": [1.0] * dim, "été": [3.0] * dim, "naïve": [-2.5] * dim}
    body = "".join(f"{w} {' '.join(f'{x:g}' for x in v)}\n" for w, v in rows.items())
    (tmp_path / "v.txt").write_text(f"3 {dim}\n{body}", encoding="utf-8")
    model = load_word2vec(tmp_path / "v.txt")
    assert model.info["format"] == "word2vec-text" and model.vocab.words == list(rows)
    assert np.array_equal(model.vectors, np.float32(list(rows.values())))


@pytest.mark.parametrize("content", [b"\xef\xbb\xbfthe 1 0\nman 0 1\n", b"\xef\xbb\xbf2 2\nthe 1 0\nman 0 1\n",
                                     b"the 1 0\n  \t\nman 0 1\n", b"2 2\nthe 1 0\n \r\nman 0 1\n \n"],
                         ids=["glove-bom", "word2vec-bom", "glove-blank-line", "word2vec-blank-lines"])
def test_a_byte_order_mark_and_blank_lines_are_not_words(tmp_path, content):
    # a BOM once became part of the first word (GloVe) or made the header unreadable (word2vec)
    (tmp_path / "v.txt").write_bytes(content)
    model = load_word2vec(tmp_path / "v.txt")
    assert model.vocab.words == ["the", "man"] and np.array_equal(model.vectors, np.eye(2, dtype=np.float32))


def test_export_replaces_a_file_and_refuses_a_directory(tmp_path):
    (tmp_path / "v.txt").write_text("old")
    export_word2vec(make_model(), tmp_path / "v.txt")
    assert load_word2vec(tmp_path / "v.txt").vocab.words == WORDS
    with pytest.raises(ModelError, match="directory"):
        export_word2vec(make_model(), tmp_path)
    with pytest.raises(ModelError, match="no such directory"):
        export_word2vec(make_model(), tmp_path / "missing" / "v.txt")
    assert sorted(os.listdir(tmp_path)) == ["v.txt"]


@pytest.mark.parametrize(
    "binary, cut",
    # (cutting a text file inside its last number leaves a valid, shorter number: undetectable)
    [(False, 20), (False, 0.5), (False, 0.05), (True, 2), (True, 20), (True, 0.5), (True, 0.05)],
)
def test_truncated_word2vec(tmp_path, binary, cut):
    path = export_word2vec(make_model(), tmp_path / "v", binary=binary)
    data = path.read_bytes()
    n = int(len(data) * cut) if isinstance(cut, float) else len(data) - cut
    path.write_bytes(data[:n])
    with pytest.raises(ModelError, match="truncated|malformed"):
        load_word2vec(path)


@pytest.mark.parametrize("content, fragment", [(b"", ""), (b"hello world\n", ""), (b"3\n", ""), (b"-1 5\n", ""), (b"2 0\n", ""),
                                               (b"100000000000 300\nthe 1 2 3\n", ""), (b"2 2\na 1 2\na 3 4\n", "repeated"),
                                               (b"0 16\n", "it has no words")])
def test_bad_word2vec_header_or_a_repeated_word(tmp_path, content, fragment):
    (tmp_path / "v.txt").write_bytes(content)
    with pytest.raises(ModelError, match=fragment or None):
        load_model(tmp_path / "v.txt")


# Files of 'word number' lines (a model's vocab.txt, a word-count list) are not 1-dimensional
# GloVe vectors: headerless GloVe needs at least 2 values a line.
NOT_VECTORS = {
    "counts.txt": b"the 800\nman 700\nwalked 600\n",
    "tabs.txt": b"man\t12\nthe\t5\n",
    "decimals.txt": b"a 0.5\nb -0.25\n",
    "crlf.txt": b"cat 3\r\ndog 2\r\n",
}


@pytest.mark.parametrize("name", sorted(NOT_VECTORS) + ["vocab.txt", "counts.txt.gz"])
def test_word_number_lines_are_not_vectors(tmp_path, name):
    if name == "vocab.txt":  # a model directory's own word list
        path = save_model(make_model(), tmp_path / "m") / "vocab.txt"
    else:
        path = tmp_path / name
        data = NOT_VECTORS[name.removesuffix(".gz")]
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    for read in (load_word2vec, scbow.load):
        with pytest.raises(ModelError, match="not a vectors file.*word-count list") as error:
            read(path)
        assert "b'" not in str(error.value) and 'b"' not in str(error.value)  # the line as text, not a bytes repr


# Model.save writes only words Vocab.load reads back: every word either saves and
# loads back as it was, or is refused before anything is written.
UNSAVABLE = ["a\nb", "\n", "a\rb", "a\r\nb", "x\r", "", "x\udcff", "\ud800", "w" * 5000 + "\n"]  # a long one named cut short
SAVABLE = ["a b", " ", "a 5", "5", "a\tb", "\x0b", "\x0c", "a\x1cb", "\x85", "\u2028", "\ufeffa", "état", "\x00"]


@pytest.mark.parametrize("word", UNSAVABLE + SAVABLE, ids=lambda word: repr(word[:8]))
def test_save_writes_only_words_load_reads_back(tmp_path, word):
    model = make_model(words=["the", word, "cat"])
    if word in SAVABLE:
        assert load_model(save_model(model, tmp_path / "m")).vocab.words == model.vocab.words
        return
    with pytest.raises(ModelError, match="cannot save") as error:
        model.save(tmp_path / "m")
    assert repr(word)[:50] in str(error.value) and "\n" not in str(error.value) and len(str(error.value)) < 300
    assert os.listdir(tmp_path) == []  # nothing written
    old = save_model(make_model(seed=1), tmp_path / "old")
    with pytest.raises(ModelError, match="cannot save"):
        save_model(model, old)
    assert_same_model(load_model(old), make_model(seed=1))  # an old model there is kept


WITH_AN_UNSAVABLE_WORD = {
    "binary": b"2 2\nx " + np.float32([1, 2]).tobytes() + b"\na\nb " + np.float32([3, 4]).tobytes() + b"\n",
    "text": b"2 2\nx 1 2\na\rb 3 4\n",
    "empty word": b"2 2\nx 1 2\n 3 4\n",
    "glove": b"x 1 2\na\rb 3 4\n",
}


@pytest.mark.parametrize("layout", sorted(WITH_AN_UNSAVABLE_WORD))
def test_a_word2vec_file_with_an_unsavable_word_is_read_but_not_saved(tmp_path, layout):
    (tmp_path / "v.txt").write_bytes(WITH_AN_UNSAVABLE_WORD[layout])
    model = load_word2vec(tmp_path / "v.txt")  # usable: no token can be such a word
    assert model.similarity(["x"], ["x"])[0, 0] == pytest.approx(1.0)
    with pytest.raises(ModelError, match=r"cannot save .*vocab\.txt") as error:
        model.save(tmp_path / "m")
    assert repr(model.vocab.words[1]) in str(error.value)
    assert sorted(os.listdir(tmp_path)) == ["v.txt"]


def test_a_model_id_is_the_recorded_one_or_a_files_digest(tmp_path, good_model):
    recorded = json.loads((good_model / "config.json").read_text())["model_id"]
    assert model_id(good_model) == recorded and len(recorded) == 32
    copy = tmp_path / "copy"
    shutil.copytree(good_model, copy)
    assert model_id(copy) == recorded  # a copy is the same model (saved again, another: test_save_load_round_trip)
    meta = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**meta, "model_id": ""}))  # no id recorded: none
    assert model_id(copy) is None and load_model(copy).vocab.words == load_model(good_model).vocab.words
    w2v = export_word2vec(load_model(good_model), tmp_path / "m.txt")
    assert model_id(w2v).startswith("file-") and model_id(tmp_path / "missing") is None


@pytest.mark.parametrize("binary", [False, True])
def test_word2vec_files_score_like_models(tmp_path, binary):
    model = make_model(seed=4, dim=5, words=["the", "zzz", "cat", "dog", "sat", "ran", "on", "mat", "a", "big", "small",
                                             "red", "house", "café"])
    save_model(model, tmp_path / "m")
    vec = export_word2vec(model, tmp_path / ("v.bin" if binary else "v.txt"), binary=binary)
    assert scbow.load(vec).similarity(["the cat sat"], ["a dog ran"])[0, 0] == pytest.approx(
        model.similarity(["the cat sat"], ["a dog ran"])[0, 0], rel=1e-5)
    sts = tmp_path / "sts.tsv"
    sts.write_text("".join(f"{g}\t{a}\t{b}\n" for g, a, b in [
        (4.5, "the cat sat on the mat", "a cat sat on a mat"), (1.0, "the big dog", "small red house"),
        (3.0, "a dog ran", "the dog sat"), (0.5, "café", "the mat"), (2.0, "the red cat", "a big cat")]))
    scores = [evaluate_models([sts], model=m)["sets"][0]["pearson"] for m in (tmp_path / "m", vec)]
    assert scores[0] == pytest.approx(scores[1], abs=1e-5) and scores[0] is not None
