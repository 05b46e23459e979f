"""The sentence index (``scbow.index``): recall against exact search, rows with no embedding,
line lookup, round trips, shard directories as input, and every error a user can cause."""

from __future__ import annotations

import io
import json
import lzma
import shutil
import sys

import numpy as np
import pytest

import scbow
from scbow.errors import CorpusError, ModelError

N_LINES = 3000


@pytest.fixture(scope="module")
def faiss():
    return pytest.importorskip("faiss")


@pytest.fixture(scope="module")
def setup(gutenberg_slice, tmp_path_factory):
    """The first lines of gutenberg-1M, a tiny model trained on them, their embeddings (.npy)."""
    from scbow.embedding import embed_file

    text = gutenberg_slice(N_LINES)
    base = tmp_path_factory.mktemp("index")
    model = scbow.train([text], scbow.TrainConfig(dim=16, epochs=1, threads=1), quiet=True, cache_dir=base / "cache")
    model.save(base / "model")
    model = scbow.load(base / "model")
    emb = base / "emb.npy"
    embed_file(model, text, emb)
    return {"text": text, "model_dir": base / "model", "model": model, "emb": emb, "base": base}


@pytest.fixture(scope="module")
def built(setup, faiss):
    from scbow.index import build_index

    out = setup["base"] / "idx"
    info = build_index(setup["emb"], setup["text"], out, M=16, ef_construction=100, model=setup["model_dir"])
    return out, info


def _lines(path):
    with open(path, encoding="utf-8", errors="replace", newline=None) as fh:
        return [line.rstrip("\n") for line in fh]


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_recall_at_10_against_exact(setup, built):
    from scbow.index import open_index

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
    from scbow.index import open_index

    x = np.load(setup["emb"])
    nan_rows = set(np.flatnonzero(np.isnan(x).any(axis=1)).tolist())
    assert nan_rows, "the slice has blank lines between books: they have no embedding"
    out, info = built
    assert info["count"] == len(x) - len(nan_rows) and info["skipped_rows"] == len(nan_rows)
    assert info["rows"] == len(x)
    index = open_index(out)
    assert len(index) == info["count"]
    q = np.nan_to_num(x[:500], nan=0.5)
    ids, _ = index.search(q, 20)
    assert not nan_rows & set(ids.ravel().tolist())
    assert (ids >= 0).all()


def test_line_lookup_matches_the_file(setup, built):
    from scbow.index import open_index

    lines = _lines(setup["text"])
    index = open_index(built[0])
    for row in [0, 1, 17, 1234, N_LINES - 1]:
        file, number, text = index.line(row)
        assert file == str(setup["text"].resolve())
        assert number == row + 1
        assert text == lines[row]
    with pytest.raises(IndexError):
        index.line(N_LINES)


def test_a_sentence_finds_its_own_line(setup, built):
    from scbow.index import search_command

    lines = _lines(setup["text"])
    row = next(i for i, t in enumerate(lines) if len(t.split()) > 12)
    found = search_command(setup["model_dir"], lines[row], built[0], topn=5, ef=100)
    assert len(found) == 5
    cos, file, number, text = found[0]
    assert text == lines[number - 1] and cos > 0.99
    assert lines[row] in [t for _, _, _, t in found]
    assert all(a[0] >= b[0] for a, b in zip(found, found[1:]))
    # a loaded model works too
    assert search_command(setup["model"], lines[row], built[0], topn=5, ef=100) == found


def test_round_trip_and_ef(setup, built):
    from scbow.index import open_index

    out, info = built
    a, b = open_index(out), open_index(out)
    q = np.nan_to_num(np.load(setup["emb"])[100:140])
    assert np.array_equal(a.search(q, 10)[0], b.search(q, 10)[0])
    assert a.ef == info["params"]["ef_search"]
    a.ef = 200
    assert a.ef == 200
    with pytest.raises(ValueError):
        a.ef = 0
    assert json.loads((out / "index.json").read_text())["dim"] == 16
    assert info["library"] == "faiss-cpu" and info["model"] == str(setup["model_dir"].resolve())
    one_id, one_score = a.search(q[0], 3)  # a single vector
    assert one_id.shape == (1, 3) and one_score.shape == (1, 3)


def test_small_index_pads_with_minus_one(tmp_path, faiss):
    from scbow.index import build_index, open_index

    text = tmp_path / "t.txt"
    text.write_text("a\nb\nc\n")
    emb = tmp_path / "e.npy"
    np.save(emb, np.array([[1, 0, 0], [np.nan] * 3, [0, 1, 0]], dtype=np.float32))
    build_index(emb, text, tmp_path / "idx")
    ids, scores = open_index(tmp_path / "idx").search(np.array([1, 0.1, 0], dtype=np.float32), 5)
    assert ids[0, :2].tolist() == [0, 2] and ids[0, 2:].tolist() == [-1, -1, -1]
    assert np.isneginf(scores[0, 2:]).all()
    zero_ids, _ = open_index(tmp_path / "idx").search(np.zeros(3, np.float32), 2)
    assert (zero_ids == -1).all()  # a zero query finds nothing


@pytest.mark.parametrize("block", [1, 2, 3, 7, 1 << 20])
def test_line_starts_split_like_universal_newlines(block):
    from scbow.index import _line_starts

    data = "\ufeffone\r\ntwo\rthree\n\nfour\r\r\nfive\u2028still five\rsix".encode("utf-8")
    starts, size = _line_starts(io.BytesIO(data), block=block)
    expected = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline=None).readlines()
    assert size == len(data) and len(starts) == len(expected)
    ends = list(starts[1:]) + [size]
    got = [data[s:e].decode("utf-8").rstrip("\r\n") for s, e in zip(starts, ends)]
    assert got == [line.rstrip("\n") for line in expected]
    for text in (b"", b"x", b"x\n", b"\n", b"\r", b"\r\n\r\n"):
        n = len(io.TextIOWrapper(io.BytesIO(text), encoding="utf-8", newline=None).readlines())
        assert len(_line_starts(io.BytesIO(text), block=block)[0]) == n, text


def test_compressed_text_is_kept_in_the_index(setup, tmp_path, faiss):
    from scbow.index import build_index, open_index

    xz = tmp_path / "slice.txt.xz"
    with lzma.open(xz, "wb") as fh:
        fh.write(setup["text"].read_bytes())
    out = tmp_path / "idx"
    info = build_index(setup["emb"], xz, out, M=8, ef_construction=40)
    assert info["files"][0]["text"] == "text-000.txt" and (out / "text-000.txt").is_file()
    lines = _lines(setup["text"])
    index = open_index(out)
    assert index.line(42) == (str(xz.resolve()), 43, lines[42])


def _write_shards(directory, parts):
    """A shard directory in the format of ``scbow.cluster``: ``parts`` = [(text file, rows array)]."""
    from scbow.cluster import MANIFEST_VERSION

    directory.mkdir()
    shards = []
    first = {}
    for i, (file, rows) in enumerate(parts):
        np.save(directory / f"shard-{i:06d}.npy", rows)
        missing = np.flatnonzero(np.isnan(rows).any(axis=1)) + 1
        (directory / f"shard-{i:06d}.missing.txt").write_text("".join(f"{m}\n" for m in missing))
        start = first.get(str(file), 1)
        first[str(file)] = start + len(rows)
        shards.append({"shard": f"shard-{i:06d}.npy", "missing_file": f"shard-{i:06d}.missing.txt",
                       "file": str(file), "bytes": [0, -1], "first_line": start, "rows": len(rows),
                       "missing": int(len(missing))})
    manifest = {"manifest_version": MANIFEST_VERSION, "model": None, "dim": int(parts[0][1].shape[1]),
                "rows": sum(len(r) for _, r in parts), "shards": shards}
    (directory / "manifest.json").write_text(json.dumps(manifest))


def test_a_shard_directory_as_input(setup, tmp_path, faiss):
    from scbow.index import build_index, open_index

    lines = _lines(setup["text"])
    x = np.load(setup["emb"])
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("".join(t + "\n" for t in lines[:2000]), encoding="utf-8")
    b.write_text("".join(t + "\n" for t in lines[2000:]), encoding="utf-8")
    _write_shards(tmp_path / "shards", [(a.resolve(), x[:1200]), (a.resolve(), x[1200:2000]), (b.resolve(), x[2000:])])
    info = build_index(tmp_path / "shards", None, tmp_path / "idx", M=16, ef_construction=100)
    assert info["embeddings"]["kind"] == "shards" and info["rows"] == len(x)
    assert [f["rows"] for f in info["files"]] == [2000, len(x) - 2000]
    index = open_index(tmp_path / "idx")
    assert index.line(1500) == (str(a.resolve()), 1501, lines[1500])
    assert index.line(2005) == (str(b.resolve()), 6, lines[2005])
    row = next(i for i in range(2000, len(x)) if not np.isnan(x[i]).any())
    ids, scores = index.search(x[row], 1)
    assert index.line(int(ids[0, 0]))[2] == lines[row] and scores[0, 0] > 0.999
    with pytest.raises(ModelError, match="no text file"):
        build_index(tmp_path / "shards", a, tmp_path / "idx2")


# -- errors -------------------------------------------------------------------------------


def test_missing_library_gives_the_install_hint(setup, tmp_path, monkeypatch):
    from scbow.index import build_index

    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(ModelError, match=r"scbow-numba\[index\]"):
        build_index(setup["emb"], setup["text"], tmp_path / "idx")


def test_bad_embeddings(setup, tmp_path, faiss):
    from scbow.index import build_index

    text = setup["text"]
    with pytest.raises(ModelError, match="no such file"):
        build_index(tmp_path / "nope.npy", text, tmp_path / "i")
    np.save(tmp_path / "f64.npy", np.zeros((3, 4)))
    with pytest.raises(ModelError, match="float64.*expected float32"):
        build_index(tmp_path / "f64.npy", text, tmp_path / "i")
    np.save(tmp_path / "flat.npy", np.zeros(5, np.float32))
    with pytest.raises(ModelError, match="shape"):
        build_index(tmp_path / "flat.npy", text, tmp_path / "i")
    (tmp_path / "junk.npy").write_bytes(b"not numpy at all")
    with pytest.raises(ModelError, match="not a .npy"):
        build_index(tmp_path / "junk.npy", text, tmp_path / "i")
    with pytest.raises(ModelError, match="give the text file"):
        build_index(setup["emb"], None, tmp_path / "i")
    with pytest.raises(ModelError, match="model directory"):
        build_index(setup["model_dir"], text, tmp_path / "i")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match="manifest.json"):
        build_index(tmp_path / "empty", None, tmp_path / "i")
    np.save(tmp_path / "allnan.npy", np.full((3, 4), np.nan, np.float32))
    (tmp_path / "three.txt").write_text("a\nb\nc\n")
    with pytest.raises(CorpusError, match="nothing to index"):
        build_index(tmp_path / "allnan.npy", tmp_path / "three.txt", tmp_path / "i")
    assert not (tmp_path / "i").exists()  # nothing left behind by a failed build


def test_bad_text(setup, tmp_path, faiss):
    from scbow.index import build_index

    with pytest.raises(CorpusError, match="no such file"):
        build_index(setup["emb"], tmp_path / "nope.txt", tmp_path / "i")
    with pytest.raises(CorpusError, match="is a directory"):
        build_index(setup["emb"], tmp_path, tmp_path / "i")
    (tmp_path / "short.txt").write_text("a\nb\n")
    with pytest.raises(CorpusError, match="2 lines but the embeddings have 3,000 rows"):
        build_index(setup["emb"], tmp_path / "short.txt", tmp_path / "i")


def test_refuses_to_replace_what_is_not_an_index(setup, tmp_path, built):
    from scbow.index import build_index

    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "thesis.tex").write_text("...")
    with pytest.raises(ModelError, match="not a sentence index"):
        build_index(setup["emb"], setup["text"], tmp_path / "precious")
    assert (tmp_path / "precious" / "thesis.tex").is_file()
    with pytest.raises(ModelError, match="is a sentence index already"):
        build_index(built[0], None, tmp_path / "x")


def _copy(built, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(built[0], dst)
    return dst


def test_damaged_index(tmp_path, built):
    from scbow.index import open_index

    with pytest.raises(ModelError, match="no such index"):
        open_index(tmp_path / "nope")
    idx = _copy(built, tmp_path)
    (idx / "index.json").write_text("{ not json")
    with pytest.raises(ModelError, match="damaged sentence index"):
        open_index(idx)
    (idx / "index.json").write_text(json.dumps({"format": "scbow-numba sentence index", "format_version": 1}))
    with pytest.raises(ModelError, match="damaged sentence index.*fields"):
        open_index(idx)
    idx = _copy(built, tmp_path / "b")
    data = (idx / "vectors.faiss").read_bytes()
    (idx / "vectors.faiss").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError, match="damaged sentence index.*bytes"):
        open_index(idx)
    info = json.loads((idx / "index.json").read_text())
    info["index_bytes"] = len(data) // 2  # a truncated file that index.json agrees with
    (idx / "index.json").write_text(json.dumps(info))
    with pytest.raises(ModelError, match="damaged sentence index"):
        open_index(idx)
    idx = _copy(built, tmp_path / "c")
    (idx / "offsets.npy").unlink()
    with pytest.raises(ModelError, match="offsets.npy"):
        open_index(idx)
    idx = _copy(built, tmp_path / "d")
    (idx / "ids.npy").write_bytes(b"junk")
    with pytest.raises(ModelError, match="damaged sentence index.*ids.npy"):
        open_index(idx)


def test_model_and_index_mixed_up(setup, built, tmp_path):
    from scbow.index import open_index, search_command

    with pytest.raises(ModelError, match="is a model directory, not a sentence index"):
        open_index(setup["model_dir"])
    with pytest.raises(ModelError, match="is a sentence index, not a model"):
        search_command(built[0], "the king", built[0])


def test_query_with_another_model(setup, built, tmp_path):
    from scbow.index import build_index, search_command

    # an index of 8-dim vectors, queried with the 16-dim model
    (tmp_path / "t.txt").write_text("a\nb\n")
    np.save(tmp_path / "e.npy", np.eye(2, 8, dtype=np.float32))
    build_index(tmp_path / "e.npy", tmp_path / "t.txt", tmp_path / "idx8")
    with pytest.raises(ModelError, match="8-dim embeddings but the model has 16"):
        search_command(setup["model_dir"], "the king", tmp_path / "idx8")
    # an index recording its model, queried with another model of the same dim
    other = tmp_path / "other"
    shutil.copytree(setup["model_dir"], other)
    config = json.loads((other / "config.json").read_text())
    config["config"]["seed"] = 12345
    (other / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError, match="another model"):
        search_command(other, "the king", built[0])


def test_a_sentence_with_nothing_to_average(setup, built):
    from scbow.index import search_command

    with pytest.raises(ValueError, match="has no word"):
        search_command(setup["model_dir"], "   ", built[0])


def test_changed_text_is_refused(setup, tmp_path, faiss):
    from scbow.index import build_index, open_index

    text = tmp_path / "t.txt"
    shutil.copy(setup["text"], text)
    build_index(setup["emb"], text, tmp_path / "idx", M=8, ef_construction=20)
    with open(text, "a", encoding="utf-8") as fh:
        fh.write("one more line\n")
    with pytest.raises(CorpusError, match="changed since the index was built"):
        open_index(tmp_path / "idx").line(3)
    text.unlink()
    with pytest.raises(CorpusError, match="gone"):
        open_index(tmp_path / "idx").line(3)


def test_index_command_summary_and_progress(setup, tmp_path, capsys, faiss):
    from scbow.index import index_command

    line = index_command(setup["emb"], tmp_path / "idx", setup["text"], 8, 40, False)
    assert line.startswith("indexed ") and "sentences x 16 dims" in line and str(tmp_path / "idx") in line
    assert "rows with no embedding left out" in line
    assert "index: reading the lines of" in capsys.readouterr().err
    index_command(setup["emb"], tmp_path / "idx", setup["text"], 8, 40, True)  # replaces the index
    assert capsys.readouterr().err == ""


def test_cli_index_then_neighbors_from_it_as_from_a_scan(setup, tmp_path, faiss):
    """``index`` then ``neighbors --index``: the same output format as ``--in``, and the same
    nearest line first; the option mistakes get one-line errors."""
    from conftest import assert_clean_error, make_runner

    from scbow.cli import main

    runner = make_runner()
    out = tmp_path / "books.index"
    built = runner.invoke(main, ["index", str(setup["emb"]), "--text", str(setup["text"]), "-m",
                                 str(setup["model_dir"]), "-o", str(out), "--M", "16", "-q"])
    assert built.exit_code == 0, built.output
    assert (out / "index.json").is_file()
    sentence = _lines(setup["text"])[200]
    query = ["neighbors", "-m", str(setup["model_dir"]), "--sentence", sentence, "-n", "5"]
    fast = runner.invoke(main, [*query, "--index", str(out), "--ef", "256"])
    exact = runner.invoke(main, [*query, "--in", str(setup["text"])])
    assert fast.exit_code == 0 and exact.exit_code == 0, fast.output + exact.output
    first = [line.split("\t") for line in fast.stdout.splitlines() if "\t" in line]
    want = [line.split("\t") for line in exact.stdout.splitlines() if "\t" in line]
    assert len(first) == 5 and first[0][1:] == want[0][1:]  # line number and text of the nearest line
    assert abs(float(first[0][0]) - float(want[0][0])) < 1e-3
    assert_clean_error(runner.invoke(main, [*query, "--index", str(out), "--in", str(setup["text"])]), "not both")
    assert_clean_error(runner.invoke(main, [*query, "--in", str(setup["text"]), "--ef", "9"]), "--ef needs --index")
    assert_clean_error(runner.invoke(main, ["neighbors", "-m", str(setup["model_dir"]), "--index", str(out)]),
                       "needs --sentence")
    assert_clean_error(runner.invoke(main, ["index", str(setup["emb"]), "-o", str(setup["emb"])]), "input")
