"""The exceptions of scbow-numba (light, for the CLI to import at once): each a failure the user can
fix, whose message the CLI prints as one ``Error:`` line."""


class ConfigError(ValueError):
    """A hyperparameter value that cannot train a model."""


class CorpusError(ValueError):
    """The corpus cannot be read or gives nothing to train on."""


class ModelError(ValueError):
    """A model directory or vectors file that cannot be read or written."""


class STSError(ValueError):
    """An STS file that cannot be read."""


class TrainingError(RuntimeError):
    """Training diverged or cannot start."""


class CheckpointError(ModelError):
    """A training checkpoint that is missing, damaged, or from another run."""


class Interrupted(KeyboardInterrupt):
    """Training stopped by SIGINT or SIGTERM; the CLI exits with ``128 + signum``. ``message``: the line to
    print (what was kept, how to resume), filled in by the code that knows what was written."""

    def __init__(self, message: str | None = None, signum: int = 2):
        super().__init__(message or "interrupted")
        self.message = message
        self.signum = signum


def diverged(lr: float, what: str) -> TrainingError:
    """The error of a run whose numbers stopped being finite (``what`` happened): name the likely cause."""
    return TrainingError(f"{what}: the learning rate ({lr:g}) is probably too high; try a smaller --lr")
