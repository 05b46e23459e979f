"""The default rule of word neighbours, and the nearest words of ``neighbors WORD...``; without numpy
(the CLI's --help reads it).

``NEIGHBOUR_MIN_COUNT``: the words ``scbow-numba neighbors`` may return by default are those seen at
least this many times in the training corpus (``model.wv.most_similar(word, min_count=NEIGHBOUR_MIN_COUNT)``;
its own default ranks every word, as gensim does). A row
seen a handful of times is mostly its random start and lands near anything, so by plain
cosine such words crowd the nearest words of everyday ones (house -> mezzanine, padoie,
rinehart; god -> dondindac, scapegoats). Chosen on dev halves of WordSim-353 and SimLex-999
(the rank of a highly rated partner among a word's neighbours; the smallest count as good
as the best within the noise): benchmarks/results/neighbours.md. 0 (or 1): the plain
cosine ranking.
"""

from ..errors import ModelError

NEIGHBOUR_MIN_COUNT = 100


def vocabulary_word(model, word: str) -> str:
    """``word`` as the model spells it: as given, else lowercased (our tokens are lowercase).
    A word the model's tokenizer cuts into several tokens (``東京``: ``東 京``) is no word of it:
    the error names the tokens, which may be asked for together."""
    i = model.wv.get_index(word, -1)
    if i < 0:
        tokens = model.tokenize(word)
        if len(tokens) > 1:
            raise ModelError(f"{word!r} is {len(tokens)} tokens to this model's tokenizer, not one word: "
                             f"{' '.join(tokens)} (neighbors {' '.join(tokens)} gives the words nearest to them together)")
        raise ModelError(f"{word!r} is not in the vocabulary of {len(model):,} words")
    return model.wv.index_to_key[i]


def nearest_words(model, words, negative=(), topn: int = 10, min_count: int = NEIGHBOUR_MIN_COUNT) -> list:
    """``(word, cosine)`` of ``neighbors WORD...``: ``model.wv.most_similar`` of ``words`` minus ``negative``,
    each looked up as :func:`vocabulary_word`; ModelError, one line, for an unknown word and for a
    query with no answer (the zero vector, every word of the model, no word seen ``min_count`` times)."""
    positive = [vocabulary_word(model, w) for w in words]
    minus = [vocabulary_word(model, w) for w in negative]
    try:
        found = model.wv.most_similar(positive, topn=topn, negative=minus, min_count=min_count)
    except ValueError:  # the words cancel out: no direction left to compare with
        query = " + ".join(positive) + "".join(f" - {w}" for w in minus)
        raise ModelError(f"the query {query} is the zero vector (its words cancel out, or their "
                         "vectors are zero); it has no nearest words") from None
    if not found and len(model) <= len(set(positive + minus)):  # the query's own words are never printed
        raise ModelError(f"no other word: the query holds every word of the model "
                         f"({len(model):,}); it has no nearest words")
    if not found and min_count > 1:
        most = int(model.vocab.counts.max(initial=0))
        raise ModelError(f"no other word is seen at least {min_count:,} times (the most frequent, "
                         f"{most:,} times); lower --min-count, or 0 for every word")
    return found
