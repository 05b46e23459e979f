"""``scbow.text.prepare``: raw documents to the trainer's corpus format. Tests that split sentences with the
default library skip without it (``pip install 'scbow-numba[prepare]'``); ``segmenter="lines"`` needs nothing."""

from __future__ import annotations

import bz2
import gzip
import importlib.util
import json
import lzma
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import assert_clean_error

from scbow.cli import main
from scbow.errors import CorpusError
from scbow.text import prepare as P
from scbow.text.prepare import prepare
from scbow.training.corpus import load_corpus, open_text

BOOK = """\
Dr. Smith went to Washington, D.C. on Monday. He paid $3.50 for a coffee
at the station and read the U.S. papers.

It was late. "Where are you going?" asked Tom.
The train left at 9 p.m. sharp.
"""
# its sentences, as the default segmenter gives them; hard-wrapped lines are joined
BOOK_SENTENCES = [
    "Dr. Smith went to Washington, D.C. on Monday.",
    "He paid $3.50 for a coffee at the station and read the U.S. papers.",
    "It was late.",
    '"Where are you going?" asked Tom.',
    "The train left at 9 p.m. sharp.",
]


@pytest.fixture
def segmenter_lib():
    """The default segmenter's library, or a skip."""
    return pytest.importorskip(P.SEGMENTERS[P.DEFAULT_SEGMENTER])


def documents_of(path: Path) -> list[list[str]]:
    """The corpus file at ``path`` (any compression) as documents of sentences, checking its format."""
    with open_text(path) as fh:
        text = fh.read()
    assert text.endswith("\n") and not text.endswith("\n\n"), repr(text[-40:])
    assert not text.startswith("\n")
    docs = [block.split("\n") for block in text[:-1].split("\n\n")]
    assert all(s and s == " ".join(s.split()) for doc in docs for s in doc), docs
    return docs


def prepared(inputs, out: Path, **kwargs):
    """``prepare`` with the lines segmenter unless told: the documents written, and the stats."""
    stats = prepare(inputs, out, **{"segmenter": "lines", **kwargs})
    return documents_of(out), stats


def files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ---------------------------------------------------------------- documents and sentences


def test_file_mode_one_document_per_file(tmp_path, segmenter_lib):
    (tmp_path / "a.txt").write_text(BOOK, encoding="utf-8")
    (tmp_path / "b.txt").write_text("Short one. Another short one!\n", encoding="utf-8")
    out = tmp_path / "out" / "corpus.txt"
    out.parent.mkdir()
    stats = prepare([tmp_path / "a.txt", tmp_path / "b.txt"], out)
    assert documents_of(out) == [BOOK_SENTENCES, ["Short one.", "Another short one!"]]
    assert (stats.files, stats.documents, stats.sentences) == (2, 2, 7)
    assert stats.words == sum(len(s.split()) for s in BOOK_SENTENCES) + 5
    assert stats.bytes_read == stats.input_bytes == len(BOOK.encode()) + 30
    assert stats.segmenter == P.DEFAULT_SEGMENTER and stats.seconds > 0


def test_blank_line_mode_one_document_per_block_and_the_trainer_reads_it(tmp_path, segmenter_lib):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("\n\n" + BOOK + "\n \n\t\n", encoding="utf-8")
    out = tmp_path / "corpus.txt"
    stats = prepare([tmp_path / "in" / "a.txt"], out, documents="blank-line")
    assert documents_of(out) == [BOOK_SENTENCES[:2], BOOK_SENTENCES[2:]] and stats.documents == 2
    write_jsonl(tmp_path / "in" / "b.jsonl", [{"text": "Record one. Has two."}, {"text": "Record two."}])
    stats = prepare([tmp_path / "in"], tmp_path / "corpus.txt.xz", documents="blank-line")
    assert (stats.documents, stats.sentences) == (4, 8)
    corpus = load_corpus([tmp_path / "corpus.txt.xz"], min_count=1, max_vocab=0, use_cache=False)
    assert (corpus.n_documents, corpus.n_sentences) == (4, 8)


def test_lines_segmenter_keeps_lines_and_collapses_whitespace(tmp_path):
    src = tmp_path / "a.txt"
    src.write_bytes(b"\xef\xbb\xbfOne  sentence\there. \r\nTwo\r\n\r\n  \r\nThree\rFour")  # BOM, CRLF, CR, no final EOL
    out = tmp_path / "corpus.txt"
    assert prepared([src], out)[0] == [["One sentence here.", "Two", "Three", "Four"]]
    assert prepared([src], out, documents="blank-line")[0] == [["One sentence here.", "Two"], ["Three", "Four"]]
    # documents without sentences are dropped; bad bytes read as U+FFFD when asked are kept and counted
    (tmp_path / "b.txt").write_text(" \n\n\t\n", encoding="utf-8")
    (tmp_path / "c.txt").write_bytes(b"Caf\xe9 au lait.\n" + b"Fine line.\n" * 10)
    docs, stats = prepared([src, tmp_path / "b.txt", tmp_path / "c.txt"], out, encoding="utf-8:replace")
    assert docs == [["One sentence here.", "Two", "Three", "Four"], ["Caf\ufffd au lait."] + ["Fine line."] * 10]
    assert (stats.files, stats.documents, stats.invalid_utf8_lines) == (3, 2, 1)


@pytest.mark.parametrize("name", [n for n, module in P.SEGMENTERS.items() if module])
def test_every_library_segmenter_keeps_the_text(tmp_path, name):
    pytest.importorskip(P.SEGMENTERS[name])
    (tmp_path / "a.txt").write_text(BOOK, encoding="utf-8")
    (doc,), stats = prepared([tmp_path / "a.txt"], tmp_path / "corpus.txt", segmenter=name)
    assert "".join("".join(doc).split()) == "".join(BOOK.split())  # nothing lost, nothing added
    assert 4 <= stats.sentences <= 8 and stats.segmenter == name


# ---------------------------------------------------------------- JSON Lines


def write_jsonl(path: Path, records, opener=open) -> Path:
    with opener(path, "wt", encoding="utf-8") as fh:
        for r in records:
            fh.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def test_jsonl_named_field_one_document_per_record(tmp_path, segmenter_lib):
    src = write_jsonl(tmp_path / "docs.jsonl.gz", [
        {"id": 1, "body": "First record. It has two sentences.", "text": "not this"},
        "",  # blank lines are skipped
        {"id": 2, "body": "Second record.\n\nA paragraph after a blank line."},
        {"id": 3, "body": None},  # no text: skipped, counted
        {"id": 4, "body": ""},
    ], opener=gzip.open)
    out = tmp_path / "corpus.txt"
    stats = prepare([src], out, jsonl_field="body")
    assert documents_of(out) == [["First record.", "It has two sentences."],
                                 ["Second record.", "A paragraph after a blank line."]]
    assert (stats.documents, stats.skipped_records) == (2, 2)
    prepare([src], out, jsonl_field="body", documents="blank-line")
    assert len(documents_of(out)) == 3


def test_jsonl_default_field_is_text_and_text_that_is_not_text_becomes_text(tmp_path):
    src = write_jsonl(tmp_path / "docs.ndjson", [{"text": "a\nb"}, {"text": "c"}])
    assert prepared([src], tmp_path / "corpus.txt")[0] == [["a", "b"], ["c"]]
    # NUL (binary) becomes a space, a lone surrogate U+FFFD, as invalid UTF-8 is read everywhere
    (tmp_path / "n.jsonl").write_text('{"text": "The man walked home."}\n{"text": "a\\u0000b \\ud800 c."}\n')
    assert prepared([tmp_path / "n.jsonl"], tmp_path / "c.txt")[0] == [["The man walked home."], ["a b \ufffd c."]]


@pytest.mark.parametrize("line, fragments", [
    ('{"text": "ok"', ["line 2", "not valid JSON"]),
    ('["text"]', ["line 2", "not a JSON object but an array"]),
    ('{"body": "x", "title": "y"}', ["line 2", "no field 'text'", "'body', 'title'", "--jsonl-field"]),
    ('{"text": 3}', ["line 2", "field 'text' is not a string but a number"]),
])
def test_jsonl_errors_name_the_file_and_line(tmp_path, line, fragments):
    src = write_jsonl(tmp_path / "docs.jsonl", [{"text": "Fine."}, line, {"text": "Never read."}])
    with pytest.raises(CorpusError) as info:
        prepare([src], tmp_path / "corpus.txt", segmenter="lines", strict=True)
    message = str(info.value)
    assert "\n" not in message and all(f in message for f in [str(src), *fragments]), message
    assert files_in(tmp_path) == ["docs.jsonl"]
    # by default such a line is skipped, counted and named, and the rest is written
    docs, stats = prepared([src], tmp_path / "corpus.txt")
    assert docs == [["Fine."], ["Never read."]]
    assert stats.bad_records == 1 and len(stats.bad_examples) == 1
    assert stats.bad_examples[0].startswith(f"{src}: line 2: ") and all(f in stats.bad_examples[0] for f in fragments)


def test_jsonl_bad_lines_are_skipped_counted_and_the_first_few_named(tmp_path):
    records = [{"text": "Fine."}, "{oops", {"body": "x"}, ["a"], {"text": 3}, {"text": "Also fine."}, "nope"]
    src = write_jsonl(tmp_path / "dump.jsonl", records)
    docs, stats = prepared([src], tmp_path / "corpus.txt")
    assert docs == [["Fine."], ["Also fine."]]
    assert stats.bad_records == 5 and len(stats.bad_examples) == P.BAD_EXAMPLES == 3
    assert [e.split(": ")[1] for e in stats.bad_examples] == ["line 2", "line 3", "line 4"]
    src = write_jsonl(tmp_path / "dump.jsonl", [{"body": "x"}, {"body": "y"}])  # only bad lines: the error says why
    (tmp_path / "corpus.txt").unlink()
    with pytest.raises(CorpusError, match=r"no documents found .*2 unreadable JSON Lines records skipped, the first: "
                                          r".*line 1: no field 'text' .*--jsonl-field"):
        prepare([src], tmp_path / "corpus.txt", segmenter="lines")
    assert files_in(tmp_path) == ["dump.jsonl"]


# ---------------------------------------------------------------- files, folders, compression


@pytest.mark.parametrize("suffix, opener", [(".gz", gzip.open), (".bz2", bz2.open), (".xz", lzma.open)])
def test_compressed_input_and_output_round_trip(tmp_path, suffix, opener):
    src = tmp_path / f"book.txt{suffix}"
    with opener(src, "wt", encoding="utf-8") as fh:
        fh.write("Line one.\nLine two.\n\nLine three.\n")
    out = tmp_path / f"corpus.txt{suffix}"
    stats = prepare([src], out, segmenter="lines", documents="blank-line")
    assert stats.input_bytes == src.stat().st_size and stats.output_bytes == out.stat().st_size
    with open(out, "rb") as fh:  # really compressed, in the format of its suffix
        assert fh.read(3) in (b"\x1f\x8b\x08", b"BZh", b"\xfd7z")
    assert documents_of(out) == [["Line one.", "Line two."], ["Line three."]]
    if suffix == ".gz":  # the gzip header names the output, not its temporary file
        assert b"corpus.txt" in out.read_bytes()[:40] and b".tmp-" not in out.read_bytes()[:40]


def test_folder_input_is_recursive_sorted_and_skips_hidden_and_other_files(tmp_path):
    root = tmp_path / "in"
    (root / "b" / "deep").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "a.txt").write_text("A.\n")
    (root / "b" / "deep" / "c.md").write_text("C.\n")
    (root / "b" / "b.text").write_text("B.\n")
    with gzip.open(root / "b" / "d.jsonl.gz", "wt") as fh:
        fh.write('{"text": "D."}\n')
    (root / ".hidden.txt").write_text("hidden\n")
    (root / ".git" / "x.txt").write_text("git\n")
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00")
    (root / "archive.tar.gz").write_bytes(gzip.compress(b"x\x00"))
    (tmp_path / "notes").write_text("Plain text without a suffix.\n")  # a file named is read whatever its name
    docs, stats = prepared([root, tmp_path / "notes"], tmp_path / "corpus.txt")
    assert docs == [["A."], ["B."], ["D."], ["C."], ["Plain text without a suffix."]] and stats.files == 5
    assert [p.relative_to(root).as_posix() for p, _ in P.find_inputs([root])] == [
        "a.txt", "b/b.text", "b/d.jsonl.gz", "b/deep/c.md"]


# ---------------------------------------------------------------- refusals and errors


@pytest.mark.parametrize("inputs, kwargs, fragment", [
    (["missing.txt"], {}, "no such file or directory"),
    (["empty"], {}, r"empty: directory has no text files \(looked for .txt, .text, .md, .jsonl"),
    (["latin.txt"], {}, "not valid utf-8 text; it may be Latin-1"),
    (["blank.txt"], {}, "no documents found"),
    (["a.txt"], {"output": "a.txt"}, "refusing to overwrite an input"),
    (["."], {"output": "a.txt"}, "refusing to overwrite an input"),
    (["a.txt"], {"segmenter": P.DEFAULT_SEGMENTER}, r"not installed; pip install 'scbow-numba\[prepare\]'"),
    (["a.txt"], {"segmenter": "nupunkt", "language": "de"}, "knows English only; for language 'de' use the sentencex"),
    (["a.txt"], {"segmenter": "nupunkt", "language": "ja"}, "for language 'ja' use the sentencex .* --segmenter lines "
                                                            "needs nothing"),
    (["a.txt"], {"segmenter": "nltk"}, "unknown segmenter"),
    (["a.txt"], {"documents": "page"}, "unknown documents mode"),
])
def test_bad_inputs_and_settings_are_one_line_and_write_nothing(tmp_path, monkeypatch, inputs, kwargs, fragment):
    (tmp_path / "a.txt").write_text("Keep me.\n")
    (tmp_path / "latin.txt").write_bytes(b"\xe9t\xe9\n\xe0 la\n\xff\xfe\n")
    (tmp_path / "blank.txt").write_text("\n \n")
    (tmp_path / "empty").mkdir()
    monkeypatch.setitem(P.SEGMENTERS, P.DEFAULT_SEGMENTER, "scbow_no_such_module")
    before = {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    kwargs = dict(kwargs)
    output = tmp_path / kwargs.pop("output", "corpus.txt")
    with pytest.raises(CorpusError, match=fragment) as info:
        prepare([tmp_path / p for p in inputs], output, **{"segmenter": "lines", **kwargs})
    assert "\n" not in str(info.value)
    assert {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


def test_progress_reports_stored_bytes_up_to_the_total_and_an_interrupt_leaves_no_output(tmp_path):
    src = tmp_path / "a.txt"
    src.write_text("A sentence of text.\n" * 20_000)  # several blocks
    calls = []

    def progress(done, total):
        calls.append((done, total))
        if len(calls) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        prepare([src], tmp_path / "corpus.txt", segmenter="lines", progress=progress)
    assert files_in(tmp_path) == ["a.txt"]
    assert calls[0] == (0, src.stat().st_size) and calls[1][0] > 0
    src.unlink()  # and a folder whose stored bytes are counted, one file compressed
    books = tmp_path / "books"
    books.mkdir()
    (books / "a.txt.gz").write_bytes(gzip.compress("".join(f"Sentence number {i} of the file.\n"
                                                          for i in range(100_000)).encode()))
    (books / "b.txt").write_text("Another file.\n" * 10_000)
    calls = []
    stats = prepare([books], tmp_path / "out.txt", segmenter="lines", progress=lambda d, t: calls.append((d, t)))
    total = (books / "a.txt.gz").stat().st_size + (books / "b.txt").stat().st_size
    assert {t for _, t in calls} == {total} and calls[-1][0] == total == stats.bytes_read
    done = [d for d, _ in calls]
    assert done == sorted(done) and len(set(done)) > 3


# ---------------------------------------------------------------- bounded memory


def test_long_paragraphs_are_segmented_in_bounded_chunks(tmp_path, monkeypatch, segmenter_lib):
    """A file with no blank line, or no line end at all, is never handed on whole; the chunks are stitched back."""
    monkeypatch.setattr(P, "CHUNK_CHARS", 2048)
    seen = []
    real = P.get_segmenter(P.DEFAULT_SEGMENTER)

    def spy(text):
        seen.append(len(text))
        return real(text)

    monkeypatch.setattr(P, "get_segmenter", lambda name, language: spy)
    sentences = [f"Sentence number {i} talks with Dr. Smith of the U.S. army at {i}.{i % 10} p.m. today."
                 for i in range(4000)]
    flowing = tmp_path / "flowing.txt"  # about 300 kB: hard-wrapped lines, no blank line
    flowing.write_text(textwrap.fill(" ".join(sentences), width=70) + "\n")
    one_line = tmp_path / "one_line.txt"  # the same with no line end at all
    one_line.write_text(" ".join(sentences))
    for src in (flowing, one_line):
        seen.clear()
        stats = prepare([src], tmp_path / "corpus.txt")
        assert documents_of(tmp_path / "corpus.txt") == [sentences]
        assert stats.documents == 1 and len(seen) > 50
        assert max(seen) <= 3 * 2048  # a chunk, a line piece and the carried sentence at most


def test_a_50_mb_file_without_blank_lines_keeps_memory_flat(tmp_path):
    src = tmp_path / "big.txt"
    line = " ".join(["The quick brown fox jumps over the lazy dog by the river."] * 3) + "\n"
    src.write_text(line * (50_000_000 // len(line)))
    script = ("import resource, sys\nfrom scbow.text.prepare import prepare\n"
              "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
              "stats = prepare([sys.argv[1]], sys.argv[2], segmenter='lines')\n"
              "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
              "print(stats.documents, stats.sentences, (after - before) * (1 if sys.platform == 'darwin' else 1024))\n")
    out = tmp_path / "corpus.txt"
    done = subprocess.run([sys.executable, "-c", script, str(src), str(out)], capture_output=True, text=True,
                          check=True, timeout=60)
    documents, sentences, grew = map(int, done.stdout.split())
    assert (documents, sentences) == (1, 50_000_000 // len(line))
    assert grew < 20_000_000, f"peak memory grew by {grew / 1e6:.1f} MB for a 50 MB input"
    assert out.stat().st_size == src.stat().st_size  # every line was a sentence, kept as it was


# ---------------------------------------------------------------- the command


def test_the_segmenter_libraries_are_imported_only_when_used():
    # the command line imports this module for its choices
    code = "import sys, scbow.text.prepare as P; print(sorted(m for m in P.SEGMENTERS.values() if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"


def test_cli_prepares_reports_in_one_line_and_warns_once_of_bad_json_lines(tmp_path, runner):
    (tmp_path / "a.txt").write_text("One.\nTwo.\n\nThree.\n")
    out = tmp_path / "corpus.txt.gz"
    result = runner.invoke(main, ["prepare", str(tmp_path / "a.txt"), "-o", str(out), "--segmenter", "lines",
                                      "--documents", "blank-line"])
    assert result.exit_code == 0, result.output
    assert documents_of(out) == [["One.", "Two."], ["Three."]]
    assert "2 documents, 3 sentences" in result.stderr and result.stdout == ""
    result = runner.invoke(main, ["prepare", str(tmp_path / "a.txt"), "-o", str(out), "-q", "--segmenter", "lines"])
    assert result.exit_code == 0 and result.stderr == ""
    (tmp_path / "blank.txt").write_text("\n \n\t\n")  # read, but nothing in it: named, not passed over
    result = runner.invoke(main, ["prepare", str(tmp_path / "a.txt"), str(tmp_path / "blank.txt"), "-o", str(out),
                                  "--segmenter", "lines"])
    assert result.exit_code == 0 and f"no sentence in {tmp_path / 'blank.txt'}" in result.stderr, result.output
    src = write_jsonl(tmp_path / "dump.jsonl", [{"text": "Fine."}, "{oops", {"text": None}, {"text": "Good."}])
    out = tmp_path / "corpus.txt"
    result = runner.invoke(main, ["prepare", str(src), "-o", str(out), "--segmenter", "lines"])
    assert result.exit_code == 0, result.output
    assert documents_of(out) == [["Fine."], ["Good."]]
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and f"{src}: line 2: not valid JSON" in warnings[0]  # its wording: PrepareStats'
    out.unlink()
    assert_clean_error(runner.invoke(main, ["prepare", str(src), "-o", str(out), "--segmenter", "lines",
                                                "--strict"]), "line 2: not valid JSON", exit_code=1)
    assert not out.exists()


@pytest.mark.parametrize("gap", [" ", "\t", " \t  ", "\u00a0", "\t\r"])
def test_a_line_of_only_spaces_or_tabs_is_a_blank_line(tmp_path, gap):
    # a line of whitespace separates documents and paragraphs as an empty one does
    src = tmp_path / "a.txt"
    src.write_text(f"First one ends here\n{gap}\nsecond starts here.\nThird.\n", encoding="utf-8")
    out = tmp_path / "corpus.txt"
    assert prepared([src], out, documents="blank-line")[0] == [["First one ends here"], ["second starts here.", "Third."]]
    if P.SEGMENTERS.get("nupunkt") and importlib.util.find_spec("nupunkt"):  # one document; the paragraph break ends a sentence
        assert prepared([src], out, segmenter="nupunkt")[0] == [["First one ends here", "second starts here.", "Third."]]


@pytest.mark.parametrize("segmenter", ["lines", "nupunkt"])
def test_a_line_longer_than_a_chunk_is_cut_only_at_whitespace(tmp_path, segmenter):
    if segmenter == "nupunkt" and not importlib.util.find_spec("nupunkt"):
        pytest.skip("nupunkt is not installed (pip install 'scbow-numba[prepare]')")
    words = ["alpha", "beta", "gamma", "delta", "epsilonic"]
    text = " ".join(words[i % 5] for i in range(60_000))  # one line of ~380K characters, no full stop
    (tmp_path / "a.txt").write_text(text + "\n")
    docs, _ = prepared([tmp_path / "a.txt"], tmp_path / "c.txt", segmenter=segmenter)
    assert [w for doc in docs for s in doc for w in s.split()] == text.split()  # every word whole, in order


def test_the_summary_and_warnings_prepare_prints(tmp_path):
    """PrepareStats.summary and .warnings: the lines 'prepare' prints."""
    from scbow.text.prepare import CHUNK_CHARS, PrepareStats

    (tmp_path / "giant.txt").write_text("a" * 300_000 + "\n")  # a run with no whitespace is cut, and counted
    assert prepare([tmp_path / "giant.txt"], tmp_path / "g.txt", segmenter="lines").words_cut > 0
    stats = PrepareStats(files=2, documents=3, sentences=41, words=1234, input_bytes=2_500_000, seconds=2.0,
                         invalid_utf8_lines=1, words_cut=2, skipped_records=1, bad_records=3,
                         bad_examples=["a.jsonl: line 2: not JSON", "a.jsonl: line 5: no 'text'"],
                         segmenter="nupunkt", output="out.txt", jsonl_field="body")
    assert stats.summary() == (
        "prepared 2 files, 2.5 MB in 2.0 s (1.2 MB/s, nupunkt): 3 documents, 41 sentences, 1,234 words, skipped "
        "1 JSON Lines record with no text and 3 unreadable JSON Lines lines; wrote out.txt")
    assert stats.warnings() == [
        "warning: 1 line of the input is not valid in the encoding; their bad bytes were written as U+FFFD (the "
        "replacement character), as asked",
        f"warning: 2 runs of text with no whitespace for over {CHUNK_CHARS:,} characters were cut where a chunk ended "
        "(not words: binary data or text without spaces?)",
        "warning: skipped 3 JSON Lines lines that hold no record with text in 'body' (a.jsonl: line 2: not JSON; "
        "a.jsonl: line 5: no 'text', ...); --strict stops at the first instead"]
    assert PrepareStats(files=1, sentences=1, words=2).warnings() == []
    small = PrepareStats(files=2, documents=1, sentences=1, words=7, input_bytes=38, seconds=0.5,
                         files_without_text=["b.txt"], segmenter="lines", output="o.txt")
    assert small.summary() == ("prepared 2 files, 38 bytes in 0.5 s (76 bytes/s, lines): 1 document, "
                                               "1 sentence, 7 words; no sentence in b.txt; wrote o.txt")


# ---------------------------------------------------------------- Japanese and Chinese


@pytest.mark.parametrize("line, sentences", [
    ("客はもうとうに散ってしまった。時計が零時半を打った！本当？！はい",
     ["客はもうとうに散ってしまった。", "時計が零時半を打った！", "本当？！", "はい"]),
    ("「行くの？」と聞いた。「うん。そうだ。」", ["「行くの？」と聞いた。", "「うん。そうだ。」"]),
    ("『それは「嘘だ。」』と彼は言った。では。", ["『それは「嘘だ。」』と彼は言った。", "では。"]),
    ("他说：“你好。我很好。”然后走了。明天见！", ["他说：“你好。我很好。”然后走了。", "明天见！"]),
    ("彼は「あれは。と言った。そうか。", ["彼は「あれは。", "と言った。", "そうか。"]),  # a quote left open
])
def test_cjk_sentences(line, sentences):
    assert P.cjk_sentences(line) == sentences


def test_a_line_of_japanese_is_a_paragraph_with_any_segmenter(tmp_path, segmenter_lib):
    src = tmp_path / "a.txt"
    src.write_text("第一章\n雨が降った。風も吹いた。\n「寒いね。」と母は言った。\nIt was cold. We stayed in.\n",
                   encoding="utf-8")
    expected = ["第一章", "雨が降った。", "風も吹いた。", "「寒いね。」と母は言った。", "It was cold.", "We stayed in."]
    for segmenter in ("lines", P.DEFAULT_SEGMENTER):
        (doc,), _ = prepared([src], tmp_path / f"{segmenter}.txt", segmenter=segmenter)
        assert doc == (expected if segmenter != "lines" else expected[:4] + ["It was cold. We stayed in."])


def test_the_aozora_file_as_it_is(tmp_path):
    """Records of Aozora Bunko (title, author, source, text: a paragraph a line): one document a
    work, its text only, a sentence a line; a long work goes through prepare's chunks whole."""
    from conftest import DATA_DIR, missing_data

    aozora = DATA_DIR / "corpus" / "aozora-ja-40M.jsonl.xz"
    if not aozora.is_file():
        missing_data(f"Aozora corpus {aozora}")
    with lzma.open(aozora, "rt", encoding="utf-8") as fh:
        records = [next(fh) for _ in range(12)]
    (tmp_path / "works.jsonl").write_text("".join(records), encoding="utf-8")
    docs, stats = prepared([tmp_path / "works.jsonl"], tmp_path / "corpus.txt")
    works = [json.loads(r) for r in records]
    assert len(docs) == stats.documents == 12 and P.CHUNK_CHARS < max(len(w["text"]) for w in works)
    sentences = [s for doc in docs for s in doc]
    assert stats.sentences == len(sentences) > sum(w["text"].count("\n") for w in works)
    assert not any(w["title"] in s and w["author"] in s for w in works for s in sentences[:3])
    assert docs[0][:3] == ["Ｐ・Ｖ・アンネンコフに捧げる", "客はもうとうに散ってしまった。", "時計が零時半を打った。"]
    ends = sum(s.endswith(tuple("。！？」』")) for s in sentences)
    assert ends > 0.9 * len(sentences) and max(map(len, sentences)) < 5000
    assert "".join("".join(sentences).split()) == "".join("".join(w["text"].split()) for w in works)  # all kept
