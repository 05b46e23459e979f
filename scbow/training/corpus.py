"""Raw text -> int32 token ids, int64 sentence offsets and document boundaries.

Input: one sentence per line, an empty line (or a file's end) between documents; ``.gz``,
``.bz2``, ``.xz`` read transparently; a directory stands for its text files. A streaming
tokenize pass (the tokenizer runs once per distinct whitespace chunk: ``_ChunkIds``) writes
provisional ids to a scratch file, a compiled pass maps them to the vocabulary; peak memory is
about the output arrays. The result is cached on disk (``scbow.training.cache``) and memory-mapped.

Rules: out-of-vocabulary words are dropped from their sentence; a sentence left with no known word
is dropped (its neighbours become neighbours); a document left with no sentence disappears.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import CorpusError
from ..files import new_temporary, remove_leftovers
from ..outputs import kind_of, refuse_inside_ours
from ..progress import Progress, human
from ..reading import read_json
from ..text.reader import DEFAULT_ENCODING, check_text, expand, open_text
from ..text.tokenize import TOKENIZER_VERSION, tokenize_lines
from ..text.vocab import Vocab
from .cache import CACHE_FORMAT, cache_key, default_cache_dir, new_entry, remove_entry

_READ_HINT = 1 << 23  # characters per block handed to the tokenizer
_MAX_CHUNKS = 1 << 20  # distinct chunks remembered (~100 MB) before the memo starts afresh
_SENTENCE_END = 0
_DOCUMENT_END = 1


@dataclass
class Corpus:
    """An encoded corpus.

    tokens: int32 array, shape (n_tokens,), vocabulary ids of the kept words.
    offsets: int64 array, shape (n_sentences + 1,), sentence s is tokens[offsets[s]:offsets[s+1]].
    sent_doc: int32 array, shape (n_sentences,), document index of each sentence.
    doc_offsets: int64 array, shape (n_documents + 1,), document d holds sentences
        doc_offsets[d]:doc_offsets[d+1].
    """

    vocab: Vocab
    tokens: np.ndarray
    offsets: np.ndarray
    sent_doc: np.ndarray
    doc_offsets: np.ndarray
    stats: dict = field(default_factory=dict)
    cache_path: str | None = None
    from_cache: bool = False  # read from the cache (not encoded by this call)

    @property
    def n_sentences(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_documents(self) -> int:
        return len(self.doc_offsets) - 1

    @property
    def raw_tokens(self) -> int:
        """Tokens of the text, unknown words included (a corpus made without its stats: its words' counts)."""
        return self.stats.get("raw_tokens") or int(np.asarray(self.vocab.counts).sum())

    @functools.cached_property
    def stream_sha256(self) -> str:
        """sha256 of the tokens and the sentence and document boundaries (lines reordered: another
        corpus of the same sizes). Computed once, about 0.3 s a 100M tokens."""
        digest = hashlib.sha256()
        for array, dtype in ((self.tokens, "<i4"), (self.offsets, "<i8"), (self.doc_offsets, "<i8")):
            digest.update(memoryview(np.ascontiguousarray(array, dtype=dtype)).cast("B"))
        return digest.hexdigest()


def expand_inputs(paths) -> list[Path]:
    """Resolve files and directories to a sorted list of readable text files (``scbow.text.reader.expand``)."""
    paths = list(paths)  # read twice below
    if not paths:
        raise CorpusError("no corpus file given")
    for p in map(Path, paths):
        if p.is_dir() and ((p / "vectors.npy").is_file() or (p / "state.json").is_file()):
            what = "a training checkpoint" if (p / "state.json").is_file() else "a model directory"
            raise CorpusError(f"{p}: is {what}, not a corpus (the output goes after -o: "
                              f"'scbow-numba train CORPUS -o {p}')")
    return expand(paths)


class _TypeIds(dict):
    """word -> provisional id, ids handed out in order of first occurrence."""

    def __init__(self):
        super().__init__({"\n": _SENTENCE_END})

    def __missing__(self, word):
        value = self[word] = len(self) + 1  # ids 0 and 1 are the two markers
        return value


class _ChunkIds:
    """Whitespace-separated chunk -> chunk id, with the provisional word ids of each chunk.

    Tokens never contain whitespace and lowercasing never looks across it (the final-sigma rule
    stops there), so a block's tokens are those of its ``str.split()`` chunks in turn. Text repeats a
    few hundred thousand distinct chunks: a compiled hash table over the code points
    (``kernels.encode.find_chunks``) replaces the regex scan and the dict lookup per token, and each
    new chunk is tokenized once. Chunk id 0 is a line end (word ids ``[_SENTENCE_END]``).

    ``types``: word -> provisional id (new words added in order of first occurrence). ``capacity``:
    chunks the table and key store hold at first (both grow); default: sized from the first block.
    """

    def __init__(self, types: _TypeIds, capacity: int | None = None):
        self._types = types
        self._capacity = capacity
        self.reset()

    def __len__(self) -> int:
        return self._n_keys - 1  # distinct chunks remembered

    def reset(self) -> None:
        """Forget all chunks; the word ids in ``types`` stay."""
        self._n_keys = 1  # chunk ids handed out: id 0 is the line end, which has no key
        self._n_key_chars = 0
        self._table = None  # allocated by the next encode, sized from its block
        # the hash table's keys: chunk id -> its code points keys[start:start + len]
        self._key_start = self._key_len = self._keys = None
        self._start = np.zeros(1, dtype=np.int64)  # chunk id -> its first index into _words
        self._length = np.ones(1, dtype=np.int64)  # chunk id -> its number of word ids
        self._words = np.full(1, _SENTENCE_END, dtype=np.int32)

    def _allocate(self, n_text: int) -> None:
        # about one new chunk per 32 characters of a first block of book text, 8 characters a key
        capacity = self._capacity or max(n_text // 32, 1024)
        self._table = np.zeros(1 << (2 * capacity + 1).bit_length(), dtype=np.int32)
        self._key_start = np.zeros(capacity + 1, dtype=np.int64)
        self._key_len = np.zeros(capacity + 1, dtype=np.int64)
        self._keys = np.zeros(8 * capacity, dtype=np.uint32)

    def _grow(self) -> None:
        """Make room for the next new chunk, which ``find_chunks`` found does not fit."""
        from ..kernels.encode import rehash_chunks

        if self._n_keys >= len(self._table) // 2:  # the table's load factor would pass 1/2
            self._table = np.zeros(2 * len(self._table), dtype=np.int32)
            rehash_chunks(self._table, self._key_start, self._key_len, self._keys, self._n_keys)
        elif self._n_keys >= len(self._key_start):
            self._key_start = _doubled(self._key_start)
            self._key_len = _doubled(self._key_len)
        else:  # its code points do not fit in the key store (doubled again if need be)
            self._keys = _doubled(self._keys)

    def _add(self, new_text: np.ndarray, n_chunks: int) -> None:
        """Tokenize new chunks, given as code points, each followed by ``\\n``."""
        # the "\n" after each chunk comes back as _SENTENCE_END, which cuts the ids into chunks
        words = tokenize_lines(new_text.tobytes().decode("utf-32-le", "surrogatepass"))
        ids = np.fromiter(map(self._types.__getitem__, words), dtype=np.int32, count=len(words))
        ends = np.flatnonzero(ids == _SENTENCE_END)  # words have ids >= 2
        assert len(ends) == n_chunks
        starts = np.zeros_like(ends)
        starts[1:] = ends[:-1] + 1
        self._start = np.concatenate((self._start, starts + len(self._words)))
        self._length = np.concatenate((self._length, ends - starts))
        self._words = np.concatenate((self._words, ids))

    def encode(self, block: str) -> np.ndarray:
        """int32 provisional ids of a block of whole lines, ``_SENTENCE_END`` per line end: those of
        ``tokenize_lines(block)`` looked up in ``types``."""
        from ..kernels.encode import expand_chunks, find_chunks  # numba: only when encoding

        if len(self) >= _MAX_CHUNKS:
            self.reset()
        # The block's code points, one uint32 each: twice as fast as block.encode("utf-32-le"); the
        # slice drops the one NUL of np.array("").
        text = np.array(block).reshape(1).view(np.uint32)[: len(block)]
        if self._table is None:
            self._allocate(len(text))
        chunk_ids = np.empty(len(text), dtype=np.int32)  # at most one chunk per character
        # new chunks, each with a "\n" after it: the character after a chunk in the block
        # is whitespace, except after the last one, hence the + 1
        new_text = np.empty(len(text) + 1, dtype=np.uint32)
        first_new = self._n_keys
        pos = n_out = n_new = 0
        while True:
            pos, self._n_keys, self._n_key_chars, n_out, n_new = find_chunks(
                text, pos, self._table, self._key_start, self._key_len, self._keys,
                self._n_keys, self._n_key_chars, chunk_ids, n_out, new_text, n_new,
            )
            if pos == len(text):
                break
            self._grow()
        if n_new:
            self._add(new_text[:n_new], self._n_keys - first_new)
        return expand_chunks(chunk_ids[:n_out], self._start, self._length, self._words)


def _doubled(a: np.ndarray) -> np.ndarray:
    out = np.zeros(2 * len(a), dtype=a.dtype)
    out[: len(a)] = a
    return out


def _read_file(path: Path, chunks: _ChunkIds, out, stats: dict, progress, encoding: str) -> None:
    """Tokenize one file into provisional ids, appended to the binary stream ``out``."""
    last = _DOCUMENT_END  # a blank line at the start of a file is no sentence
    bad_lines = 0
    n_tokens = 0
    try:
        with open_text(path, encoding=encoding) as fh:
            while True:
                # the lines fh.readlines(_READ_HINT) would give (up to the first line past
                # the hint), without a list of them
                block = fh.read(_READ_HINT) + fh.readline()
                if not block:
                    break
                bad_lines += check_text(path, block)
                if not block.endswith("\n"):
                    block += "\n"
                ids = chunks.encode(block)
                if len(ids):
                    prev = np.empty_like(ids)
                    prev[0] = last
                    prev[1:] = ids[:-1]
                    ids[(ids == _SENTENCE_END) & (prev <= _DOCUMENT_END)] = _DOCUMENT_END
                    last = int(ids[-1])
                    ids.tofile(out)
                    n_tokens += len(ids)
                    progress(len(ids), fh.position())
    except OSError as exc:  # the decompression failures are CorpusError already (scbow.text.reader)
        raise CorpusError(f"{path}: cannot read: {exc.strerror or exc}") from None
    tail = [_SENTENCE_END] if last > _DOCUMENT_END else []
    np.array(tail + [_DOCUMENT_END], dtype=np.int32).tofile(out)
    stats["invalid_utf8_lines"] = stats.get("invalid_utf8_lines", 0) + bad_lines


def load_corpus(paths, min_count: int = 5, max_vocab: int = 0, cache_dir: str | os.PathLike | None = None,
                use_cache: bool = True, progress=None, encoding: str = DEFAULT_ENCODING) -> Corpus:
    """Encode ``paths`` (or load their cached encoding) into a :class:`Corpus`.

    ``progress(tokens, bytes_read, bytes_total)`` is called as the files are read (on-disk bytes: for a
    percent and an ETA); None for silence. With ``use_cache=False`` the encoding lives in a temporary
    directory. ``corpus.from_cache`` says whether a cached encoding was used.
    """
    files = expand_inputs(paths)
    progress = progress or (lambda *report: None)
    if use_cache:
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        target = root / cache_key(files, min_count, max_vocab, encoding=encoding)
        if (target / "meta.json").is_file():
            try:
                corpus = _load_cached(target)
                corpus.from_cache = True
                # the files as this run names them (the key is of their resolved paths, which other names share)
                corpus.stats = {**corpus.stats, "files": [os.path.abspath(f) for f in files]}
                return corpus
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                remove_entry(target)  # stale or broken: rebuild (a directory not ours is left alone)
        what = kind_of(root)
        if what is not None:
            raise CorpusError(f"--cache-dir {root}: is {what}; give the corpus cache a folder of its own")
        refuse_inside_ours(root, "--cache-dir", CorpusError)
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CorpusError(f"cannot create corpus cache directory {root}: {exc}") from None
        work = new_entry(target)  # cache --clear leaves it alone while this process runs
    else:
        target = None
        work = _uncached_dir()
    return _encode_into(files, min_count, max_vocab, work, target, progress, encoding)


def _uncached_dir() -> Path:
    """A new private temporary of ``$TMPDIR/scbow-corpus-uncached`` for an uncached encoding, never renamed
    into place; it goes when its process exits, and those of dead processes are removed first."""
    scratch = Path(tempfile.gettempdir()) / "scbow-corpus-uncached"
    remove_leftovers(scratch)
    try:
        work = new_temporary(scratch, directory=True)
        os.chmod(work, 0o700)  # the words of the corpus, in a folder others may list
    except OSError as exc:
        raise CorpusError(f"cannot create a temporary directory in {scratch.parent}: {exc.strerror or exc}") from None
    return work


def _encode_into(files, min_count, max_vocab, work: Path, target: Path | None, progress, encoding) -> Corpus:
    """Encode ``files`` in ``work``, then move it to ``target`` (None: keep it uncached)."""
    try:
        _build(files, min_count, max_vocab, work, progress, encoding)
        if target is None:
            return _load_cached(work, keep_dir=work)
        try:
            os.replace(work, target)
        except OSError:
            # another process cached it first: use theirs; something not ours is there: use ours uncached
            try:
                corpus = _load_cached(target)
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                return _load_cached(work, keep_dir=work)
            shutil.rmtree(work, ignore_errors=True)
            return corpus
        return _load_cached(target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def read_corpus(paths, min_count: int = 5, max_vocab: int = 0, cache_dir=None, use_cache: bool = True,
                quiet: bool = False, encoding: str = DEFAULT_ENCODING) -> Corpus:
    """:func:`load_corpus` with a progress line on stderr (bytes read, tokens, ETA) unless ``quiet``."""
    reading = Progress(0, unit="B", quiet=quiet)

    def report(tokens, done, size):
        reading.total = size
        reading.update(done, prefix="reading corpus: ", suffix=f"{human(tokens)} tokens")

    try:
        return load_corpus(paths, min_count, max_vocab, cache_dir=cache_dir, use_cache=use_cache, progress=report,
                           encoding=encoding)
    finally:
        reading.close()


def _build(files, min_count, max_vocab, work: Path, progress, encoding: str) -> None:
    """Encode ``files`` into the arrays, ``vocab.txt`` and ``meta.json`` of the entry ``work``."""
    from ..kernels.encode import compact_corpus  # numba: import only when encoding

    types = _TypeIds()
    chunks = _ChunkIds(types)
    stats: dict = {"files": [os.path.abspath(f) for f in files]}  # absolute: meaningful from any directory
    if encoding != DEFAULT_ENCODING:  # said only when not the default, so a UTF-8 corpus's info is as it was
        stats["encoding"] = encoding
    raw_path = work / "raw.i32"
    sizes = [f.stat().st_size for f in files]
    with open(raw_path, "wb") as out:
        done = 0
        before = 0  # bytes of the files read before this one

        def tick(n, position):
            nonlocal done
            done += n
            progress(done, before + position, sum(sizes))

        for f, size in zip(files, sizes):
            _read_file(f, chunks, out, stats, tick, encoding)
            before += size
    raw = np.memmap(raw_path, dtype=np.int32, mode="r") if raw_path.stat().st_size else np.zeros(0, np.int32)
    counts = np.zeros(len(types) + 1, dtype=np.int64)
    block = 1 << 24
    for lo in range(0, len(raw), block):
        counts += np.bincount(raw[lo : lo + block], minlength=len(counts))
    words = np.array(list(types.keys()), dtype=object)  # index = provisional id - 1 for words
    word_counts = counts[2:]
    word_strings = words[1:]
    n_running = int(word_counts.sum())
    if n_running == 0:
        raise CorpusError("the corpus has no words (empty files or only blank lines)")
    keep = np.flatnonzero(word_counts >= min_count)
    # most frequent first; ties in order of first occurrence (argsort is stable)
    keep = keep[np.argsort(-word_counts[keep], kind="stable")]
    if max_vocab:
        keep = keep[:max_vocab]
    if len(keep) == 0:
        raise CorpusError(f"the vocabulary is empty: no word occurs at least {min_count} times "
                          f"({len(word_strings)} distinct words); lower --min-count")
    remap = np.full(len(counts), -1, dtype=np.int32)
    remap[keep + 2] = np.arange(len(keep), dtype=np.int32)
    n_known = int(word_counts[keep].sum())
    n_lines = int(counts[_SENTENCE_END])
    tokens = np.lib.format.open_memmap(work / "tokens.npy", mode="w+", dtype=np.int32, shape=(n_known,))
    offsets = np.zeros(n_lines + 1, dtype=np.int64)
    sent_doc = np.zeros(max(n_lines, 1), dtype=np.int32)
    n_tok, n_sent, n_doc = compact_corpus(raw, remap, tokens, offsets, sent_doc)
    tokens.flush()
    del tokens, raw  # the memory maps closed before the scratch file goes
    raw_path.unlink()
    np.save(work / "offsets.npy", offsets[: n_sent + 1])
    np.save(work / "sent_doc.npy", sent_doc[:n_sent])
    doc_offsets = np.zeros(n_doc + 1, dtype=np.int64)
    doc_offsets[1:] = np.cumsum(np.bincount(sent_doc[:n_sent], minlength=n_doc))
    np.save(work / "doc_offsets.npy", doc_offsets)
    Vocab([str(w) for w in word_strings[keep]], word_counts[keep]).save(work / "vocab.txt")
    stats.update(raw_tokens=n_running, distinct_words=len(word_strings), tokens=int(n_tok), sentences=int(n_sent),
                 documents=int(n_doc), vocab_size=len(keep), oov_rate=round(1.0 - n_known / n_running, 6),
                 min_count=min_count, max_vocab=max_vocab, tokenizer_version=TOKENIZER_VERSION, cache_format=CACHE_FORMAT)
    (work / "meta.json").write_text(json.dumps(stats, indent=1))


def _check_arrays(a: dict, n_words: int) -> None:
    """ValueError unless the cached arrays index each other in bounds and ``doc_offsets`` is exactly what
    ``sent_doc`` implies: the kernels read them unchecked, so damage is refused (and rebuilt) here."""
    tokens, offsets, sent_doc, doc_offsets = a["tokens"], a["offsets"], a["sent_doc"], a["doc_offsets"]
    n_sent, n_doc = len(offsets) - 1, len(doc_offsets) - 1
    kinds = (tokens.dtype == np.int32 and offsets.dtype == np.int64 and sent_doc.dtype == np.int32
             and doc_offsets.dtype == np.int64 and all(x.ndim == 1 for x in a.values()))
    if not kinds or n_sent < 0 or n_doc < 0 or len(sent_doc) != n_sent:
        raise ValueError("cache arrays have the wrong types or lengths")
    if len(tokens) and (int(tokens.min()) < 0 or int(tokens.max()) >= n_words):
        raise ValueError("cache tokens outside the vocabulary")
    if offsets[0] != 0 or offsets[-1] != len(tokens) or (n_sent > 0 and np.diff(offsets).min() < 0):
        raise ValueError("cache sentence offsets out of order")
    # documents are numbered 0, 1, 2, ... in sentence order, and doc_offsets is where each starts
    steps = np.diff(sent_doc)
    if n_sent > 0 and (sent_doc[0] != 0 or (n_sent > 1 and (steps.min() < 0 or steps.max() > 1))):
        raise ValueError("cache sentence documents out of order")
    starts = np.flatnonzero(steps) + 1
    if n_doc != (len(starts) + 1 if n_sent > 0 else 0) or doc_offsets[0] != 0 or doc_offsets[-1] != n_sent \
            or not np.array_equal(doc_offsets[1:-1], starts):
        raise ValueError("cache document offsets do not match the sentences' documents")


def _load_cached(path: Path, keep_dir: Path | None = None) -> Corpus:
    meta = read_json(path / "meta.json", what="damaged corpus cache")  # a ModelError: a ValueError
    if not isinstance(meta, dict) or meta.get("cache_format") != CACHE_FORMAT:
        raise ValueError("old cache format")
    counts = ("raw_tokens", "distinct_words", "tokens", "sentences", "documents", "vocab_size", "min_count",
              "max_vocab", "invalid_utf8_lines")
    if (any(not isinstance(meta.get(k, 0), int) or isinstance(meta.get(k, 0), bool) or meta.get(k, 0) < 0
            for k in counts)
            or not isinstance(meta.get("oov_rate", 0.0), (int, float)) or isinstance(meta.get("oov_rate"), bool)
            or not isinstance(meta.get("files", []), list) or not all(isinstance(f, str) for f in meta.get("files", []))):
        raise ValueError("cache metadata of the wrong types")
    arrays = {name: np.load(path / f"{name}.npy", mmap_mode="r", allow_pickle=False)
              for name in ("tokens", "offsets", "sent_doc", "doc_offsets")}
    vocab = Vocab.load(path / "vocab.txt")
    if len(arrays["tokens"]) != meta["tokens"] or len(arrays["offsets"]) != meta["sentences"] + 1:
        raise ValueError("cache arrays do not match their metadata")
    _check_arrays(arrays, len(vocab))
    corpus = Corpus(vocab=vocab, stats=meta, cache_path=str(path), **arrays)
    if keep_dir is not None:  # an uncached encoding's temporary directory goes with the process
        atexit.register(shutil.rmtree, keep_dir, True)
    return corpus
