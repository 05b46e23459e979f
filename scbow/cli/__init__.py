"""The ``scbow-numba`` command line: click commands that parse, call one library function and print.

The group and what commands share: :mod:`scbow.cli.app`; the commands: :mod:`~scbow.cli.train` (train,
prepare, cache), :mod:`~scbow.cli.vectors` (similarity, info, export), :mod:`~scbow.cli.sentences`
(embed, index, neighbors), :mod:`~scbow.cli.scores` (evaluate, plot).
"""

from . import scores, sentences, train, vectors  # noqa: F401  (each registers its commands)
from .app import main

__all__ = ["main"]
