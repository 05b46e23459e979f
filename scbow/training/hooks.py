"""A run as the loop sees it: its phases, where it is, and the hooks it calls between batches.

A run is a sequence of :class:`Phase` objects over named matrices: ``trainer.SentencePhase``
(``"sentence"``), then the word part (``"word_in"``, ``"word_out"``). :class:`TrainState` is enough to
checkpoint and resume; a :class:`Hook` (``session``'s checkpoints, ``curve``) is called between kernel
calls and reads the matrices by name from :class:`Matrices`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

    from .corpus import Corpus


class Phase(Protocol):
    """What the loop asks of a phase of a run."""

    name: str  # its key in TrainState.phases and in the model's info
    unit: str  # what a step is on the progress line ("ex", "sent")
    label: str  # what a pass is on the progress line ("epoch", "word part")
    total: int  # its steps in all (examples, sentences)
    passes: int  # the passes (epochs) its steps make up; a batch never crosses the end of one
    samples: bool  # whether its losses are its sample loss's (at its start and after each pass), not each batch's

    def step(self, state: TrainState) -> tuple[int, float]:
        """Train the next batch from the phase's position in ``state``: ``(steps, mean loss)``."""

    def end_of_pass(self, state: TrainState) -> bool:
        """Whether a pass of which the hooks hear (``after_epoch``) has just ended; moves ``state`` past it."""

    def loss_error(self, loss: float, done: int) -> Exception:
        """The error of a loss that is not finite after ``done`` steps."""

    def sample_loss(self) -> float | None:
        """The loss on the phase's fixed sample at the rows as they are (None when ``samples`` is False)."""

    def matrices(self) -> dict[str, np.ndarray]:
        """Its matrices by name, on the host (a GPU phase copies them back)."""

    def close(self) -> None:
        """Free what the phase holds; its matrices stay readable."""


@dataclass
class PhaseState:
    """One phase's counters: ``done`` of ``total`` steps, kernel ``seconds``, ``losses`` (each batch's mean,
    or its sample loss at its start and after each pass)."""

    total: int = 0
    done: int = 0
    seconds: float = 0.0
    losses: list = field(default_factory=list)


@dataclass
class TrainState:
    """Where a run is: enough to report progress, write a checkpoint or resume (bit for bit, one thread).

    ``phase``: the phase running (the last once all are done); ``phases``: each one's
    :class:`PhaseState`. The sentence phase's next batch starts at ``lo`` of epoch ``epoch``'s
    (0-based) shuffled targets. ``collapse_start``: the collapse check's measures of the run's start
    (``collapse.Spread.to_dict``), so a resumed run is judged against its own start.
    """

    phase: str = "sentence"
    phases: dict = field(default_factory=dict)
    epoch: int = 0
    lo: int = 0
    targets_per_epoch: int = 0
    collapse_start: dict | None = None

    def __getitem__(self, name: str) -> PhaseState:
        return self.phases[name]

    @property
    def done(self) -> int:
        """Examples of the sentence phase done (what --eval-every counts)."""
        return self.phases["sentence"].done

    @property
    def steps(self) -> int:
        """Steps of every phase done (what --checkpoint-every counts)."""
        return sum(p.done for p in self.phases.values())

    def where(self) -> str:
        """``"123,456 of 1,000,000 examples"``, or in the word part ``"... sentences of the word part"``."""
        p = self.phases[self.phase]
        if self.phase == "sentence":
            return f"{p.done:,} of {p.total:,} examples"
        return f"{p.done:,} of {p.total:,} sentences of the {self.phase} part"

    def to_dict(self) -> dict:
        return asdict(self)  # copies the lists of losses too

    @classmethod
    def from_dict(cls, d: dict) -> "TrainState":
        """The state ``to_dict`` wrote; KeyError, TypeError or ValueError when ``d`` is not one."""
        state = cls(**{f.name: d[f.name] for f in fields(cls)})
        state.phases = {name: PhaseState(**p) for name, p in state.phases.items()}
        return state


class Matrices:
    """The begun phases' matrices by name (``matrices["sentence"]``): live on the CPU, copies from a GPU."""

    def __init__(self, phases: list):
        self.phases = phases  # the phases begun, in order

    def __getitem__(self, name: str):
        found = self.all()
        if name not in found:
            raise KeyError(f"no matrix {name!r} in this run (it has {', '.join(found) or 'none yet'})")
        return found[name]

    def all(self) -> dict:
        """Every matrix by name (what a checkpoint saves)."""
        return {name: M for phase in self.phases for name, M in phase.matrices().items()}


class Hook:
    """Called by :func:`scbow.training.trainer.train` between kernel calls with the :class:`TrainState` and
    the :class:`Matrices`; its time is not training time, and it may raise to stop the run. Does nothing."""

    def before_training(self, state: TrainState, matrices: Matrices, corpus: Corpus) -> None:
        """Called once before the first batch, with the encoded corpus the run trains on."""

    def after_batch(self, state: TrainState, matrices: Matrices) -> None:
        """Called after each batch of every phase."""

    def after_epoch(self, state: TrainState, matrices: Matrices) -> None:
        """Called after each pass of every phase (an epoch of the sentence phase)."""

    def after_training(self, state: TrainState, matrices: Matrices) -> None:
        """Called once every phase is trained, before post-processing."""

    def checkpoint_info(self) -> dict:
        """What each checkpoint saves of this hook (the learning curve so far, as ``curve.json``)."""
        return {}

    def restore_checkpoint_info(self, info: dict) -> bool:
        """Take back what a checkpoint saved (``info``: its ``curve.json`` as ``{"curve": ...}``, or ``{}``);
        True when this hook kept it."""
        return False
