"""The default rule of word neighbours, and the nearest words of ``neighbors WORD...``; without numpy
(the CLI's --help reads it).

``NEIGHBOUR_MIN_COUNT``: ``neighbors`` returns only words seen at least this often. A row seen a
handful of times is mostly its random start and lands near anything (house -> mezzanine, padoie).
The smallest count as good as the best on dev halves of WordSim-353 and SimLex-999
(benchmarks/results/neighbours.md); 0 gives the plain cosine ranking.
"""

from ..errors import ModelError

NEIGHBOUR_MIN_COUNT = 100


def vocabulary_word(model, word: str) -> str:
    """``word`` as the model spells it (:meth:`WordVectors.get_index`); a word its tokenizer cuts into
    several tokens (``東京``) is no word: the error names the tokens."""
    i = model.wv.get_index(word, -1)
    if i < 0:
        tokens = model.tokenize(word)
        if len(tokens) > 1:
            raise ModelError(f"{word!r} is {len(tokens)} tokens to this model's tokenizer, not one word: "
                             f"{' '.join(tokens)} (neighbors {' '.join(tokens)} gives the words nearest to them together)")
        raise ModelError(f"{word!r} is not in the vocabulary of {len(model):,} words")
    return model.wv.index_to_key[i]


def nearest_words(model, words, negative=(), topn: int = 10, min_count: int = NEIGHBOUR_MIN_COUNT) -> list:
    """``(word, cosine)`` of ``neighbors WORD...``: ``model.wv.most_similar`` of ``words`` minus ``negative``;
    ModelError, one line, for an unknown word and a query with no answer."""
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
