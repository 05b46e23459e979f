"""The exceptions of scbow-numba, in a module light enough for the CLI to import at once.

Each is a failure the user can fix; the CLI prints its message as one ``Error:`` line.
"""


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
