"""The ``scbow-numba`` command line: thin click commands over the library.

Heavy imports (numpy, numba, scipy) happen inside the commands, so ``--help`` is instant.
Known failures print one line ``Error: ...`` and exit 1; Ctrl-C exits 130.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from .config import DEVICES, NEGATIVE_MODES, TrainConfig
from .errors import ConfigError

_D = TrainConfig()


def _flag(message: str) -> str:
    """Name the CLI flag instead of the config field at the start of an error message."""
    head, _, rest = message.partition(" ")
    if head in TrainConfig.__dataclass_fields__:
        return f"--{head.replace('_', '-')} {rest}"
    return message


class _Group(click.Group):
    def invoke(self, ctx):
        from .errors import CorpusError, ModelError, STSError, TrainingError

        try:
            return super().invoke(ctx)
        except ConfigError as exc:
            raise click.ClickException(_flag(str(exc))) from None
        except (CorpusError, ModelError, STSError, TrainingError) as exc:
            raise click.ClickException(str(exc)) from None
        except MemoryError:
            raise click.ClickException("out of memory; try a smaller --dim or --max-vocab") from None
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            raise click.ClickException(f"{where}{exc.strerror or exc}") from None
        except KeyboardInterrupt:
            click.echo("\ninterrupted; nothing was written", err=True)
            sys.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="scbow-numba")
def main():
    """Siamese CBOW sentence embeddings: train word vectors whose average embeds a sentence.

    Models live in one default place unless -o/-m says otherwise: $SCBOW_MODEL, else
    ~/.local/share/scbow-numba/model.
    """


def _model_option(help_text="Model directory (or word2vec file). Default: $SCBOW_MODEL or ~/.local/share/scbow-numba/model."):
    return click.option("-m", "--model", "model_path", type=click.Path(path_type=Path), default=None, help=help_text)


def _load(model_path):
    from .formats import default_model_dir, load_model

    return load_model(model_path or default_model_dir())


@main.command()
@click.argument("corpus", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Model directory to write. Default: $SCBOW_MODEL or ~/.local/share/scbow-numba/model.")
@click.option("--dim", type=int, default=_D.dim, show_default=True, help="Embedding dimensions.")
@click.option("--negatives", type=int, default=_D.negatives, show_default=True, help="Negative sentences per example.")
@click.option("--negative-mode", type=click.Choice(NEGATIVE_MODES), default=_D.negative_mode, show_default=True,
              help="Draw negatives from the target's own document, or uniformly from the corpus.")
@click.option("--min-count", type=int, default=_D.min_count, show_default=True, help="Drop words seen fewer times.")
@click.option("--max-vocab", type=int, default=_D.max_vocab, show_default=True, help="Keep only the most frequent words (0: no limit).")
@click.option("--epochs", type=int, default=_D.epochs, show_default=True, help="Passes over the corpus.")
@click.option("--lr", type=float, default=_D.lr, show_default=True, help="Starting learning rate, decayed linearly.")
@click.option("--min-lr-fraction", type=float, default=_D.min_lr_fraction, show_default=True,
              help="Floor of the decayed learning rate, as a fraction of --lr.")
@click.option("--weight-decay", type=float, default=_D.weight_decay, show_default=True,
              help="L2 decay per word occurrence; keeps frequent words from dominating averages.")
@click.option("--common-components", type=int, default=_D.common_components, show_default=True,
              help="After training, centre sentence averages and remove this many principal directions "
                   "(at most dim/10; -1: off).")
@click.option("--max-length", type=int, default=_D.max_length, show_default=True,
              help="Average only the first N known words of a sentence (0: all).")
@click.option("--init-std", type=float, default=_D.init_std, show_default=True, help="Std. dev. of the initial vectors.")
@click.option("--threads", type=int, default=_D.threads, show_default=True,
              help="Training threads (0: all cores). 1 is deterministic for a --seed.")
@click.option("--seed", type=int, default=_D.seed, show_default=True, help="Random seed.")
@click.option("--device", type=click.Choice(DEVICES), default=_D.device, show_default=True, help="Train on the CPU or an NVIDIA GPU.")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=None,
              help="Where encoded corpora are cached. Default: $SCBOW_CACHE_DIR or ~/.cache/scbow-numba/corpus.")
@click.option("--no-cache", is_flag=True, help="Encode the corpus without reading or writing the cache.")
@click.option("-q", "--quiet", is_flag=True, help="No progress line and no summary.")
def train(corpus, output, cache_dir, no_cache, quiet, **hyper):
    """Train a model on CORPUS: text files (.gz/.bz2/.xz too) or directories of them.

    One sentence per line; an empty line, and the end of each file, ends a document.
    """
    from .formats import check_output_dir, default_model_dir, save_model

    config = TrainConfig(**hyper)
    if config.device == "cuda":
        raise click.ClickException("--device cuda is not available in this version; use --device cpu")
    output = check_output_dir(output or default_model_dir())
    from .trainer import train as run_training

    result = run_training(list(corpus), config, quiet=quiet, cache_dir=cache_dir, use_cache=not no_cache)
    save_model(result.model, output)
    if not quiet:
        t = result.model.info["training"]
        c = result.model.info["corpus"]
        click.echo(
            f"trained {config.epochs} epoch(s): {result.examples:,} examples in {result.seconds:.1f} s "
            f"({t['examples_per_second'] or 0:,.0f}/s, {t['threads']} threads), loss {t['first_loss']:.4f} -> "
            f"{t['final_loss']:.4f}; {c['vocab_size']:,} words, {c['sentences']:,} sentences; model: {output}",
            err=True,
        )


@main.command()
@_model_option()
@click.argument("sentence1")
@click.argument("sentence2")
def similarity(model_path, sentence1, sentence2):
    """Print the cosine similarity of the averages of SENTENCE1 and SENTENCE2."""
    model = _load(model_path)
    empty = []
    for n, sentence in enumerate((sentence1, sentence2), 1):
        known, unknown = model.ids(sentence)
        if unknown:
            click.echo(f"sentence {n}: unknown words left out: {', '.join(unknown)}", err=True)
        if not known:
            empty.append(n)
    if empty:
        which = " and ".join(f"sentence {n}" for n in empty)
        raise click.ClickException(f"no similarity: {which} has no word in the vocabulary")
    click.echo(f"{model.similarity(sentence1, sentence2):.4f}")


@main.command()
@_model_option()
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="File to write.")
@click.option("--binary", is_flag=True, help="word2vec binary format instead of text.")
def export(model_path, output, binary):
    """Export the word vectors in word2vec text (default) or binary format."""
    from .formats import export_word2vec

    model = _load(model_path)
    export_word2vec(model, output, binary=binary)
    click.echo(f"wrote {len(model):,} vectors of {model.dim} dims to {output}", err=True)


def default_sts_paths() -> list[Path]:
    """``$SCBOW_STS_DIR``, else ``shared/data/sts`` or ``../shared/data/sts`` from here."""
    env = os.environ.get("SCBOW_STS_DIR")
    if env and not Path(env).is_dir():
        raise click.ClickException(f"SCBOW_STS_DIR={env}: no such directory")
    candidates = [Path(env)] if env else [Path("shared/data/sts"), Path("../shared/data/sts")]
    for c in candidates:
        if c.is_dir():
            files = sorted(c.glob("*.tsv"))
            if not files:
                raise click.ClickException(f"{c}: no *.tsv STS files in the default STS folder")
            return files
    raise click.ClickException("no STS files given and no default STS folder found; pass files or set SCBOW_STS_DIR")


@main.command()
@_model_option()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--baseline", type=click.Path(path_type=Path), default=None,
              help="Word vectors to compare with (word2vec text or binary, or a model directory).")
@click.option("--control", type=click.Choice(["overlap"]), default=None,
              help="Add an untrained word-overlap control (alone when no -m is given).")
@click.option("--resamples", type=click.IntRange(min=100), default=1000, show_default=True,
              help="Bootstrap resamples for the 95% interval of a Pearson difference.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def evaluate(model_path, paths, baseline, control, resamples, as_json):
    """Score a model on STS files (gold<TAB>s1<TAB>s2) or folders of *.tsv.

    With no PATHS: the paper's SemEval sets from $SCBOW_STS_DIR, else shared/data/sts or
    ../shared/data/sts. Per set: pairs, pairs scored (a pair with a side without any known
    word is not scored), Pearson and Spearman; then the mean over sets and the mean weighted
    by pairs scored. --baseline and --control add column groups, each compared with the
    model by a paired Wilcoxon test and a bootstrap interval of the Pearson difference.
    """
    import json

    from .evaluate import OverlapControl, evaluate_systems, format_table, read_sts
    from .formats import default_model_dir, load_model

    files: list[Path] = []
    for p in paths or default_sts_paths():
        if p.is_dir():
            found = sorted(p.glob("*.tsv"))
            if not found:
                raise click.ClickException(f"{p}: no *.tsv STS files in this directory")
            files.extend(found)
        else:
            files.append(p)
    sets = [read_sts(f) for f in files]
    systems, sources = {}, {}
    if model_path is not None or control is None:
        path = model_path or default_model_dir()
        systems["model"], sources["model"] = load_model(path).embed, str(path)
    if baseline is not None:
        if not baseline.exists():
            raise click.ClickException(f"{baseline}: no such baseline vectors file")
        systems["baseline"], sources["baseline"] = load_model(baseline).embed, str(baseline)
    if control == "overlap":
        systems["overlap"] = OverlapControl(dim=300).embed
        sources["overlap"] = "untrained control: a fixed random 300-d vector per distinct token, averaged over all tokens"
    report = {"sources": sources, **evaluate_systems(systems, sets, resamples=resamples)}
    click.echo(json.dumps(report, indent=1) if as_json else format_table(report))


if __name__ == "__main__":
    main()
