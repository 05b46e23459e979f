"""The sentence index (``scbow.use.index``): recall against exact search, rows with no embedding,
line lookup, round trips and every error a user can cause (an index of shards: test_shards)."""

from __future__ import annotations

import io
import json
import lzma
import os
import re
import shutil
import sys

import numpy as np
import pytest
from conftest import assert_clean_error, make_runner
from test_reader import damaged

import scbow
from scbow.cli import main
from scbow.errors import CorpusError, ModelError
from scbow.use.index import build_index, index_command, open_index, search_command

N_LINES = 3000


@pytest.fixture(scope="module")
def faiss():
    return pytest.importorskip("faiss")


@pytest.fixture(scope="module")
def setup(gutenberg_slice, tmp_path_factory):
    """The first lines of gutenberg-1M, a tiny model trained on them (the word part off: rows of --dim
    columns), their embeddings (.npy)."""
    from scbow.use.embedding import embed_file

    text = gutenberg_slice(N_LINES)
    base = tmp_path_factory.mktemp("index")
    # unknown words hashed: every line with a token has its own row (the checks below pick rows by
    # their neighbours; pieces of one or two letters, in a vocabulary this small, make more lines alike)
    model = scbow.train([text], scbow.TrainConfig(dim=16, epochs=1, threads=1, word_passes=0, unknown="hash",
                                                  unknown_scale=1.0), quiet=True, cache_dir=base / "cache")
    model.save(base / "model")
    model = scbow.load(base / "model")
    emb = base / "emb.npy"
    embed_file(model, text, emb)
    return {"text": text, "model_dir": base / "model", "model": model, "emb": emb, "base": base}


@pytest.fixture(scope="module")
def built(setup, faiss):
    out = setup["base"] / "idx"
    info = build_index(setup["emb"], setup["text"], out, M=16, ef_construction=100, model=setup["model_dir"])
    return out, info


@pytest.fixture(scope="module")
def built_xz(setup, faiss):
    """An index of a compressed text: it keeps its own copy of the text."""
    xz = setup["base"] / "slice.txt.xz"
    with lzma.open(xz, "wb") as fh:
        fh.write(setup["text"].read_bytes())
    out = setup["base"] / "idx-xz"
    build_index(setup["emb"], xz, out, M=8, ef_construction=40, model=setup["model_dir"])
    return out


def _lines(path):
    with open(path, encoding="utf-8", errors="replace", newline=None) as fh:
        return [line.rstrip("\n") for line in fh]


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _cli(*args):
    return make_runner().invoke(main, [str(a) for a in args])


def _query(setup, idx, *extra, model=None):
    sentence = _lines(setup["text"])[200]
    return _cli("neighbors", "-m", model or setup["model_dir"], "--sentence", sentence, "--index", idx, *extra)


def _copy(built, tmp_path):
    return shutil.copytree(built[0], tmp_path / "copy")


def _edit_json(idx, change):
    info = json.loads((idx / "index.json").read_text())
    change(info)
    (idx / "index.json").write_text(json.dumps(info))


def test_recall_at_10_against_exact(setup, built):
    x = np.load(setup["emb"])
    ok = np.flatnonzero(~np.isnan(x).any(axis=1))
    xn = _unit(x[ok])
    rng = np.random.default_rng(0)
    queries = xn[rng.choice(len(xn), 200, replace=False)] + rng.normal(0, 0.05, (200, x.shape[1])).astype(np.float32)
    queries = _unit(queries).astype(np.float32)
    index = open_index(built[0])
    index.ef = 64
    ids, scores = index.search(queries, 10)
    assert ids.dtype == np.int64 and scores.dtype == np.float32 and ids.shape == (200, 10)
    exact = queries @ xn.T
    kth = np.sort(exact, axis=1)[:, -10]
    row_to_pos = {r: i for i, r in enumerate(ok.tolist())}
    hits = 0
    for q in range(len(queries)):
        pos = [row_to_pos[r] for r in ids[q].tolist()]
        hits += int((exact[q, pos] >= kth[q] - 1e-5).sum())
        np.testing.assert_allclose(scores[q], exact[q, pos], atol=1e-4)  # scores are the cosines
    assert hits / (10 * len(queries)) >= 0.9
    assert np.all(np.diff(scores, axis=1) <= 1e-6)  # best first


def test_nan_rows_are_skipped_and_never_returned(setup, built):
    x = np.load(setup["emb"])
    nan_rows = set(np.flatnonzero(np.isnan(x).any(axis=1)).tolist())
    assert nan_rows, "the slice has blank lines between books: they have no embedding"
    out, info = built
    assert info["count"] == len(x) - len(nan_rows) and info["skipped_rows"] == len(nan_rows)
    assert info["rows"] == len(x)
    index = open_index(out)
    assert len(index) == info["count"]
    ids, _ = index.search(np.nan_to_num(x[:500], nan=0.5), 20)
    assert not nan_rows & set(ids.ravel().tolist())
    assert (ids >= 0).all()


def test_line_lookup_round_trip_and_ef(setup, built, built_xz):
    out, info = built
    lines = _lines(setup["text"])
    a, b = open_index(out), open_index(out)
    for row in [0, 1, 17, 1234, N_LINES - 1]:
        assert a.line(row) == (str(setup["text"].resolve()), row + 1, lines[row])
    with pytest.raises(IndexError):
        a.line(N_LINES)
    xz = open_index(built_xz)  # a compressed text: the index keeps its own copy
    assert xz.info["files"][0]["text"] == "text-000.txt" and (built_xz / "text-000.txt").is_file()
    assert xz.line(42) == (str((setup["base"] / "slice.txt.xz").resolve()), 43, lines[42])
    q = np.nan_to_num(np.load(setup["emb"])[100:140])
    assert np.array_equal(a.search(q, 10)[0], b.search(q, 10)[0])
    assert a.ef == info["params"]["ef_search"]
    a.ef = 200
    assert a.ef == 200
    assert json.loads((out / "index.json").read_text())["dim"] == 16
    assert info["library"] == "faiss-cpu" and info["model"] == str(setup["model_dir"].resolve())
    with pytest.raises(ModelError, match="no such index"):
        open_index(setup["base"] / "nope")
    with pytest.raises(ModelError, match="is a model directory, not a sentence index"):
        open_index(setup["model_dir"])


def test_a_sentence_finds_its_own_line_and_topn_is_capped(setup, built):
    lines = _lines(setup["text"])
    row = next(i for i, t in enumerate(lines) if len(t.split()) > 12)
    found = search_command(setup["model_dir"], lines[row], built[0], topn=5, ef=100)
    assert len(found) == 5
    cos, file, number, text = found[0]
    assert text == lines[number - 1] and cos > 0.99
    assert lines[row] in [t for _, _, _, t in found]
    assert all(a[0] >= b[0] for a, b in zip(found, found[1:]))
    assert search_command(setup["model"], lines[row], built[0], topn=5, ef=100) == found  # a loaded model too
    with pytest.raises(ValueError, match="has no word"):
        search_command(setup["model_dir"], "   ", built[0])
    # topn is capped at the index size
    assert len(search_command(setup["model_dir"], lines[200], built[0], topn=10**9)) == built[1]["count"]


def test_small_index_pads_with_minus_one(setup, tmp_path, faiss):
    text = tmp_path / "t.txt"
    text.write_text("a\nb\nc\n")
    emb = tmp_path / "e.npy"
    np.save(emb, np.array([[1, 0, 0], [np.nan] * 3, [0, 1, 0]], dtype=np.float32))
    build_index(emb, text, tmp_path / "idx")
    ids, scores = open_index(tmp_path / "idx").search(np.array([1, 0.1, 0], dtype=np.float32), 5)  # a single vector
    assert ids.shape == scores.shape == (1, 5)
    assert ids[0, :2].tolist() == [0, 2] and ids[0, 2:].tolist() == [-1, -1, -1]
    assert np.isneginf(scores[0, 2:]).all()
    zero_ids, _ = open_index(tmp_path / "idx").search(np.zeros(3, np.float32), 2)
    assert (zero_ids == -1).all()  # a zero query finds nothing
    index = open_index(tmp_path / "idx")
    big_ids, big_scores = index.search(np.array([1e30, 1e29, 0], dtype=np.float32), 5)  # its norm overflows float32
    assert big_ids.tolist() == ids.tolist() and np.allclose(big_scores[0, :2], scores[0, :2])
    np.save(emb, np.array([[1, 0, 0], [np.inf, 0, 0], [0, 1, 0]], dtype=np.float32))  # inf: no embedding's value
    with pytest.raises(ModelError, match="row 2 holds inf"):
        build_index(emb, text, tmp_path / "idx-inf")
    np.save(emb, np.array([[3e38, 3e38, 0], [np.nan] * 3, [0, 1, 0]], dtype=np.float32))  # a norm past float32
    build_index(emb, text, tmp_path / "idx-big")
    assert open_index(tmp_path / "idx-big").search(np.array([1, 1, 0], np.float32), 1)[0].tolist() == [[0]]
    with pytest.raises(ModelError, match="not valid UTF-8, which the index library"):  # faiss takes no such name
        build_index(emb, text, tmp_path / "idx\udcff")
    assert not list(tmp_path.glob("*idx\udcff*"))
    (tmp_path / "idx").rename(tmp_path / "idx\udcff")  # one renamed so: said as such, not as damage
    with pytest.raises(ModelError, match=r"^\S*idx\\xff/vectors.faiss: the path is not valid UTF-8"):
        open_index(tmp_path / "idx\udcff")
    (tmp_path / "idx\udcff").rename(tmp_path / "idx")
    for bad in (2.5, None, True, 0):
        with pytest.raises(ValueError, match="k must be an integer"):
            index.search(np.ones(3, np.float32), bad)
    for bad in (2.7, 0, 1 << 30):
        with pytest.raises(ValueError, match="ef must be an integer"):
            index.ef = bad
    for bad in (1.5, "1", True):
        with pytest.raises(TypeError, match="a row id is an integer"):
            index.line(bad)
    with pytest.raises(ModelError, match="3-dim embeddings but the model has 16"):  # queried with another dim
        search_command(setup["model_dir"], "the king", tmp_path / "idx")


@pytest.mark.parametrize("block", [1, 2, 3, 7, 1 << 20])
def test_line_starts_split_like_universal_newlines(block):
    from scbow.use.index.build import line_starts

    data = "\ufeffone\r\ntwo\rthree\n\nfour\r\r\nfive\u2028still five\rsix".encode("utf-8")
    starts, size = line_starts(io.BytesIO(data), block=block)
    expected = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline=None).readlines()
    assert size == len(data) and len(starts) == len(expected)
    ends = list(starts[1:]) + [size]
    got = [data[s:e].decode("utf-8").rstrip("\r\n") for s, e in zip(starts, ends)]
    assert got == [line.rstrip("\n") for line in expected]
    for text in (b"", b"x", b"x\n", b"\n", b"\r", b"\r\n\r\n"):
        n = len(io.TextIOWrapper(io.BytesIO(text), encoding="utf-8", newline=None).readlines())
        assert len(line_starts(io.BytesIO(text), block=block)[0]) == n, text


# -- errors -------------------------------------------------------------------------------


def test_missing_library_gives_the_install_hint(setup, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(ModelError, match=r"scbow-numba\[index\]"):
        build_index(setup["emb"], setup["text"], tmp_path / "idx")


def _saved(path, array):
    np.save(path, array)
    return path


def _written(path, data: bytes):
    path.write_bytes(data)
    return path


def _fifo(path):
    """``path`` made a FIFO: reading it would block (a link to a device, each other kind: test_reader)."""
    os.mkfifo(path)
    return path


BAD_INPUT = {  # kind: (the embeddings and the text, of setup, built and tmp_path), the error, its message
    "embeddings-missing": (lambda s, b, t: (t / "nope.npy", s["text"]), ModelError, "no such file"),
    "embeddings-float64": (lambda s, b, t: (_saved(t / "f64.npy", np.zeros((3, 4))), s["text"]), ModelError,
                           "float64.*expected float32"),
    "embeddings-flat": (lambda s, b, t: (_saved(t / "flat.npy", np.zeros(5, np.float32)), s["text"]), ModelError, "shape"),
    "embeddings-junk": (lambda s, b, t: (_written(t / "junk.npy", b"not numpy at all"), s["text"]), ModelError, "not a .npy"),
    "no-text": (lambda s, b, t: (s["emb"], None), ModelError, "give the text file"),
    "a-model": (lambda s, b, t: (s["model_dir"], s["text"]), ModelError, "model directory"),
    "an-index": (lambda s, b, t: (b[0], None), ModelError, "is a sentence index already"),
    "an-empty-directory": (lambda s, b, t: ((t / "empty").mkdir() or t / "empty", None), ModelError, "manifest.json"),
    "no-row-embedded": (lambda s, b, t: (_saved(t / "allnan.npy", np.full((3, 4), np.nan, np.float32)),
                                         _written(t / "three.txt", b"a\nb\nc\n")), CorpusError, "nothing to index"),
    "text-short": (lambda s, b, t: (s["emb"], _written(t / "short.txt", b"a\nb\n")), CorpusError,
                   "2 lines but the embeddings have 3,000 rows"),
    "embeddings-a-fifo": (lambda s, b, t: (_fifo(t / "p.npy"), s["text"]), ModelError, "p.npy: not a regular file"),
    # the text is read through the one reader: a FIFO here, each other kind it refuses: test_reader
    "text-a-fifo": (lambda s, b, t: (s["emb"], _fifo(t / "p.txt")), CorpusError, "p.txt: not a regular file"),
    "text-damaged": (lambda s, b, t: (s["emb"], damaged(t, "gzip-truncated")[0]), CorpusError, "damaged or truncated gzip"),
}


@pytest.mark.parametrize("kind", BAD_INPUT)
def test_bad_embeddings_or_text(setup, built, tmp_path, kind):
    make, error, message = BAD_INPUT[kind]
    with pytest.raises(error, match=message):
        build_index(*make(setup, built, tmp_path), tmp_path / "i")
    assert not (tmp_path / "i").exists() and not list(tmp_path.glob(".i.*"))  # nothing left behind by a failed build


# -o: an existing directory is replaced only when it is provably an index this tool wrote


def _user_project(d, built):
    (d / "src").mkdir(parents=True)
    (d / "src" / "main.py").write_text("print(1)\n")
    (d / "index.json").write_text('{"name": "x"}')


def _index_plus(what):
    def make(d, built):
        shutil.copytree(built[0], d)
        what(d)
    return make


NOT_OURS = {  # a name no build writes, once (a folder, a hidden file, a FIFO by another name are such names too)
    "project-with-index-json": _user_project,
    "non-json-index-json": lambda d, b: (d.mkdir(), (d / "index.json").write_text("{ not json"),
                                         (d / "notes.txt").write_text("mine")),
    "empty-json-and-graph": lambda d, b: (d.mkdir(), (d / "index.json").write_text("{}"),
                                          (d / "vectors.faiss").write_bytes(b"mine")),
    "format-marker-only": lambda d, b: (d.mkdir(), (d / "index.json").write_text(
        json.dumps({"format": "scbow-numba sentence index", "format_version": 1})), (d / "ids.npy").write_text("mine")),
    "our-names-no-index-json": lambda d, b: (d.mkdir(), (d / "vectors.faiss").write_text("mine")),
    "index-plus-a-file": _index_plus(lambda d: (d / "notes.txt").write_text("mine")),
    "index-plus-a-folder": _index_plus(lambda d: ((d / "sh").mkdir(), (d / "sh" / "shard-000000.npy").write_text("x"))),
    "index-file-is-a-link": _index_plus(lambda d: ((d / "ids.npy").unlink(),
                                                    (d / "ids.npy").symlink_to(d.parent / "precious.txt"))),
    "index-plus-a-link-to-a-folder": _index_plus(lambda d: (d / "text-000.txt").symlink_to(d.parent)),
    "index-plus-a-copy-it-does-not-name": _index_plus(lambda d: (d / "text-007.txt").write_text("mine")),
}


@pytest.mark.parametrize("kind", sorted(NOT_OURS))
def test_an_output_that_is_not_provably_an_index_is_never_replaced(setup, built, tmp_path, kind):
    (tmp_path / "precious.txt").write_text("precious")
    out = tmp_path / "proj"
    NOT_OURS[kind](out, built)

    def snapshot():
        return sorted((str(p.relative_to(out)), p.is_symlink() or p.is_dir() or p.read_bytes())
                      for p in out.rglob("*"))

    before = snapshot()
    with pytest.raises(ModelError, match=r"proj: not empty and not a sentence index; refusing to replace it"):
        build_index(setup["emb"], setup["text"], out, M=8, ef_construction=20)
    assert snapshot() == before and (tmp_path / "precious.txt").read_text() == "precious"
    assert not list(tmp_path.glob(".proj.*"))


def test_an_output_that_is_a_file_is_never_replaced_a_link_is_followed_and_an_index_of_ours_is(setup, built, tmp_path):
    (tmp_path / "file").write_text("mine")
    with pytest.raises(ModelError, match="exists and is not a directory; refusing"):
        build_index(setup["emb"], setup["text"], tmp_path / "file", M=8, ef_construction=20)
    assert (tmp_path / "file").read_text() == "mine"
    (tmp_path / "empty").mkdir()
    build_index(setup["emb"], setup["text"], tmp_path / "empty", M=8, ef_construction=20)
    assert open_index(tmp_path / "empty").info["params"]["M"] == 8
    # a link to an index: the index replaced, the link kept (dangling or far links: test_files, atomic_dir)
    target = _copy(built, tmp_path)
    (tmp_path / "link").symlink_to(target)
    build_index(setup["emb"], setup["text"], tmp_path / "link", M=8, ef_construction=20)
    assert (tmp_path / "link").is_symlink() and open_index(target).info["params"]["M"] == 8
    (target / "ids.npy").unlink()  # a damaged index of ours is replaced too
    build_index(setup["emb"], setup["text"], target, M=12, ef_construction=20)
    assert open_index(target).info["params"]["M"] == 12
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_what_appears_in_the_output_during_a_build_is_never_replaced(setup, built, tmp_path):
    """Checked again just before the new index takes the old one's place."""
    out = _copy(built, tmp_path)

    def progress(what, done, total):
        if what == "rows" and not (out / "notes.txt").exists():
            (out / "notes.txt").write_text("written while it was building")

    with pytest.raises(ModelError, match="not empty and not a sentence index.*notes.txt"):
        build_index(setup["emb"], setup["text"], out, M=8, ef_construction=20, progress=progress)
    assert (out / "notes.txt").is_file() and (out / "ids.npy").is_file()
    assert not list(tmp_path.glob(".copy.tmp-*"))


def _shift_a_line(data: bytes) -> bytes:
    """The same size, but one line end moved: every line's bytes after it are elsewhere."""
    b = bytearray(data)
    first = b.index(b"\n", 100)
    b[first] = ord("x")
    second = b.index(b" ", first + 1)
    b[second] = ord("\n")
    return bytes(b)


def test_a_changed_or_gone_text_is_refused(setup, tmp_path, faiss):
    """Lines moved at the same size and modification time, or a line added: refused, not printed wrong."""
    text = tmp_path / "t.txt"
    shutil.copy(setup["text"], text)
    build_index(setup["emb"], text, tmp_path / "idx", M=8, ef_construction=20)
    st, original = text.stat(), text.read_bytes()
    text.write_bytes(_shift_a_line(original))
    os.utime(text, ns=(st.st_atime_ns, st.st_mtime_ns))
    index = open_index(tmp_path / "idx")
    with pytest.raises(CorpusError, match="changed since the index was built"):
        for row in range(N_LINES):
            index.line(row)
    text.write_bytes(original + "one more line\n".encode())
    with pytest.raises(CorpusError, match="changed since the index was built"):
        open_index(tmp_path / "idx").line(3)
    text.unlink()
    with pytest.raises(CorpusError, match="gone"):
        open_index(tmp_path / "idx").line(3)


def test_index_command_summary_and_progress(setup, tmp_path, capsys, monkeypatch, faiss):
    """Rows added reported every ADD_ROWS rows, shown with the project's progress line."""
    from scbow.use.index import build

    line = index_command(setup["emb"], tmp_path / "idx", setup["text"], 8, 40, False)
    assert line.startswith("indexed ") and "sentences x 16 dims" in line and str(tmp_path / "idx") in line
    assert "rows with no embedding left out" in line
    assert "index: reading the lines of" in capsys.readouterr().err  # (no -m: test_index_without_m_records...)
    index_command(setup["emb"], tmp_path / "idx", setup["text"], 8, 40, True, model=setup["model_dir"])
    assert capsys.readouterr().err == ""
    assert build.ADD_ROWS <= 4096  # a report every few seconds at the slowest rate seen (635 rows/s on 69K rows)
    monkeypatch.setattr(build, "ADD_ROWS", 1000)  # several batches of this test's 3,000 rows
    calls = []
    build_index(setup["emb"], setup["text"], tmp_path / "idx", M=8, ef_construction=20,
                progress=lambda *a: calls.append(a))
    assert calls[0][0] == f"reading the lines of {setup['text']}"
    assert [done for what, done, total in calls if what == "rows"] == [1000, 2000, N_LINES]

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stderr", terminal := Terminal())
    index_command(setup["emb"], tmp_path / "idx", setup["text"], 8, 20, False, model=setup["model_dir"])
    assert "index: reading the lines of" in terminal.getvalue() and "3.00K/3.00K rows" in terminal.getvalue()


def test_cli_index_then_neighbors_from_it_as_from_a_scan(setup, tmp_path, faiss):
    """``neighbors --index``: the format of ``--in`` and the same nearest line; option mistakes, one line."""
    out = tmp_path / "books.index"
    built = _cli("index", setup["emb"], "--text", setup["text"], "-m", setup["model_dir"], "-o", out, "--M", "16", "-q")
    assert built.exit_code == 0, built.output
    assert (out / "index.json").is_file()
    query = ["neighbors", "-m", setup["model_dir"], "--sentence", _lines(setup["text"])[200], "-n", "5"]
    fast = _cli(*query, "--index", out, "--ef", "256")
    exact = _cli(*query, "--in", setup["text"])
    assert fast.exit_code == 0 and exact.exit_code == 0, fast.output + exact.output
    first = [line.split("\t") for line in fast.stdout.splitlines() if "\t" in line]
    want = [line.split("\t") for line in exact.stdout.splitlines() if "\t" in line]
    assert len(first) == 5 and first[0][1:] == want[0][1:]  # line number and text of the nearest line
    assert abs(float(first[0][0]) - float(want[0][0])) < 1e-3
    assert_clean_error(_cli(*query, "--index", out, "--in", setup["text"]), "not both")
    assert_clean_error(_cli(*query, "--in", setup["text"], "--ef", "9"), "--ef needs --index")
    assert_clean_error(_cli(*query, "--index", out, "--encoding", "cp1252"), "encoding of the --in file, and none is given")
    assert_clean_error(_cli("neighbors", "-m", setup["model_dir"], "--index", out), "needs --sentence")
    assert_clean_error(_cli("index", setup["emb"], "-o", setup["emb"]), "input")


def test_index_of_a_text_in_another_encoding_prints_its_lines(setup, tmp_path, faiss):
    from scbow.use.embedding import embed_file

    lines = _lines(setup["text"])[:40]
    lines[7] = "the café was closed"
    (text := tmp_path / "fr.txt").write_bytes(("\n".join(lines) + "\n").encode("cp1252"))
    embed_file(setup["model"], text, emb := tmp_path / "fr.npy", encoding="cp1252")
    with pytest.raises(CorpusError, match="fr.txt: not valid utf-8 text; it may be Latin-1"):
        build_index(emb, text, tmp_path / "a", model=setup["model_dir"])
    build_index(emb, text, tmp_path / "b", M=16, model=setup["model_dir"], encoding="cp1252")
    found = search_command(setup["model_dir"], "the café was closed", tmp_path / "b")
    assert (8, "the café was closed") in [(number, line) for _, _, number, line in found]


# -- hostile inputs, by class: several members of each -------------------------


def _first_file(info):
    return info["files"][0]


# the fields of index.json that opening and searching use, against the shape they must have
BAD_INFO = {
    "dim-zero": lambda i: i.update(dim=0),
    "count-bool": lambda i: i.update(count=True),
    "rows-below-count": lambda i: i.update(rows=i["count"] - 1),
    "rows-float": lambda i: i.update(rows=float(i["rows"])),
    "index-bytes-null": lambda i: i.update(index_bytes=None),
    "params-list": lambda i: i.update(params=[1]),
    "ef-search-string": lambda i: i["params"].update(ef_search="many"),
    "model-number": lambda i: i.update(model=5),
    "model-id-list": lambda i: i.update(model_id=["x"]),
    "files-empty": lambda i: i.update(files=[]),
    "files-dict": lambda i: i.update(files={"a": 1}),
    "file-not-object": lambda i: i.update(files=["a.txt"]),
    "file-name-number": lambda i: _first_file(i).update(file=3),
    "file-bytes-string": lambda i: _first_file(i).update(bytes="many"),
    "file-mtime-null": lambda i: _first_file(i).update(mtime_ns=None),
    "file-first-row": lambda i: _first_file(i).update(first_row=1),
    "file-rows-more": lambda i: _first_file(i).update(rows=_first_file(i)["rows"] + 1),
    "text-escapes-index": lambda i: _first_file(i).update(text="../../etc/passwd"),
    "encoding-unknown": lambda i: _first_file(i).update(encoding="klingon"),
    "library": lambda i: i.update(library="usearch"),
}


@pytest.mark.parametrize("kind", sorted(BAD_INFO))
def test_damaged_index_json_fields(tmp_path, built, kind):
    idx = _copy(built, tmp_path)
    _edit_json(idx, BAD_INFO[kind])
    with pytest.raises(ModelError, match=r"index\.json: damaged sentence index \(fields missing or wrong"):
        open_index(idx)


# ids.npy: out-of-range values (refused when a search finds them), wrong dtype or shape (on open; one
# check of both, for ids.npy and offsets.npy alike); offsets.npy: each conjunct of a line's range once
BAD_IDS = {
    "all-negative": lambda ids, rows: np.full_like(ids, -5),
    "all-past-the-end": lambda ids, rows: np.full_like(ids, rows),
    "float64": lambda ids, rows: ids.astype(np.float64),
    "uint64": lambda ids, rows: ids.astype(np.uint64),
    "scalar": lambda ids, rows: np.int64(3),
    "objects": lambda ids, rows: np.array([None, 1], dtype=object),
}


def test_one_bad_id_is_refused_when_a_search_finds_it(setup, tmp_path, built):
    """ids.npy is checked for its dtype and shape on open, not read whole: an id out of range, or out of
    the order a build writes (each row once, increasing), is refused when a search finds it."""
    idx = _copy(built, tmp_path)
    ids = np.load(idx / "ids.npy")
    assert (np.diff(ids) > 0).all()  # what a build writes: strictly increasing
    x = np.load(setup["emb"])
    changed = ids.copy()
    changed[10] = built[1]["rows"] + 5
    np.save(idx / "ids.npy", changed)
    index = open_index(idx)
    with pytest.raises(ModelError, match=r"ids\.npy: damaged sentence index \(row"):
        index.search(x[ids[10]], 3)
    ok_row = ids[500]
    assert index.search(x[ok_row], 1)[0][0, 0] == ok_row  # the other vectors still answer
    # one bit: still a row, but not the one between its neighbours (it answered at cosine 1.0); or an id
    # equal to a neighbour's (a search for row 100 answered row 99)
    for wrong in (ids[100] ^ 8, ids[99], ids[101]):
        changed[100] = wrong
        np.save(idx / "ids.npy", changed)
        with pytest.raises(ModelError, match=r"ids\.npy: damaged sentence index \(row .* in order"):
            open_index(idx).search(x[ids[100]], 1)


# what a damaged graph could hold, given the unit vectors the build added (in order) and a generator; what is said
SWAPPED = {
    "not-normalised": (lambda ours, rng: rng.normal(size=ours.shape) * 3, "which is no cosine"),
    "nan": (lambda ours, rng: np.full(ours.shape, np.nan), "found nothing"),
    "infinite": (lambda ours, rng: np.full(ours.shape, np.inf), "found nothing|no cosine"),
}


@pytest.mark.parametrize("kind", SWAPPED)
def test_a_damaged_graph_is_refused_at_query_time(setup, tmp_path, built, faiss, kind):
    """Another valid HNSW graph of the same dim and count in place of the index's (index_bytes fixed):
    scores must be cosines, and a search of a non-empty index must find something."""
    idx = _copy(built, tmp_path)
    rng = np.random.default_rng(2)
    swap, why = SWAPPED[kind]
    vectors = swap(_unit(np.load(setup["emb"])[np.load(idx / "ids.npy")]).astype(np.float32), rng)
    graph = faiss.IndexHNSWFlat(vectors.shape[1], 8, faiss.METRIC_INNER_PRODUCT)
    graph.hnsw.efConstruction = 20
    graph.add(np.ascontiguousarray(vectors, dtype=np.float32))
    faiss.write_index(graph, str(idx / "vectors.faiss"))
    _edit_json(idx, lambda i: i.update(index_bytes=(idx / "vectors.faiss").stat().st_size))
    index = open_index(idx)  # the graph's dim, count and metric are right: opened
    q = rng.normal(size=(20, index.dim)).astype(np.float32)
    with pytest.raises(ModelError, match=rf"vectors\.faiss: damaged sentence index \(.*({why})"):
        index.search(q, 10)


BAD_OFFSETS = {
    "negative": lambda o, n: np.full_like(o, -3),
    "past-the-end": lambda o, n: o + n,
    "decreasing": lambda o, n: o[::-1].copy(),
    "first-not-zero": lambda o, n: np.concatenate([[1], o[1:]]),
    "float": lambda o, n: o.astype(np.float64),
}


DAMAGED_COPY = {
    "truncated-half": lambda d: d[: len(d) // 2],
    "truncated-one-byte": lambda d: d[:-1],
    "empty": lambda d: b"",
    "longer": lambda d: d + b"more\n",
    "line-ends-moved": _shift_a_line,
    "no-line-ends": lambda d: d.replace(b"\n", b" "),
}


def _npy(name, change):
    """``name`` replaced by ``change(its array, the index's rows (ids.npy) or its text's size (offsets.npy))``."""
    def damage(idx, setup):
        rows = json.loads((idx / "index.json").read_text())["rows"]
        second = rows if name == "ids.npy" else setup["text"].stat().st_size
        np.save(idx / name, change(np.load(idx / name), second), allow_pickle=True)
    return damage


def _copy_damage(change):
    return lambda idx, setup: (idx / "text-000.txt").write_bytes(change((idx / "text-000.txt").read_bytes()))


def _truncate(path):
    """``path`` cut to half its size; returns that size."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return len(data) // 2


def _fifo_for(name):
    return lambda idx, setup: ((idx / name).unlink(), os.mkfifo(idx / name))


PART_DAMAGE = {  # kind: (the file named, the damage)
    **{f"ids-{k}": ("ids.npy", _npy("ids.npy", f)) for k, f in BAD_IDS.items()},
    **{f"offsets-{k}": ("offsets.npy", _npy("offsets.npy", f)) for k, f in BAD_OFFSETS.items()},
    **{f"copy-{k}": ("text-000.txt", _copy_damage(f)) for k, f in DAMAGED_COPY.items()},
    "copy-missing": ("text-000.txt", lambda idx, setup: (idx / "text-000.txt").unlink()),
    **{f"not-regular-{n}": (n, _fifo_for(n)) for n in ("ids.npy", "offsets.npy", "vectors.faiss", "text-000.txt")},
    "json-not-json": ("index.json", lambda idx, setup: (idx / "index.json").write_text("{ not json")),
    "json-format-only": ("index.json", lambda idx, setup: (idx / "index.json").write_text(
        json.dumps({"format": "scbow-numba sentence index", "format_version": 1}))),
    "graph-truncated": ("vectors.faiss", lambda idx, setup: _truncate(idx / "vectors.faiss")),
    "graph-truncated-and-so-said": ("vectors.faiss", lambda idx, setup: _edit_json(  # index.json agrees with it
        idx, lambda i: i.update(index_bytes=_truncate(idx / "vectors.faiss")))),
    "offsets-gone": ("offsets.npy", lambda idx, setup: (idx / "offsets.npy").unlink()),
    "ids-junk": ("ids.npy", lambda idx, setup: (idx / "ids.npy").write_bytes(b"junk")),
}
# what the message says after the file's name
SAYS = {"json-format-only": ".*fields", "graph-truncated": ".*bytes",
        **{k: r" \(not a regular file" for k in PART_DAMAGE if k.startswith("not-regular-")}}


@pytest.mark.parametrize("kind", sorted(PART_DAMAGE))
def test_a_damaged_part_of_an_index_is_refused_naming_it(setup, tmp_path, built, built_xz, kind):
    """On open, on search or when a line is read: one line, never an answer with empty or wrong text."""
    name, damage = PART_DAMAGE[kind]
    idx = shutil.copytree(built_xz if kind.startswith(("copy-", "not-regular-")) else built[0], tmp_path / "copy")
    damage(idx, setup)
    with pytest.raises(ModelError, match=rf"{re.escape(name)}: damaged sentence index{SAYS.get(kind, '')}") as info:
        index = open_index(idx)
        index.search(np.nan_to_num(np.load(setup["emb"])[:50]), 5)
        for row in range(N_LINES):  # a moved line end is found when that line is read
            index.line(row)
    assert "\n" not in str(info.value)  # one line, as the command prints it (test_a_damaged_graph...)
    if kind in ("ids-float64", "ids-uint64", "ids-scalar"):  # the wrong type: say what it must hold
        assert "not one row per vector: int64" in str(info.value), info.value


# the model an index records: only that model answers


def _other_model(setup, tmp_path, name="other"):
    """The same vectors saved again: another model (every save records a new model id)."""
    from scbow.vectors.formats import load_model
    from scbow.vectors.modeldir import save_model

    return save_model(load_model(setup["model_dir"]), tmp_path / name)


def test_only_the_recorded_model_answers(setup, built, tmp_path, monkeypatch):
    from scbow.vectors.export import export_word2vec
    from scbow.vectors.formats import load_model
    from scbow.vectors.modeldir import save_model

    w2v = export_word2vec(setup["model"], tmp_path / "same.w2v.txt")
    other = _other_model(setup, tmp_path)
    # the same vectors, but a file cannot be proven to be the model
    assert_clean_error(_query(setup, built[0], model=w2v), "a word2vec/GloVe file?", "cannot be proven",
                       f"-m {setup['model_dir'].resolve()}")
    assert_clean_error(_query(setup, built[0], model=other), "another model", f"-m {setup['model_dir'].resolve()}")
    with pytest.raises(ModelError, match="is a sentence index, not a model"):
        search_command(built[0], "the king", built[0])
    # no -m: the default model is the one asked; none there, or another one, is refused
    sentence = _lines(setup["text"])[200]
    no_m = ["neighbors", "--sentence", sentence, "--index", built[0]]
    assert_clean_error(_cli(*no_m), "no such model", f"-m {setup['model_dir'].resolve()}")
    monkeypatch.setenv("SCBOW_MODEL", str(other))
    assert_clean_error(_cli(*no_m), "another model")
    monkeypatch.setenv("SCBOW_MODEL", str(setup["model_dir"]))
    result = _cli(*no_m)
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 10, result.output
    # a loaded model: checked by the id it was loaded with, else by model_dir, else refused
    assert search_command(scbow.load(setup["model_dir"], mmap=False), sentence, built[0], topn=3)
    with pytest.raises(ModelError, match="another model"):
        search_command(scbow.load(other), sentence, built[0], topn=3)
    in_memory = scbow.load(setup["model_dir"], mmap=False)
    del in_memory.info["model_id"]  # a model made in memory
    with pytest.raises(ModelError, match="model_dir"):
        search_command(in_memory, sentence, built[0], topn=3)
    assert search_command(in_memory, sentence, built[0], topn=3, model_dir=setup["model_dir"])
    # a model loaded before its directory was saved again is not the model there now
    copy = shutil.copytree(other, tmp_path / "copy")
    stale = scbow.load(copy)
    save_model(load_model(copy, mmap=False), copy)  # a new model_id
    build_index(setup["emb"], setup["text"], tmp_path / "idx-copy", M=8, model=copy)
    assert search_command(scbow.load(copy), sentence, tmp_path / "idx-copy", topn=3)
    with pytest.raises(ModelError, match="another model.*load it again"):
        search_command(stale, sentence, tmp_path / "idx-copy", topn=3, model_dir=copy)


def test_an_index_built_with_a_word2vec_file_answers_with_that_file_only(setup, tmp_path, faiss):
    from scbow.vectors.export import export_word2vec

    w2v = export_word2vec(setup["model"], tmp_path / "m.w2v.txt")
    idx = tmp_path / "idx"
    build_index(setup["emb"], setup["text"], idx, M=8, model=w2v)
    assert json.loads((idx / "index.json").read_text())["model_id"].startswith("file-")
    assert _query(setup, idx, model=w2v).exit_code == 0
    assert_clean_error(_query(setup, idx, model=setup["model_dir"]), "another model")
    changed = tmp_path / "changed.w2v.txt"
    data = w2v.read_bytes()
    changed.write_bytes(data[:-3] + (b"1\n" if not data.endswith(b"1\n") else b"2\n"))
    assert_clean_error(_query(setup, idx, model=changed), "another model")


BAD_MODEL = ["missing", "empty-dir", "text-file", "embeddings", "index", "half-model", "other-dims"]


@pytest.mark.parametrize("kind", BAD_MODEL)
def test_index_refuses_a_model_that_is_not_the_one(setup, built, good_model, tmp_path, kind):
    """-m is checked before building: it must be a model, of the embeddings' dims; nothing is written."""
    model = {"missing": tmp_path / "no-such-model", "empty-dir": tmp_path / "empty", "text-file": setup["text"],
             "embeddings": setup["emb"], "index": built[0], "half-model": tmp_path / "half",
             "other-dims": good_model}[kind]  # good_model: 8 dims, the embeddings 16
    (tmp_path / "empty").mkdir()
    (tmp_path / "half").mkdir()
    shutil.copy(setup["model_dir"] / "config.json", tmp_path / "half")
    idx = tmp_path / "idx"
    line = assert_clean_error(_cli("index", setup["emb"], "--text", setup["text"], "-m", model, "-o", idx, "-q"))
    assert str(model) in line
    assert not idx.exists() and not list(tmp_path.glob(".idx.*"))


def test_index_without_m_records_the_default_model(setup, tmp_path, monkeypatch, faiss):
    other = _other_model(setup, tmp_path)
    monkeypatch.setenv("SCBOW_MODEL", str(setup["model_dir"]))
    idx = tmp_path / "idx"
    result = _cli("index", setup["emb"], "--text", setup["text"], "-o", idx, "--M", "8", "-q")
    assert result.exit_code == 0, result.output
    assert "recorded the default model" in result.stderr
    info = json.loads((idx / "index.json").read_text())
    assert info["model"] == str(setup["model_dir"].resolve()) and info["model_id"]
    assert_clean_error(_query(setup, idx, model=other), "another model")
    # a default model that does not fit (other dims) or is damaged is not recorded: a note says so
    for default, why in ((tmp_path / "nothing", "no default model at"), (setup["text"], "no model recorded")):
        monkeypatch.setenv("SCBOW_MODEL", str(default))
        result = _cli("index", setup["emb"], "--text", setup["text"], "-o", idx, "--M", "8", "-q")
        assert result.exit_code == 0, result.output
        notes = [line for line in result.stderr.splitlines() if "no model recorded" in line]
        assert len(notes) == 1 and why in notes[0], result.stderr
        assert json.loads((idx / "index.json").read_text())["model"] is None
        assert _query(setup, idx, model=other).exit_code == 0  # no model recorded: any model of its dims


@pytest.mark.parametrize("where", ["model", "model-link/sub"])
def test_no_index_inside_a_model(setup, tmp_path, where, faiss):
    model = shutil.copytree(setup["model_dir"], tmp_path / "model")
    (tmp_path / "model-link").symlink_to(model)
    before = sorted((p.name, p.stat().st_size) for p in model.iterdir())
    for m in ([], ["-m", setup["model_dir"]]):
        result = _cli("index", setup["emb"], "--text", setup["text"], *m, "-o", tmp_path / where, "-q")
        assert_clean_error(result, "model directory")
    assert sorted((p.name, p.stat().st_size) for p in model.iterdir()) == before
    assert not list(model.glob(".*"))


def test_a_build_removes_the_leftovers_of_dead_builds_beside_it(setup, tmp_path, faiss):
    from test_files import dead_pid

    dead = tmp_path / f".idx.tmp-{dead_pid()}-0123abcd"  # a killed build: the files it had written
    dead.mkdir()
    (dead / "offsets.npy").write_bytes(b"x" * 100)
    notes = []  # (another output's, or a live writer's: test_files)
    build_index(setup["emb"], setup["text"], tmp_path / "idx", M=8, ef_construction=20, note=notes.append)
    assert not dead.exists()
    assert any("removed 1 unfinished build" in n for n in notes)
    assert sorted(p.name for p in (tmp_path / "idx").iterdir()) == ["ids.npy", "index.json", "offsets.npy",
                                                                   "vectors.faiss"]
