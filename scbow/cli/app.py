"""The ``scbow-numba`` group: how every command's failures become one line, and what commands share.

Heavy imports (numpy, numba, scipy) happen inside the commands, so ``--help`` is instant. A known
failure prints one line ``Error: ...`` and exits 1, a usage error too but exits 2; Ctrl-C exits 130.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..config import UNKNOWN_MODES, TrainConfig
from ..errors import ConfigError, CorpusError, ModelError, STSError, TrainingError
from ..reading import os_error_text, short_message
from ..text.reader import DEFAULT_ENCODING, REPLACE_SUFFIX, text_codec
from ..text.units import parse_count


class OneLineUsageError(click.UsageError):
    """A usage error (an unknown option, a bad value) as one line, ``Error: ... (see 'CMD --help')``,
    exit status 2: the usage text and the hint click prints above it say nothing the line does not."""

    def __init__(self, error: click.UsageError, command_path: str | None = None):
        super().__init__(error.format_message(), error.ctx)
        self.command_path = command_path or (error.ctx.command_path if error.ctx is not None else None)

    def show(self, file=None) -> None:
        where = f" (see '{self.command_path} --help')" if self.command_path else ""
        click.echo(f"Error: {self.format_message().rstrip('.')}{where}", err=True)


class _Group(click.Group):
    # other spellings of a command: the British one the README uses for neighbours
    ALIASES = {"neighbours": "neighbors"}

    def get_command(self, ctx, name):
        return super().get_command(ctx, self.ALIASES.get(name, name))

    def resolve_command(self, ctx, args):
        name, command, rest = super().resolve_command(ctx, args)
        return (command.name if command is not None else name), command, rest

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except ConfigError as exc:
            # a value given on the command line that cannot train: a usage error, as click's own are,
            # naming the flag (--min-count) where the message starts with the config field (min_count)
            head, _, rest = str(exc).partition(" ")
            message = f"--{head.replace('_', '-')} {rest}" if head in TrainConfig.__dataclass_fields__ else str(exc)
            path = " ".join(filter(None, (ctx.command_path, ctx.invoked_subcommand)))
            raise OneLineUsageError(click.UsageError(message, ctx), path) from None
        except (CorpusError, ModelError, STSError, TrainingError) as exc:
            raise click.ClickException(str(exc)) from None
        except MemoryError:
            # train is the command with options that shrink what it holds
            smaller = "; try a smaller --dim or --max-vocab" if ctx.invoked_subcommand == "train" else ""
            raise click.ClickException("out of memory" + smaller) from None
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            raise click.ClickException(f"{where}{os_error_text(exc)}") from None
        except KeyboardInterrupt as exc:
            # train's Interrupted says what was kept (a checkpoint) and which signal stopped it
            click.echo("\n" + (getattr(exc, "message", None) or "interrupted; nothing was written"), err=True)
            sys.exit(128 + getattr(exc, "signum", 2))
        except click.UsageError as exc:
            raise exc if isinstance(exc, OneLineUsageError) else OneLineUsageError(exc) from None
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except RecursionError:
            raise click.ClickException("input nested too deeply to read (a damaged file?)") from None
        except Exception as exc:
            # every failure a user can cause has its own message above; this is a bug, but it
            # still ends in one line (SCBOW_DEBUG=1 shows the traceback)
            if os.environ.get("SCBOW_DEBUG"):
                raise
            text = f": {short_message(exc, 200)}" if str(exc) else ""
            raise click.ClickException(f"unexpected {type(exc).__name__}{text} (a bug in "
                                       "scbow-numba: please report it; SCBOW_DEBUG=1 shows where)") from None


class GroupedCommand(click.Command):
    """A command whose ``--help`` lists its options under headings: ``option_groups`` is
    ``[(heading, [parameter names])]``; an option in no group (``--help``) goes under "Other options"."""

    def __init__(self, *args, option_groups=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.option_groups = [(heading, list(names)) for heading, names in option_groups]

    def format_options(self, ctx, formatter):
        records = {p.name: p.get_help_record(ctx) for p in self.get_params(ctx) if isinstance(p, click.Option)}
        placed = set()
        for heading, names in self.option_groups:
            rows = [records[n] for n in names if records.get(n)]
            placed.update(names)
            if rows:
                with formatter.section(heading):
                    formatter.write_dl(rows)
        rest = [record for name, record in records.items() if record and name not in placed]
        if rest:
            with formatter.section("Other options"):
                formatter.write_dl(rest)


# Help wraps at the terminal's width (click's default stops at 80 columns), up to HELP_WIDTH.
HELP_WIDTH = 120


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": HELP_WIDTH})
@click.version_option(package_name="scbow-numba")
def main():
    """Siamese CBOW sentence embeddings: train word vectors whose average embeds a sentence.

    Models live in one default place unless -o/-m says otherwise: $SCBOW_MODEL, else
    $XDG_DATA_HOME/scbow-numba/model ($XDG_DATA_HOME defaults to ~/.local/share).
    Encoded corpora are cached in $SCBOW_CACHE_DIR, else ~/.cache/scbow-numba/corpus
    ('scbow-numba cache' lists and clears it).
    """


DEFAULT_MODEL = "Default: $SCBOW_MODEL or ~/.local/share/scbow-numba/model."


def model_option(what="Model directory (or word2vec file)."):
    return click.option("-m", "--model", "model_path", type=click.Path(path_type=Path), default=None,
                        help=f"{what} {DEFAULT_MODEL}")


def encoding_option(what="The input text's"):
    """``--encoding``: how a command's input text is decoded (``scbow.text.reader.text_codec``)."""
    def check(ctx, param, value):
        try:
            text_codec(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
        return value

    return click.option("--encoding", metavar="NAME", default=DEFAULT_ENCODING, show_default=True, callback=check,
                        help=f"{what} encoding (cp1252, latin-1, ...: any Python knows). Text not valid in "
                             "it is refused, naming the encoding it may be; add "
                             f"{REPLACE_SUFFIX} (utf-8{REPLACE_SUFFIX}) to read bad bytes as U+FFFD instead.")


def unknown_option(whose="the model's own rule"):
    """``--unknown``: what becomes of words outside the vocabulary (``Model.encode``'s ``unknown``)."""
    return click.option("--unknown", type=click.Choice(UNKNOWN_MODES), default=None,
                        help="Words not in the vocabulary: split them into pieces (as exported folders do), give "
                             f"each a fixed random vector from a hash of the word, or leave them out.  [default: {whose}; "
                             "pieces for models trained by this version, omit for word2vec files]")


def model_dir(model_path) -> Path:
    from ..vectors.modeldir import default_model_dir

    return Path(model_path or default_model_dir())


def model_arg(model_arg, model_path) -> Path:
    """The model of a command that takes it as MODEL or as -m (plot, info)."""
    if model_arg is not None and model_path is not None and model_arg != model_path:
        raise click.ClickException("give the model once: as MODEL or as -m, not both")
    return model_dir(model_arg or model_path)


def load(model_path):
    from ..vectors.formats import load_model

    return load_model(model_dir(model_path))


def say(*lines: str) -> None:
    """Lines for the user, on stderr (stdout is for results)."""
    for line in lines:
        click.echo(line, err=True)


class Count(click.ParamType):
    """A count as people type it, for every count option (scbow.text.units.parse_count: 500k, 2M, 1e6)."""

    name = "N"

    def __init__(self, minimum: int = 1, what: str = "items"):
        self.minimum, self.what = minimum, what

    def convert(self, value, param, ctx):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        try:
            return parse_count(value, minimum=self.minimum, what=self.what)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)

