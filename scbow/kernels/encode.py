"""Compiled pass of the corpus encoder (see ``scbow.corpus``)."""

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
