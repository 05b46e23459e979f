"""The default rule of word neighbours, without numpy (the CLI's --help reads it).

``NEIGHBOUR_MIN_COUNT``: the words ``model.wv.most_similar`` and ``scbow-numba neighbors`` may
return by default are those seen at least this many times in the training corpus. A row
seen a handful of times is mostly its random start and lands near anything, so by plain
cosine such words crowd the nearest words of everyday ones (house -> mezzanine, padoie,
rinehart; god -> dondindac, scapegoats). Chosen on dev halves of WordSim-353 and SimLex-999
(the rank of a highly rated partner among a word's neighbours; the smallest count as good
as the best within the noise): benchmarks/results/neighbours.md. 0 (or 1): the plain
cosine ranking.
"""

NEIGHBOUR_MIN_COUNT = 100
