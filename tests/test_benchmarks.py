"""The benchmark harness (``python -m benchmarks.run SUITE``): plumbing on tiny corpora, never timings."""

from __future__ import annotations

import argparse
import ast
import json
import lzma
from pathlib import Path

import numpy as np
import pytest

from benchmarks import ab, common, run, speed, targets, torch_scbow
from benchmarks.torch_scbow import build_members, pack_batch, tokens_per_example
from scbow.config import TrainConfig
from scbow.reference import loss_and_grad
from scbow.training import load_corpus

SENTENCES = [[1, 2, 3], [4, 5], [2, 6, 7, 7], [8], [9, 10, 1], [11, 12], [3, 3, 4]]
TOKENS = np.array([w for s in SENTENCES for w in s], dtype=np.int32)
OFFSETS = np.r_[0, np.cumsum([len(s) for s in SENTENCES])].astype(np.int64)


@pytest.mark.parametrize("members, n_pos", [([1, 0, 2, 4, 5], 2), ([0, -1, 1, 3, 6], 1), ([2, 1, 3, 2, 6], 2)])
@pytest.mark.parametrize("weight_decay", [0.0, 10.0])
def test_torch_loss_and_grad_equal_the_reference(members, n_pos, weight_decay):
    pytest.importorskip("torch")
    W = np.random.default_rng(3).standard_normal((14, 6)).astype(np.float32)
    model = torch_scbow.TorchSiameseCBOW(W, lr=0.1, weight_decay=weight_decay)
    loss = model.loss(model.tensors(np.array([members]), np.array([n_pos]), TOKENS, OFFSETS))
    loss.backward()
    ids = [m for m in members if m >= 0]
    ref_loss, ref_grad = loss_and_grad(W.astype(np.float64), SENTENCES[ids[0]], [SENTENCES[i] for i in ids[1:1 + n_pos]],
                                       [SENTENCES[i] for i in ids[1 + n_pos:]], weight_decay=weight_decay)
    assert float(loss.detach()) == pytest.approx(ref_loss, rel=1e-5)
    np.testing.assert_allclose(model.W.grad.to_dense().numpy(), ref_grad, rtol=1e-4, atol=1e-5)


def test_torch_batch_mean_and_sgd_step():
    pytest.importorskip("torch")
    W = np.random.default_rng(4).standard_normal((14, 6)).astype(np.float32)
    members, n_pos = np.array([[1, 0, 2, 4, 5], [0, -1, 1, 3, 6]]), np.array([2, 1])
    model = torch_scbow.TorchSiameseCBOW(W, lr=0.1)
    loss = float(model.loss(model.tensors(members, n_pos, TOKENS, OFFSETS)).detach())
    one = [float(model.loss(model.tensors(members[i:i + 1], n_pos[i:i + 1], TOKENS, OFFSETS)).detach()) for i in range(2)]
    assert loss == pytest.approx(np.mean(one), rel=1e-6)
    model.step(model.tensors(members, n_pos, TOKENS, OFFSETS))
    changed = np.flatnonzero(np.abs(model.W.detach().numpy() - W).sum(axis=1))
    assert 0 < len(changed) and set(changed) <= set(TOKENS.tolist())  # only rows of words in the batch move


def test_build_members_follows_the_kernel_rules():
    # 3 documents: 5 sentences, 1 sentence (no example), 3 sentences (too small for 2 negatives)
    sent_doc = np.array([0, 0, 0, 0, 0, 1, 2, 2, 2], dtype=np.int32)
    doc_offsets = np.array([0, 5, 6, 9], dtype=np.int64)
    targets_ = np.array([0, 1, 2, 3, 4, 6, 7, 8] * 50, dtype=np.int64)
    members, n_pos = build_members(targets_, sent_doc, doc_offsets, 2, "document", np.random.default_rng(0))
    assert members.shape == (len(targets_), 5)
    for (t, prev, nxt, *negs), k in zip(members, n_pos):
        assert prev == (t - 1 if t > 0 and sent_doc[t - 1] == sent_doc[t] else -1)
        assert nxt == (t + 1 if t + 1 < len(sent_doc) and sent_doc[t + 1] == sent_doc[t] else -1)
        assert k == int(prev >= 0) + int(nxt >= 0)
        for n in negs:
            assert n not in (t, prev, nxt)
            assert sent_doc[t] != 0 or sent_doc[n] == 0  # a document large enough: negatives from it
    with pytest.raises(ValueError):
        build_members(np.array([5]), sent_doc, doc_offsets, 2, "document", np.random.default_rng(0))


def test_pack_batch_and_tokens_per_example():
    members = np.array([[0, -1, 1, 3, 6]])
    flat, bag_offsets, lengths = pack_batch(members, TOKENS, OFFSETS)
    assert lengths.tolist() == [3, 0, 2, 1, 3] and bag_offsets.tolist() == [0, 3, 3, 5, 6]
    assert flat.tolist() == [1, 2, 3, 4, 5, 8, 3, 3, 4]
    assert tokens_per_example(members, OFFSETS) == 9.0
    assert pack_batch(members, TOKENS, OFFSETS, max_length=2)[2].tolist() == [2, 0, 2, 1, 2]


@pytest.fixture
def tiny_data(tmp_path, make_text, monkeypatch):
    """A data folder like ../shared/data (a small corpus under the 1M name, two STS sets), in use."""
    data = tmp_path / "data"
    (data / "corpus").mkdir(parents=True)
    with lzma.open(data / "corpus" / "gutenberg-1M.txt.xz", "wt", encoding="utf-8") as fh:
        fh.write(make_text(n_docs=6, sents_per_doc=40, seed=1))
    (data / "sts").mkdir()
    (data / "sts" / "a.tsv").write_text("4.0\tthe cat sat\ta cat sat\n1.0\tthe dog ran\tthe sun\n2.5\tred fish\tqueen\n")
    (data / "sts" / "b.tsv").write_text("3.0\tthe king sang\tthe queen sang\n0.5\txyzzy\tthe moon\n")
    monkeypatch.setenv("SCBOW_DATA", str(data))
    return data


def run_speed(tmp_path, monkeypatch, *argv) -> tuple[dict, str]:
    monkeypatch.setattr(speed, "WORK_DIR", tmp_path / "work")
    out = tmp_path / "report" / "speed"
    speed.main(["--quick", "--threads", "1", *argv, "--out", str(out)])
    return json.loads(out.with_name("speed.json").read_text()), out.with_name("speed.md").read_text()


def test_speed_harness_in_process_sections(tiny_data, tmp_path, monkeypatch):
    report, markdown = run_speed(tmp_path, monkeypatch, "--only", "preprocess,kernel,wordpart,inference", "--no-torch")
    assert report["settings"]["sections"] == ["preprocess", "kernel", "wordpart", "inference"]
    assert report["wordpart"]["rows"][0]["sentences_per_second"] > 0 and report["wordpart"]["sample"] > 0
    assert report["inference"]["pairs"] == 5 and report["inference"]["sets"] == 2
    assert report["preprocess"]["raw_tokens"] == report["corpus"]["raw_tokens"] > 0
    assert report["kernel"]["rows"]["serial-1"]["examples_per_s"]["n"] == 1
    assert report["kernel"]["torch"]["available"] is False and report["bandwidth"]["bytes_per_example"] > 0
    by_name = {t["target"]: t for t in report["targets"]}
    assert any("end to end" in name and t["met"] is None for name, t in by_name.items())  # not run
    assert any("reload" in name and t["met"] is True for name, t in by_name.items())
    # the word part's targets are judged (against gensim when it ran beside it)
    word = [t for name, t in by_name.items() if name.startswith("word part, one pass")]
    assert word and all(t["met"] in (True, False) if common.have("gensim") else t["met"] is None for t in word)
    assert "## Targets" in markdown and "## The word part" in markdown and "sections not run: e2e, memory" in markdown


@pytest.mark.slow
def test_speed_harness_runs_every_section_on_a_tiny_corpus(tiny_data, tmp_path, monkeypatch):
    """With its worker processes, one thread (no parallel compile), every target."""
    report, markdown = run_speed(tmp_path, monkeypatch, "--e2e-threads", "1", "--torch-batches", "2")
    assert report["settings"]["sections"] == list(speed.SECTIONS)  # the in-process ones: the test above
    assert report["memory"]["rows"]["1M"]["token_bytes"] > 0 and f"scbow-{TrainConfig().dim}" in report["e2e"]["rows"]
    names = " ".join(t["target"] for t in report["targets"])
    assert all(word in names for word in ("end to end", "kernel", "preprocessing", "reload", "STS", "memory"))
    assert all(t["met"] in (True, False, None) for t in report["targets"])
    torch = report["kernel"]["torch"]
    assert (torch["rows"]["1"]["examples_per_s"]["n"] == 1) if common.have("torch") else torch["available"] is False
    assert "## Targets" in markdown and "## Machine" in markdown
    assert not list((tmp_path / "work").glob("run-*"))  # the run's scratch is removed


def test_run_lists_every_suite_and_each_answers_help(capsys):
    """Every module of benchmarks/ with a main() is a registered suite, with a line in --help, and
    answers --help through the entry point (prog names it)."""
    with pytest.raises(SystemExit) as exc:
        run.main(["--help"])
    assert exc.value.code == 0
    listing = capsys.readouterr().out
    bench_dir = Path(run.__file__).parent
    helpers = {"run", "common", "targets", "peers", "sent2vec", "torch_scbow", "speed_workers", "ab_worker", "__init__"}
    with_main = {p.stem for p in bench_dir.glob("*.py")
                 if any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in ast.parse(p.read_text()).body)}
    assert with_main - helpers <= {module for module, _ in run.SUITES.values()}
    for name in [*run.SUITES, *run.ALIASES]:
        assert any(line.split()[:1] == [run.ALIASES.get(name, name)] for line in listing.splitlines()), name
        with pytest.raises(SystemExit) as exc:
            run.main([name, "--help"])
        assert exc.value.code == 0 and f"python -m benchmarks.run {run.ALIASES.get(name, name)}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        run.main(["nonsense"])
    assert "unknown suite" in str(exc.value.code)


def test_targets_table_judges_and_the_speed_suite_reads_it():
    k, e2e = targets.TARGETS["kernel_examples_per_s"], targets.TARGETS["e2e_over_gensim"]
    assert (k.value, k.unit) == (150_000, "examples/s") and k.goal_text() == ">= 150000 examples/s"
    assert k.met(150_000) is True and k.met(149_999) is False and k.met(None) is None
    assert e2e.met(0.5) is True and e2e.met(0.51) is False
    assert targets.TARGETS["cached_reload_s"].met(1.0) is False  # strictly below
    assert speed.T_KERNEL_EPS == k.value and speed.T_PREPROCESS == targets.TARGETS["preprocess_tokens_per_s"].value
    assert all(t.source and t.measured_against and t.sense in ("at_least", "at_most", "below") for t in targets.TARGETS.values())
    assert targets.SUPERSEDED["kernel_examples_per_s"][0] == 120_000  # the old goal, replaced, judged by nothing


def test_common_memory_workers_tokens_and_checkout(tmp_path, small_corpus_file):
    mem = common.memory_mib()
    assert mem["VmHWM"] > 0 and common.peak_rss_mib() == pytest.approx(mem["VmHWM"], rel=0.5)
    assert "VmRSS" not in mem or mem["VmHWM"] >= mem["VmRSS"] > 0
    assert common.stats([1.0, 2.0, 4.0]) == {"median": 2.0, "min": 1.0, "max": 4.0, "n": 3, "spread": 1.5}
    assert common.parse_threads("2, 1,2") == [2, 1]
    for bad in ("1,x", "0", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="comma-separated|at least one"):
            common.parse_threads(bad)
    with pytest.raises(common.WorkerError, match="failed with status"):
        common.run_worker("benchmarks_no_such_module", [], timeout=60)
    corpus = load_corpus([small_corpus_file], 1, cache_dir=tmp_path)  # what gensim and Sent2Vec read
    common.write_tokens(corpus, tmp_path / "tokens.txt")
    words, o = corpus.vocab.words, corpus.offsets
    assert (tmp_path / "tokens.txt").read_text().splitlines() == [
        " ".join(words[t] for t in corpus.tokens[o[s]:o[s + 1]]) for s in range(corpus.n_sentences)]
    # a linked worktree: .git is a file naming its git dir, HEAD a branch found in packed-refs
    main_git = tmp_path / "repo" / ".git"
    (main_git / "worktrees" / "wt").mkdir(parents=True)
    (main_git / "packed-refs").write_text("# pack-refs\n" + "ab" * 20 + " refs/heads/topic\n")
    (main_git / "worktrees" / "wt" / "HEAD").write_text("ref: refs/heads/topic\n")
    (main_git / "worktrees" / "wt" / "commondir").write_text("../..\n")
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / ".git").write_text(f"gitdir: {main_git / 'worktrees' / 'wt'}\n")
    assert common.checkout_commit(tmp_path / "wt") == "ab" * 20
    (main_git / "worktrees" / "wt" / "HEAD").write_text("cd" * 20 + "\n")  # detached
    assert common.checkout_commit(tmp_path / "wt") == "cd" * 20
    assert common.checkout_commit(tmp_path / "nowhere") is None


def test_ab_summary_and_verdict():
    runs = [{"side": side, "threads": 1, "examples_per_s": eps} for side, eps in
            [("before", 100.0), ("after", 110.0), ("before", 90.0), ("after", 100.0), ("before", 110.0), ("after", 90.0)]]
    row = ab.summarize(runs, [1])["1"]
    assert row["before"]["rounds"] == [100.0, 90.0, 110.0] and row["after"]["median"] == 100.0
    assert row["ratio_after_over_before"] == 1.0 and row["ratio_by_round"] == [1.1, 1.1111, 0.8182]
    assert row["spread_max"] == pytest.approx(0.2)
    assert ab.verdict(row).startswith("within run-to-run spread")
    runs_fast = [dict(r, examples_per_s=r["examples_per_s"] * (2 if r["side"] == "after" else 1)) for r in runs]
    assert ab.verdict(ab.summarize(runs_fast, [1])["1"]).startswith("faster")


def test_ab_suite_alternates_fresh_processes_of_each_checkout(tiny_data, tmp_path, monkeypatch):
    """Both sides run in fresh processes importing scbow from their own checkout (here this one,
    reached by two paths), warm first, then alternate."""
    monkeypatch.setenv("SCBOW_BENCH_NO_GIT", "1")
    monkeypatch.setattr(ab, "WORK_DIR", tmp_path / "work")
    monkeypatch.setattr(ab, "WARM_LINES", 150)
    (tmp_path / "other").symlink_to(common.REPO_ROOT, target_is_directory=True)
    out = tmp_path / "report" / "ab_speed"
    report = ab.main(["--base", str(tmp_path / "other"), "--lines", "200", "--rounds", "2", "--threads", "1",
                      "--out", str(out)])
    assert [(r["round"], r["side"]) for r in report["runs"]] == [(1, "before"), (1, "after"), (2, "before"), (2, "after")]
    assert all(r["examples"] > 0 and r["examples_per_s"] > 0 for r in report["runs"])
    assert report["runs"][0]["examples"] == report["runs"][1]["examples"]  # the same work on both sides
    assert len(report["rows"]["1"]["before"]["rounds"]) == 2 and report["rows"]["1"]["ratio_after_over_before"] > 0
    assert report["settings"]["before"]["scbow_file"].startswith(str(common.REPO_ROOT.resolve()))
    markdown = out.with_name("ab_speed.md").read_text()
    assert "# A/B kernel speed" in markdown and "## Machine" in markdown and "after / before" in markdown
    assert json.loads(out.with_name("ab_speed.json").read_text())["rows"]["1"]["threads"] == 1
    assert not list((tmp_path / "work").glob("run-*"))  # scratch removed


def test_the_speed_harness_checks_the_torch_peer_against_the_oracle(small_corpus_file, tmp_path, monkeypatch):
    """The peer's worker checks its loss and gradient on real examples before any timing, and the
    check fails for a peer that computes something else."""
    pytest.importorskip("torch")
    config = TrainConfig(dim=8, min_count=1)
    corpus = load_corpus([small_corpus_file], 1, cache_dir=tmp_path)
    members, n_pos = torch_scbow.prepare(corpus, config, 1, batch_size=8)[0]
    # rows of a trained model's size: the untrained start's (about 1e-3) would hide a decay term
    W = np.random.default_rng(0).normal(0.0, 0.3, (len(corpus.vocab), 8)).astype(np.float32)
    good = torch_scbow.oracle_check(W, corpus, members, n_pos, config)
    assert good["passed"] and good["examples"] == 3, good
    original = torch_scbow.TorchSiameseCBOW.__init__

    def with_decay(self, W, lr, weight_decay=0.0, sparse=True):  # a peer that adds a term the oracle lacks
        original(self, W, lr, weight_decay=5.0, sparse=sparse)

    monkeypatch.setattr(torch_scbow.TorchSiameseCBOW, "__init__", with_decay)
    bad = torch_scbow.oracle_check(W, corpus, members, n_pos, config)
    assert not bad["passed"], bad


# ab_worker also measures older checkouts, which have no public door: it falls back to their modules
OLD_CHECKOUTS = {"scbow.training.corpus", "scbow.training.trainer", "scbow.corpus", "scbow.trainer"}


def test_the_harness_has_no_import_circle_and_trains_through_the_public_door_only():
    import scbow.training

    graph = {}  # module -> the modules (benchmarks.* and scbow.*) and names it imports, read from the source
    for path in Path(run.__file__).parent.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = ("benchmarks" + ("." + node.module if node.module else "")) if node.level else node.module
                found |= {module, *(f"{module}.{alias.name}" for alias in node.names)}
        graph[f"benchmarks.{path.stem}"] = {m for m in found if m.split(".")[0] in ("benchmarks", "scbow")}
    edges = {m: {t for t in imported if t in graph and t != m} for m, imported in graph.items()}

    def reaches(start, goal, seen=()):
        return any(t == goal or (t not in seen and reaches(t, goal, (*seen, t))) for t in edges[start])

    assert sorted(m for m in edges if reaches(m, m)) == []
    bad = []
    for module, imported in graph.items():
        for t in imported:
            name = t.rpartition(".")[2]
            if t.startswith("scbow.") and name.startswith("_") and not name.startswith("__"):
                bad.append((module, t))  # nobody's underscored names
            if t.startswith("scbow.training.") and t.count(".") == 2 and name in scbow.training.__all__:
                continue  # from scbow.training import NAME
            if t.startswith(("scbow.training.", "scbow.trainer", "scbow.corpus")) and not (
                    module == "benchmarks.ab_worker" and {t, t.rsplit(".", 1)[0]} & OLD_CHECKOUTS):
                bad.append((module, t))
    assert bad == []
    assert all(getattr(scbow.training, name) is not None for name in scbow.training.__all__)


def test_index_suite_measures_faiss_and_exact_search_on_small_vectors(tmp_path):
    pytest.importorskip("faiss")
    from benchmarks import ann_index

    rng = np.random.default_rng(0)
    for name, n in (("base", 600), ("queries", 20)):
        x = rng.standard_normal((n, 16)).astype(np.float32)
        np.save(tmp_path / f"{name}.npy", x / np.linalg.norm(x, axis=1, keepdims=True))
    truth = ann_index._truth(tmp_path, block=256)
    spec = {"work": str(tmp_path), "threads": 1}
    exact = ann_index.worker({**spec, "lib": "exact", "kind": "exact", "params": {}, "efforts": [None], "exact_single": 5})
    assert exact["sweep"][0]["recall"] == 1.0 and truth.shape == (20, ann_index.K)
    hnsw = ann_index.worker({**spec, "lib": "faiss-cpu", "kind": "hnsw", "params": {"M": 8, "ef_construction": 40},
                             "efforts": [16, 64]})
    assert [s["effort"] for s in hnsw["sweep"]] == [16, 64] and hnsw["sweep"][-1]["recall"] > 0.5
    assert "open_ms" in hnsw["reopen"]["mmap"]


def test_the_kernel_section_and_the_doors_helpers_are_trains_own(small_corpus_file, tmp_path):
    """The kernel figures are train()'s: one epoch of the sentence part, its kernel seconds.
    untrained_start is the matrix train() starts from; first_epoch its first order of targets."""
    from scbow.training import Hook, first_epoch, train, untrained_start
    from scbow.training.start import trainable_targets
    from scbow.training.trainer import epoch_orders

    config = TrainConfig(dim=16, min_count=1, epochs=3, word_passes=2)
    corpus = load_corpus([small_corpus_file], 1, cache_dir=tmp_path)
    got = speed.sentence_epoch(corpus, config, 1)
    seen = {}

    class Start(Hook):
        def before_training(self, state, matrices, corpus):
            seen["W"] = np.array(matrices["sentence"])

    one = config.replace(epochs=1, threads=1, word_passes=0)
    want = train(corpus, one.replace(common_components=-1), quiet=True)
    train(corpus, one, quiet=True, hooks=[Start()])
    assert got["examples"] == want.examples > 0 and got["seconds"] > 0
    assert got["mean_loss"] == pytest.approx(float(np.mean(want.losses)))  # the serial kernel is deterministic
    c = speed.compile_times(speed.tiny_corpus(tmp_path, config), config, [1, 2])
    assert c["serial_first_call_seconds"] >= 0 and c["parallel_threads"] == 2 and c["parallel_first_call_seconds"] >= 0
    np.testing.assert_array_equal(seen["W"], untrained_start(corpus, one))
    np.testing.assert_array_equal(first_epoch(corpus, one), next(epoch_orders(trainable_targets(corpus), one.seed)))
    processed = untrained_start(corpus, one, post_process=True)
    assert processed.shape == seen["W"].shape and not np.array_equal(processed, seen["W"])


def test_the_modern_peer_pairs_each_sentence_with_the_next_of_its_book_and_trains(small_corpus_file, monkeypatch):
    from benchmarks import static_peer

    corpus = load_corpus([small_corpus_file], min_count=1)
    pairs = static_peer.pairs_of(corpus)
    assert len(pairs) == corpus.n_sentences - corpus.n_documents and (pairs[:, 1] == pairs[:, 0] + 1).all()
    assert (corpus.sent_doc[pairs[:, 0]] == corpus.sent_doc[pairs[:, 1]]).all()
    pytest.importorskip("sentence_transformers", reason="sentence-transformers (with torch) is not installed")
    monkeypatch.setattr(static_peer, "BATCH", 16)
    table, info = static_peer.train_one(corpus, 0.2, 1, say=lambda line: None)
    assert table.shape == (len(corpus.vocab), static_peer.DIM) and np.isfinite(table).all()
    assert info["steps"] == len(pairs) // 16 > 1 and np.isfinite(info["loss_last"])
    _, two = static_peer.train_one(corpus, 0.2, 1, say=lambda line: None, epochs=2)
    assert two["steps"] == 2 * info["steps"] and two["epochs"] == 2


def test_word_part_report_chooses_on_dev_alone(tmp_path):
    """The word part's search report marks the best STS-B dev, never the best test mean."""
    from benchmarks import word_part

    def run(passes, width, mixes):
        return {"corpus": "1M", "passes": passes, "width": width, "threads": 2, "wordsim353": 0.5, "simlex999": 0.3,
                "train_seconds": 10.0, "word_part_seconds": 5.0, "load_start": [0.1, 0.1, 0.1], "commit": "abc",
                "mixes": {str(m): {"dev": d, "test_mean": t} for m, (d, t) in mixes.items()}}

    data, text = word_part.report([run(0, 0, {0.5: (0.70, 0.60)}), run(3, 150, {0.5: (0.75, 0.61), 1.0: (0.74, 0.69)}),
                                   run(5, 150, {0.5: (0.76, 0.62)})], "1M")
    assert data["best"] == {"passes": 5, "width": 150, "mix": 0.5}
    assert "**0.7600**" in text and "**0.7400**" not in text and "**0.7000**" not in text
    runs = [run(3, 150, {0.5: (0.75, 0.61)}), run(5, 150, {0.5: (0.76, 0.62)}), run(5, 300, {0.5: (0.77, 0.6)})]
    runs[0]["alone_seconds"], runs[1]["alone_seconds"] = 300.0, 400.0  # 5 x 300 never measured alone
    data, text = word_part.report(runs, "1M", budget=360)
    assert data["best"]["width"] == 300 and data["chosen"] == {"passes": 3, "width": 150, "mix": 0.5}
