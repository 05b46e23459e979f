"""What watches a run: the trainer's state between batches and the hooks it calls.

:class:`TrainState` is where a run is (enough to checkpoint and resume it); a
:class:`Hook` is called between kernel calls (checkpoints and signals in
``scbow.training.session``, learning curves in ``scbow.training.curve``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .corpus import Corpus


@dataclass
class TrainState:
    """Where a run is: enough to report progress, write a checkpoint or resume.

    ``epoch`` and ``lo`` name the next batch: it starts at position ``lo`` of the shuffled
    targets of epoch ``epoch`` (0-based); ``done`` examples were trained before it. The
    kernel draws its negatives from ``(seed, done)``, and the shuffle of epoch e is the
    e-th permutation of a generator seeded by ``seed``, so a run resumed from a state
    replays the remaining batches exactly (bit for bit with one thread).
    """

    epoch: int = 0
    lo: int = 0
    done: int = 0
    total: int = 0
    targets_per_epoch: int = 0
    kernel_seconds: float = 0.0
    losses: list = field(default_factory=list)
    # the word part (``scbow.training.wordpart``), once the sentence part is done: sentences
    # trained of all its passes, of ``word_total``, and its kernel time
    word_done: int = 0
    word_total: int = 0
    word_seconds: float = 0.0
    # the word part's loss on its fixed sample of sentences (``WordPart.sample_loss``): at its start,
    # then at the end of each pass
    word_losses: list = field(default_factory=list)
    # the collapse check's measures of the matrix the run started from (``scbow.training.collapse``,
    # ``Spread.to_dict``), kept so that a resumed run is judged against its own start
    collapse_start: dict | None = None

    @property
    def in_word_part(self) -> bool:
        """Whether the sentence part is done and the word part has begun."""
        return self.word_done > 0

    def to_dict(self) -> dict:
        return asdict(self)  # copies the list of losses too

    @classmethod
    def from_dict(cls, d: dict) -> "TrainState":
        # a checkpoint from before the word part has no word_* fields: none done; one from before
        # the collapse check's start measure has no collapse_start
        optional = lambda name: name.startswith("word_") or name == "collapse_start"  # noqa: E731
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d or not optional(f.name)})


class Hook:
    """Called by :func:`train` between kernel calls; the base class does nothing.

    ``vectors()`` returns the current matrix as a host float32 array (the live array on
    CPU; a copy from the GPU on CUDA, so call it only when needed). Time spent in hooks
    is not counted as training time. A hook may raise to stop the run.
    """

    def before_training(self, state: TrainState, vectors, corpus: Corpus) -> None:
        """Called once before the first batch, with the encoded corpus the run trains on."""

    def after_batch(self, state: TrainState, vectors) -> None:
        pass

    def after_epoch(self, state: TrainState, vectors) -> None:
        pass

    def after_word_batch(self, state: TrainState, vectors) -> None:
        """Called after each batch of the word part (``state.word_done`` sentences done);
        ``vectors()`` is the finished sentence part, ``vectors.word()`` the word part's
        ``(Wi, Wo)``, live arrays."""

    def after_training(self, state: TrainState, vectors) -> None:
        """Called once every part is trained, before post-processing."""
