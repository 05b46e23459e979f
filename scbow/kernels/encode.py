"""Compiled passes of the corpus encoder (see ``scbow.training.corpus``): the chunk memo of the
tokenize pass, and the pass that maps provisional ids to the final vocabulary."""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def compact_corpus(raw, remap, tokens, offsets, sent_doc):
    """Map provisional ids to vocabulary ids and cut sentences and documents.

    Parameters
    ----------
    raw : array of int32, shape (n_raw,)
        Provisional ids: 0 ends a sentence, 1 ends a document, >= 2 are words.
    remap : array of int32, shape (n_types + 2,)
        Vocabulary id of each provisional id, -1 for a dropped word.
    tokens : array of int32, shape (>= n_known,)
        Output: vocabulary ids of the kept words.
    offsets : array of int64, shape (>= n_sentences + 1,)
        Output: sentence boundaries into ``tokens``; ``offsets[0]`` must be 0.
    sent_doc : array of int32, shape (>= n_sentences,)
        Output: document index of each sentence.

    Returns
    -------
    (n_tokens, n_sentences, n_documents) : tuple of int
        Sentences left empty are dropped, and so are documents left empty.
    """
    nt = 0
    ns = 0
    doc = 0
    start = 0
    doc_has_sentence = False
    for i in range(raw.shape[0]):
        x = raw[i]
        if x >= 2:
            w = remap[x]
            if w >= 0:
                tokens[nt] = w
                nt += 1
        elif x == 0:
            if nt > start:
                sent_doc[ns] = doc
                ns += 1
                offsets[ns] = nt
                start = nt
                doc_has_sentence = True
        elif doc_has_sentence:
            doc += 1
            doc_has_sentence = False
    return nt, ns, doc


# ---------------------------------------------------------------------------------------
# The chunk memo of the tokenize pass (driven by ``scbow.training.corpus._ChunkIds``)

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_NEWLINE = 10


@njit(cache=True, nogil=True)
def is_space(c):
    """Whether code point ``c`` (uint32 or int) is whitespace for ``str.isspace()`` and ``str.split()``: the
    29 of CPython's ``Py_UNICODE_ISSPACE``, exactly those the tokenizer's ``\\s`` matches (tests check all)."""
    if c > 32 and c < 133:  # the common case: printable ASCII
        return False
    return (
        (c >= 9 and c <= 13)
        or (c >= 28 and c <= 32)
        or c == 133
        or c == 160
        or c == 5760
        or (c >= 8192 and c <= 8202)
        or c == 8232
        or c == 8233
        or c == 8239
        or c == 8287
        or c == 12288
    )


@njit(cache=True, nogil=True)
def _chunk_hash(text, lo, hi):
    """uint64 FNV-1a over the code points ``text[lo:hi]`` (uint32 array); :func:`find_chunks` computes the
    same hash inline, and the two must agree, or a chunk would not be found again after a rehash."""
    h = _FNV_OFFSET
    for i in range(lo, hi):
        h = (h ^ np.uint64(text[i])) * _FNV_PRIME
    return h


@njit(cache=True, nogil=True)
def find_chunks(
    text, pos, table, key_start, key_len, keys, n_keys, n_key_chars, out, n_out, new_text, n_new
):
    """Chunk ids of the whitespace-separated chunks of ``text[pos:]``, id 0 for each ``\\n``.

    An open-addressing hash table (linear probing) maps each chunk to its id; a chunk
    not seen before gets the next id, and its code points are stored as its key and
    also appended to ``new_text``, each new chunk followed by a ``\\n``. Whitespace is
    what ``str.split()`` cuts at (:func:`is_space`); ``\\n`` is also a chunk of its own.

    The scan stops before a new chunk that would fill the table more than half, or not
    fit in ``key_start``/``key_len`` or ``keys``; the caller grows what is full (and
    calls :func:`rehash_chunks` for a new table) and calls again from the returned
    position. ``out`` and ``new_text`` never overflow at the sizes given below.

    Parameters
    ----------
    text : array of uint32, shape (n_text,)
        Code points of the block.
    pos : int
        Where to start in ``text``: 0, or a position returned by an earlier call.
    table : array of int32, shape (n_slots,)
        ``n_slots`` a power of two; 0 for an empty slot, else chunk id + 1.
    key_start : array of int64, shape (>= n_keys,)
        Where the key of each chunk id starts in ``keys``. Id 0 is the line end and has
        no key (its length is 0, so it never matches).
    key_len : array of int64, shape (>= n_keys,)
        Length of the key of each chunk id, in code points.
    keys : array of uint32, shape (>= n_key_chars,)
        Keys of all chunks, one after the other.
    n_keys, n_key_chars : int
        Chunk ids handed out so far (the line end included), code points used in ``keys``.
    out : array of int32, shape (>= n_text,)
        Output: chunk ids in text order, from ``out[n_out]`` on.
    n_out : int
        Chunk ids already in ``out``.
    new_text : array of uint32, shape (>= n_text + 1,)
        Output: the new chunks in order of first occurrence, each followed by ``\\n``,
        from ``new_text[n_new]`` on.
    n_new : int
        Code points already in ``new_text``.

    Returns
    -------
    (pos, n_keys, n_key_chars, n_out, n_new) : tuple of int
        The updated counts; ``pos == n_text`` when the whole text is done, else the start
        of the chunk that did not fit.
    """
    mask = table.shape[0] - 1
    limit = table.shape[0] // 2  # load factor at most 1/2: probes stay short
    n = text.shape[0]
    i = pos
    while i < n:
        c = text[i]
        if c == _NEWLINE:
            out[n_out] = 0
            n_out += 1
            i += 1
            continue
        if is_space(c):
            i += 1
            continue
        # find the chunk's end and hash it in one pass: the same hash as _chunk_hash
        h = (_FNV_OFFSET ^ np.uint64(c)) * _FNV_PRIME
        j = i + 1
        while j < n:
            d = text[j]
            if is_space(d):
                break
            h = (h ^ np.uint64(d)) * _FNV_PRIME
            j += 1
        m = j - i
        slot = np.intp(h & np.uint64(mask))
        while True:
            k = np.intp(table[slot]) - 1
            if k < 0:  # an empty slot: the chunk is new
                if n_keys >= limit or n_keys >= key_start.shape[0] or n_key_chars + m > keys.shape[0]:
                    return i, n_keys, n_key_chars, n_out, n_new
                k = n_keys
                table[slot] = k + 1
                key_start[k] = n_key_chars
                key_len[k] = m
                # loops, not slice assignments: those took ~3 s more to compile
                for t in range(m):
                    keys[n_key_chars + t] = text[i + t]
                    new_text[n_new + t] = text[i + t]
                n_key_chars += m
                n_keys += 1
                new_text[n_new + m] = _NEWLINE
                n_new += m + 1
                break
            if key_len[k] == m:
                s = key_start[k]
                same = True
                for t in range(m):
                    if keys[s + t] != text[i + t]:
                        same = False
                        break
                if same:
                    break
            slot = (slot + 1) & mask
        out[n_out] = k
        n_out += 1
        i = j
    return i, n_keys, n_key_chars, n_out, n_new


@njit(cache=True, nogil=True)
def rehash_chunks(table, key_start, key_len, keys, n_keys):
    """Fill an all-zero ``table`` with chunk ids 1 .. n_keys-1 (see :func:`find_chunks`).

    Parameters
    ----------
    table : array of int32, shape (n_slots,)
        ``n_slots`` a power of two, more than twice ``n_keys``; all zero on entry.
    key_start, key_len : arrays of int64, shape (>= n_keys,)
        Start and length of the key of each chunk id in ``keys``.
    keys : array of uint32, shape (>= key_start[n_keys-1] + key_len[n_keys-1],)
        Keys of all chunks.
    n_keys : int
        Chunk ids handed out, the line end (id 0, not in the table) included.
    """
    mask = table.shape[0] - 1
    for k in range(1, n_keys):
        s = key_start[k]
        slot = np.intp(_chunk_hash(keys, s, s + key_len[k]) & np.uint64(mask))
        while table[slot] != 0:
            slot = (slot + 1) & mask
        table[slot] = k + 1


@njit(cache=True, nogil=True)
def expand_chunks(chunk_ids, start, length, words):
    """The word ids of a sequence of chunks, one after the other.

    Parameters
    ----------
    chunk_ids : array of int32, shape (n_chunks,)
        Chunk ids as :func:`find_chunks` gives them.
    start : array of int64, shape (n_keys,)
        Where the word ids of each chunk id start in ``words``.
    length : array of int64, shape (n_keys,)
        Number of word ids of each chunk id.
    words : array of int32, shape (n_words,)
        Word ids of all chunks.

    Returns
    -------
    array of int32, shape (sum of length[chunk_ids],)
    """
    n = 0
    for i in range(chunk_ids.shape[0]):
        n += length[chunk_ids[i]]
    result = np.empty(n, dtype=np.int32)
    n = 0
    for i in range(chunk_ids.shape[0]):
        c = chunk_ids[i]
        s = start[c]
        for t in range(length[c]):
            result[n + t] = words[s + t]
        n += length[c]
    return result
