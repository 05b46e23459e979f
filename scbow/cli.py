"""The ``scbow-numba`` command line: thin click commands over the library.

Heavy imports (numpy, numba, scipy) happen inside the commands, so ``--help`` is instant.
Known failures print one line ``Error: ...`` and exit 1; Ctrl-C exits 130.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from .config import DEVICES, NEGATIVE_MODES, UNKNOWN_MODES, TrainConfig
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
        except KeyboardInterrupt as exc:
            # train's Interrupted says what was kept (a checkpoint) and which signal stopped it
            click.echo("\n" + (getattr(exc, "message", None) or "interrupted; nothing was written"), err=True)
            sys.exit(128 + getattr(exc, "signum", 2))
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except RecursionError:
            raise click.ClickException("input nested too deeply to read (a damaged file?)") from None
        except Exception as exc:
            # every failure a user can cause has its own message above; this is a bug, but it
            # still ends in one line (SCBOW_DEBUG=1 shows the traceback)
            if os.environ.get("SCBOW_DEBUG"):
                raise
            text = str(exc).splitlines()[0][:200] if str(exc) else ""
            raise click.ClickException(f"unexpected {type(exc).__name__}{': ' + text if text else ''} (a bug in "
                                       "scbow-numba: please report it; SCBOW_DEBUG=1 shows where)") from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="scbow-numba")
def main():
    """Siamese CBOW sentence embeddings: train word vectors whose average embeds a sentence.

    Models live in one default place unless -o/-m says otherwise: $SCBOW_MODEL, else
    $XDG_DATA_HOME/scbow-numba/model ($XDG_DATA_HOME defaults to ~/.local/share).
    Encoded corpora are cached in $SCBOW_CACHE_DIR, else ~/.cache/scbow-numba/corpus
    ('scbow-numba cache' lists and clears it).
    """


def _model_option(help_text="Model directory (or word2vec file). Default: $SCBOW_MODEL or ~/.local/share/scbow-numba/model."):
    return click.option("-m", "--model", "model_path", type=click.Path(path_type=Path), default=None, help=help_text)


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n < 1e9 else f"{n / 1e9:,.2f} GB"


def _model_dir(model_path) -> Path:
    from .vectors.formats import default_model_dir

    return Path(model_path or default_model_dir())


def _model_arg(model_arg, model_path) -> Path:
    """The model of a command that takes it as MODEL or as -m (plot, info)."""
    if model_arg is not None and model_path is not None and model_arg != model_path:
        raise click.ClickException("give the model once: as MODEL or as -m, not both")
    return _model_dir(model_arg or model_path)


def _refuse_overwrite(outputs: dict, inputs, replaces_dirs: bool = False) -> None:
    from .files import refuse_overwrite

    refuse_overwrite(outputs, inputs, replaces_dirs)


def _load(model_path):
    from .vectors.formats import default_model_dir, load_model

    return load_model(model_path or default_model_dir())


def _pretrained_start(path, config, quiet):
    """``train``'s ``init`` for --init-vectors (None without it) and the dict it fills in."""
    if path is None:
        return None, {}
    from .training.pretrained import pretrained_init
    from .vectors.formats import load_model

    source = load_model(path)  # read (and checked) before the corpus, so a bad file fails at once
    if source.dim != config.dim:
        raise click.ClickException(f"--init-vectors {path} has {source.dim}-dimensional vectors but --dim is "
                                   f"{config.dim}; they must match (pass --dim {source.dim})")
    info = {}

    def init(vocab):
        W, summary = pretrained_init(vocab, source, config, name=str(path))
        info.update(summary)
        if not quiet:
            click.echo(f"initialised {summary['rows_initialised']:,} of {summary['rows']:,} rows from {path} "
                       f"(scaled by {summary['scale']:.3g} to --init-std {config.init_std:g})", err=True)
        return W

    return init, info


@main.command(short_help="Train a model on a corpus (one sentence per line).")
@click.argument("corpus", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Model directory to write. Default: $SCBOW_MODEL or ~/.local/share/scbow-numba/model.")
@click.option("--dim", type=int, default=_D.dim, show_default=True, help="Embedding dimensions.")
@click.option("--negatives", type=int, default=_D.negatives, show_default=True, help="Negative sentences per example.")
@click.option("--negative-mode", type=click.Choice(NEGATIVE_MODES), default=_D.negative_mode, show_default=True,
              help="Draw negatives from the target's own document, or uniformly from the corpus.")
@click.option("--min-count", type=int, default=_D.min_count, show_default=True, help="Drop words seen fewer times.")
@click.option("--max-vocab", type=int, default=_D.max_vocab, show_default=True,
              help="Keep only the most frequent words (0: no limit).")
@click.option("--epochs", type=int, default=_D.epochs, show_default=True, help="Passes over the corpus.")
@click.option("--lr", type=float, default=_D.lr, show_default=True, help="Starting learning rate, decayed linearly.")
@click.option("--min-lr-fraction", type=float, default=_D.min_lr_fraction, show_default=True,
              help="Floor of the decayed learning rate, as a fraction of --lr.")
@click.option("--weight-decay", type=float, default=_D.weight_decay, show_default=True,
              help="L2 decay per word occurrence: each occurrence of a word shrinks its row by lr * DECAY of "
                   "itself (at --lr 0.1, 10 shrinks it by 1 percent each time it is seen); lr * DECAY must stay "
                   "below 1. 0: off, the paper's objective (the frequency weights keep frequent words down instead).")
@click.option("--frequency-weight", type=float, default=_D.frequency_weight, show_default=True,
              help="a of the weights a/(a + p(w)) inside sentence averages (SIF's), folded into the saved "
                   "vectors; 0: the paper's unweighted average.")
@click.option("--count-power", type=float, default=_D.count_power, show_default=True,
              help="Scale a word's steps by min(1, count-floor/count)^POWER (0: plain SGD).")
@click.option("--count-floor", type=int, default=_D.count_floor, show_default=True,
              help="Words seen at most this often take full steps (see --count-power).")
@click.option("--unknown", type=click.Choice(UNKNOWN_MODES), default=_D.unknown, show_default=True,
              help="What the saved model does with words outside its vocabulary: a fixed hashed random "
                   "vector each, or leave them out.")
@click.option("--unknown-scale", type=float, default=_D.unknown_scale, show_default=True,
              help="Norm of a hashed unknown-word vector, as a multiple of the median norm of the rarest "
                   "tenth of the vocabulary.")
@click.option("--common-components", type=int, default=_D.common_components, show_default=True,
              help="After training, centre sentence averages and remove this many principal directions "
                   "(at most dim/10; -1: off).")
@click.option("--max-length", type=int, default=_D.max_length, show_default=True,
              help="Average only the first N known words of a sentence (0: all).")
@click.option("--init-std", type=float, default=_D.init_std, show_default=True, help="Std. dev. of the initial vectors.")
@click.option("--threads", type=int, default=_D.threads, show_default=True,
              help="Training threads (0: all cores). 1 is deterministic for a --seed.")
@click.option("--seed", type=int, default=_D.seed, show_default=True, help="Random seed.")
@click.option("--device", type=click.Choice(DEVICES), default=_D.device, show_default=True,
              help="Train on the CPU or an NVIDIA GPU.")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=None,
              help="Where encoded corpora are cached. Default: $SCBOW_CACHE_DIR or ~/.cache/scbow-numba/corpus.")
@click.option("--no-cache", is_flag=True, help="Encode the corpus without reading or writing the cache.")
@click.option("--checkpoint-every", metavar="N|DURATION", default=None, show_default="off",
              help="Write a checkpoint (OUTPUT.checkpoint) every N examples (at the first batch end at or after "
                   "each multiple) or every DURATION (30s, 10m, 2h). Ctrl-C and SIGTERM always write one.")
@click.option("--resume", is_flag=True,
              help="Continue the interrupted run into OUTPUT from its checkpoint (same corpus and settings).")
@click.option("-q", "--quiet", is_flag=True, help="No progress line and no summary.")
@click.option("--init-vectors", type=click.Path(path_type=Path), default=None,
              help="Start the rows of the words these vectors have from them (word2vec text or binary, or a "
                   "model directory; same dimensions as --dim), rescaled to --init-std; the rest at random.")
@click.option("--eval-every", metavar="N", default=None, show_default="off",
              help="Score the STS dev set every N examples (500000, 500k, 2M), at every epoch end and before "
                   "training; the learning curve is saved as curve.json in the model (see 'plot'). Points fall on "
                   "batch ends: at the first one at or after each multiple of N (batches are 32,768 examples, fewer "
                   "for costly settings); the curve records the exact count.")
@click.option("--eval-dev", type=click.Path(path_type=Path), default=None,
              help="The dev set of --eval-every. Default: $SCBOW_STS_DEV, else "
                   "shared/data/sts-dev/stsb.dev.tsv or ../shared/data/sts-dev/stsb.dev.tsv (from the current "
                   "directory, or beside a source checkout).")
@click.option("--eval-sets", type=click.Path(path_type=Path), multiple=True,
              help="Also score these STS files or folders at every point (repeatable); their means are recorded.")
@click.option("--eval-test", is_flag=True,
              help="Also score the default STS test sets (those of 'evaluate' without paths) at every point.")
def train(corpus, output, cache_dir, no_cache, quiet, init_vectors, checkpoint_every, resume,
          eval_every, eval_dev, eval_sets, eval_test, **hyper):
    """Train a model on CORPUS: text files (.gz/.bz2/.xz too) or directories of them.

    One sentence per line; an empty line, and the end of each file, ends a document.
    """
    from .vectors.formats import default_model_dir

    config = TrainConfig(**hyper)
    if config.device == "cuda":  # fail before reading the corpus, not after
        from .training.backends.cuda import require_cuda

        require_cuda()
    if checkpoint_every is not None:
        from .training.checkpoint import parse_every

        try:
            checkpoint_every = parse_every(checkpoint_every)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
    curve = _curve_hook(eval_every, eval_dev, eval_sets, eval_test, config)
    if config.device == "cpu":  # before any work: the thread count is known now
        from .kernels import resolve_threads

        resolve_threads(config.threads)
    output = Path(output or default_model_dir())
    _refuse_overwrite({"-o": output, "its checkpoint": output.with_name(output.name + ".checkpoint")},
                      [*(("the corpus", p) for p in corpus), ("--init-vectors", init_vectors),
                       ("--eval-dev", eval_dev), *(("--eval-sets", p) for p in eval_sets)], replaces_dirs=True)
    made = [p for p in (output.resolve().parent, *output.resolve().parent.parents) if not p.exists()]
    try:
        _train_into(output, corpus, config, curve, init_vectors, checkpoint_every, resume, quiet, cache_dir, no_cache)
    except BaseException:
        # a failed run leaves nothing behind: not even the directories made for its output
        for p in made:  # deepest first
            try:
                p.rmdir()
            except OSError:
                break
        raise


def _train_into(output, corpus, config, curve, init_vectors, checkpoint_every, resume, quiet, cache_dir, no_cache):
    from .vectors.formats import check_output_dir

    output = check_output_dir(output)
    init, init_info = _pretrained_start(init_vectors, config, quiet)
    from .training.session import train_session

    def before_save(result):
        if init_info:
            result.model.info["init_vectors"] = init_info
        if curve is not None:
            curve.attach(result.model)

    # lock, checkpoints, signals and the final save: see scbow/session.py
    result = train_session(list(corpus), config, output, checkpoint_every=checkpoint_every, resume=resume,
                           quiet=quiet, cache_dir=cache_dir, use_cache=not no_cache, init=init,
                           before_save=before_save, warn=lambda line: click.echo(line, err=True),
                           hooks=[curve] if curve is not None else [])
    if not quiet:
        from .progress import plural

        t = result.model.info["training"]
        c = result.model.info["corpus"]
        click.echo(
            f"trained {plural(config.epochs, 'epoch')}: {plural(result.examples, 'example')} in {result.seconds:.1f} s "
            f"({t['examples_per_second'] or 0:,.0f}/s, "
            f"{'GPU' if config.device == 'cuda' else plural(t['threads'], 'thread')}), loss {t['first_loss']:.4f} -> "
            f"{t['final_loss']:.4f}; {plural(c['vocab_size'], 'word')}, {plural(c['sentences'], 'sentence')}; "
            f"model: {output}",
            err=True,
        )
        cache = result.cache or {}
        if cache.get("written") and cache.get("root"):
            from .training.corpus import cache_entries

            entries = cache_entries(cache["root"])
            mine = next((e["bytes"] for e in entries if e["path"] == cache["path"]), 0)
            click.echo(f"corpus cache: wrote {_mb(mine)} to {cache['path']} (a rerun on the same files starts "
                       f"at once); the cache holds {plural(len(entries), 'corpus', 'corpora')} in "
                       f"{_mb(sum(e['bytes'] for e in entries))}: 'scbow-numba cache' lists it, "
                       "'scbow-numba cache --clear' empties it", err=True)
        if curve is not None:
            first, last = (_r(p["dev"]["pearson"]) for p in (curve.points[0], curve.points[-1]))
            at = [p["examples"] for p in curve.points if p["examples"] and not p.get("epoch_end")]
            off = [n for n in at if n % curve.every]
            where = (f"; points fall on batch ends, the first at or after each multiple of {curve.every:,} "
                     f"({', '.join(f'{n:,}' for n in at[:3])}{', ...' if len(at) > 3 else ''})" if off else "")
            click.echo(f"curve: {len(curve.points)} points, dev Pearson {first} -> {last}; the evaluations took "
                       f"{curve.eval_seconds:.1f} s, not counted above{where} (saved as curve.json; "
                       f"'scbow-numba plot {output}' draws it)", err=True)


@main.command(short_help="Turn raw documents into a corpus for train (sentence splitting).")
@click.argument("inputs", metavar="INPUT...", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="Corpus file to write for 'train' (.gz, .bz2 or .xz compress it).")
@click.option("--jsonl-field", metavar="NAME", default="text", show_default=True,
              help="The field of each JSON Lines record (.jsonl, .ndjson) that holds its text.")
@click.option("--documents", type=click.Choice(["file", "blank-line"]), default="file", show_default=True,
              help="What makes a document: each file (and each JSON Lines record), or each block of lines "
                   "between blank lines.")
@click.option("--segmenter", type=click.Choice(["nupunkt", "sentencex", "blingfire", "pysbd", "syntok", "lines"]),
              default="nupunkt", show_default=True,
              help="How sentences are found: nupunkt (English; pip install 'scbow-numba[prepare]'), sentencex "
                   "(about 300 languages, see --language), blingfire, pysbd, syntok (each pip install NAME), or "
                   "lines: the text is already one sentence per line.")
@click.option("--language", default="en", show_default=True,
              help="ISO 639-1 code of the text, for sentencex and pysbd (nupunkt and syntok know English only).")
@click.option("-q", "--quiet", is_flag=True, help="No progress line and no summary.")
def prepare(inputs, output, jsonl_field, documents, segmenter, language, quiet):
    """Turn raw documents into a corpus for 'train': one sentence per line, a blank line between documents.

    INPUT: text files (.txt, .text, .md), JSON Lines files (.jsonl, .ndjson; one record, one
    document), any of them .gz/.bz2/.xz, and folders of them (searched recursively). Lines
    of a paragraph are joined and split into sentences; a blank line ends a paragraph.
    Read in blocks, so inputs larger than memory work; OUTPUT is renamed into place at the end.
    The segmenters were compared in benchmarks/results/segmenters.md.
    """
    from .progress import Progress, plural
    from .text.prepare import prepare as prepare_corpus

    bar = Progress(0, unit="B", enabled=None if not quiet else False)

    def show(done, total):
        bar.total = total
        bar.update(done, prefix="preparing: ")

    try:
        stats = prepare_corpus(inputs, output, jsonl_field=jsonl_field, documents=documents, segmenter=segmenter,
                               language=language, progress=show)
    finally:
        bar.close()
    if stats.invalid_utf8_lines:
        click.echo(f"warning: {stats.invalid_utf8_lines:,} line(s) of the input are not valid UTF-8; their bad "
                   "bytes were written as U+FFFD (the replacement character)", err=True)
    if not quiet:
        rate = stats.input_bytes / stats.seconds / 1e6 if stats.seconds > 0 else 0.0
        skipped = f", {stats.skipped_records:,} JSON Lines records with no text skipped" if stats.skipped_records else ""
        click.echo(f"prepared {plural(stats.files, 'file')}, {stats.input_bytes / 1e6:,.1f} MB in {stats.seconds:.1f} s "
                   f"({rate:.1f} MB/s, {segmenter}): {plural(stats.documents, 'document')}, "
                   f"{plural(stats.sentences, 'sentence')}, {plural(stats.words, 'word')}{skipped}; wrote {output}",
                   err=True)


@main.command(short_help="Cosine similarity of two sentences (or of many pairs).")
@_model_option()
@click.argument("sentence1", required=False)
@click.argument("sentence2", required=False)
@click.option("--pairs", "pairs_path", type=click.Path(path_type=Path, allow_dash=True), default=None,
              help="Score every pair of this file instead (- for stdin): one pair a line, s1<TAB>s2, or "
                   "gold<TAB>s1<TAB>s2 as in STS files; one cosine a line on stdout, in order.")
@click.option("--unknown", type=click.Choice(["omit", "hash"]), default=None,
              help="Words not in the vocabulary: leave them out, or give each a fixed random vector "
                   "(from a hash of the word) so that a shared unknown word still counts.  [default: the "
                   "model's own rule, hash for models trained by this version]")
def similarity(model_path, sentence1, sentence2, pairs_path, unknown):
    """Print the cosine similarity of the averages of SENTENCE1 and SENTENCE2.

    \b
    scbow-numba similarity "a man is eating" "someone eats"
    scbow-numba similarity --pairs pairs.tsv > scores.txt

    With --pairs, a pair with a side that has nothing to average (an empty side, or no
    known word with --unknown omit) prints nan, and the count of such pairs goes to stderr.
    """
    if pairs_path is not None:
        if sentence1 is not None:
            raise click.ClickException("give either SENTENCE1 SENTENCE2 or --pairs FILE, not both")
        _similarity_pairs(_load(model_path), pairs_path, unknown)
        return
    if sentence2 is None:
        raise click.ClickException('give two sentences: scbow-numba similarity "SENTENCE 1" "SENTENCE 2" '
                                   "(or --pairs FILE)")
    model = _load(model_path)
    unknown = unknown or model.unknown_rule[0]
    blank = [n for n, sentence in enumerate((sentence1, sentence2), 1) if not sentence.strip()]
    if blank:
        raise click.ClickException(f"no similarity: {' and '.join(f'sentence {n}' for n in blank)} "
                                   f"{'is' if len(blank) == 1 else 'are'} empty")
    empty = []
    for n, sentence in enumerate((sentence1, sentence2), 1):
        known, missing = model.ids(sentence)
        if missing:
            what = "given hashed random vectors" if unknown == "hash" else "left out"
            click.echo(f"sentence {n}: unknown words {what}: {', '.join(missing)}", err=True)
        if not known and not (unknown == "hash" and missing):
            empty.append(n)
    if empty:
        which = " and ".join(f"sentence {n}" for n in empty)
        if unknown == "hash":
            raise click.ClickException(f"no similarity: {which} has no word")
        raise click.ClickException(f"no similarity: {which} has no word in the vocabulary")
    value = model.similarity(sentence1, sentence2, unknown=unknown)
    if value != value:  # a side averages to the zero vector: its words' vectors cancel out or are zero
        raise click.ClickException("no similarity: a sentence's average is the zero vector (its words' vectors "
                                   "are zero or cancel out), so it has no direction to compare")
    click.echo(f"{value:.4f}")


@main.command(short_help="What a model is: size, corpus, settings and recorded scores.")
@click.argument("model_arg", metavar="[MODEL]", required=False, type=click.Path(path_type=Path))
@_model_option("Model directory or word2vec/GloVe file (the same as MODEL). Default: $SCBOW_MODEL or "
               "~/.local/share/scbow-numba/model.")
@click.option("--json", "as_json", is_flag=True, help="Print everything recorded in the model as JSON.")
def info(model_arg, model_path, as_json):
    """Describe MODEL: dimensions and vocabulary, the corpus and settings it was trained with,
    the training run, and the scores recorded in it (the learning curve of --eval-every).

    Settings that differ from this version's defaults are marked with *.
    """
    from .use.describe import describe, model_record

    path = _model_arg(model_arg, model_path)
    model = _load(path)
    click.echo(model_record(model, path) if as_json else "\n".join(describe(model, path)))


PAIRS_BLOCK = 20_000  # pairs embedded at once by similarity --pairs


def _similarity_pairs(model, path, unknown) -> None:
    """``similarity --pairs``: stream the pairs in blocks, one cosine a line."""
    import io

    from .errors import CorpusError
    from .text.reader import open_text

    if str(path) != "-" and not Path(path).is_file():
        raise CorpusError(f"{path}: no such file" if not Path(path).exists() else f"{path}: not a regular file")
    # utf-8-sig, like the STS files: a byte order mark is not part of the first sentence
    fh = (io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8-sig", errors="replace", newline=None)
          if str(path) == "-" else open_text(Path(path)))
    out = sys.stdout
    total = unscored = 0

    def flush(first, second):
        nonlocal unscored
        cos = model.similarities(first, second, unknown=unknown)
        unscored += int((cos != cos).sum())
        out.write("".join("nan\n" if c != c else f"{c:.4f}\n" for c in cos.tolist()))

    try:
        first, second = [], []
        for n, line in enumerate(fh, 1):
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) == 3:
                fields = fields[1:]
            if len(fields) != 2:
                raise CorpusError(f"{path}: line {n} has {len(fields)} tab-separated fields; a pair is "
                                  "s1<TAB>s2 (or gold<TAB>s1<TAB>s2)")
            first.append(fields[0])
            second.append(fields[1])
            total += 1
            if len(first) == PAIRS_BLOCK:
                flush(first, second)
                first, second = [], []
        if first:
            flush(first, second)
    finally:
        if str(path) != "-":
            fh.close()
        else:
            fh.detach()  # leaves sys.stdin open
        out.flush()
    click.echo(f"scored {total:,} pairs" + (f"; {unscored:,} had a side with nothing to average (printed as nan)"
                                            if unscored else ""), err=True)


@main.command(short_help="Write the word vectors as a word2vec text or binary file.")
@_model_option()
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="File to write.")
@click.option("--binary", is_flag=True, help="word2vec binary format instead of text.")
def export(model_path, output, binary):
    """Export the word vectors in word2vec text (default) or binary format."""
    from .vectors.formats import export_word2vec

    _refuse_overwrite({"-o": output}, {"the model": _model_dir(model_path)})
    model = _load(model_path)
    export_word2vec(model, output, binary=binary)
    click.echo(f"wrote {len(model):,} vectors of {model.dim} dims to {output}", err=True)


@main.command(short_help="Embed every line of a file into a .npy array (or many files on a Dask cluster).")
@_model_option()
@click.argument("inputs", metavar="INPUT...", nargs=-1, required=True,
                type=click.Path(path_type=Path, allow_dash=True))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="The .npy file to write: float32, one row per line of INPUT. With --workers or --scheduler: "
                   "a directory of shards.")
@click.option("--missing", "missing_file", type=click.Path(path_type=Path), default=None,
              help="Where to list the lines with no known word. Default: OUTPUT with .npy replaced by .missing.txt.")
@click.option("--fill", type=click.Choice(["nan", "zero"]), default="nan", show_default=True,
              help="Values of the row of a line with no known word.")
@click.option("--threads", type=click.IntRange(min=0, max=65_536), default=1, show_default=True,
              help="Threads of the parallel averaging kernel (0: all cores). 1: the serial kernel, which already "
                   "runs beside the tokenizer on a second core; more pays off only for models of many dimensions.")
@click.option("--unknown", type=click.Choice(["omit", "hash"]), default=None,
              help="Words not in the vocabulary: leave them out, or give each its fixed hashed vector, as "
                   "'similarity' does.  [default: the model's own rule]")
@click.option("--workers", type=click.IntRange(min=1, max=4096), default=None,
              help="Embed on a local Dask cluster of this many worker processes; OUTPUT is a directory of shards.")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Embed on a running Dask cluster (tcp://host:8786); OUTPUT is a directory of shards.")
@click.option("--block-mb", type=click.FloatRange(min=0.001, max=1 << 20), default=64.0, show_default=True,
              help="With a cluster: MB of plain text per block (one shard each); a compressed file is one block.")
@click.option("-q", "--quiet", is_flag=True, help="No progress line and no summary.")
def embed(model_path, inputs, output, missing_file, fill, threads, unknown, workers, scheduler, block_mb, quiet):
    """Embed every line of INPUT (one sentence per line; .gz/.bz2/.xz read too; - for stdin).

    Row i of OUTPUT is the sentence embedding of line i + 1 (the same as 'similarity' and
    Model.embed use), empty lines included; the numbers of the lines with nothing to
    average (their rows are NaN, or zero with --fill zero) are listed in the --missing
    file. Written block by block, so INPUT may be larger than memory, and renamed into
    place at the end.

    \b
    With --workers N (a local cluster) or --scheduler ADDRESS (Dask), several INPUT files
    are cut into blocks and embedded in parallel into OUTPUT/shard-*.npy, listed in
    OUTPUT/manifest.json; running the same command again skips the shards already done.
    Read them back with scbow.use.cluster.open_shards(OUTPUT). Needs: pip install 'scbow-numba[dask]'.
    """
    from .progress import Progress
    from .use.embedding import embed_file, missing_path_for

    if workers is not None and scheduler is not None:
        raise click.UsageError("give --workers (a local cluster) or --scheduler (a running one), not both")
    if workers is not None or scheduler is not None:
        if missing_file is not None:
            raise click.UsageError("--missing is for one output file; a cluster lists missing lines per shard")
        _embed_on_cluster(model_path, inputs, output, fill, unknown, workers, scheduler, block_mb, quiet)
        return
    if len(inputs) > 1:
        raise click.UsageError(f"{len(inputs)} inputs: one process embeds one INPUT; several need --workers N "
                               "(a local Dask cluster) or --scheduler ADDRESS")
    input_path = inputs[0]
    missing_file = missing_file or missing_path_for(output)
    _refuse_overwrite({"-o": output, "--missing": missing_file},
                      {"the model": _model_dir(model_path), "INPUT": input_path})
    model = _load(model_path)
    bar = Progress(0, unit="lines", enabled=None if not quiet else False)
    try:
        stats = embed_file(model, input_path, output, missing_file, fill=0.0 if fill == "zero" else float("nan"),
                           threads=threads, progress=lambda n: bar.update(n, prefix="embedding: "), unknown=unknown)
    finally:
        bar.close()
    if not quiet:
        rate = stats.lines / stats.seconds * 60 if stats.seconds > 0 else 0
        known = stats.known_tokens / stats.tokens if stats.tokens else 0
        rule = unknown or model.unknown_rule[0]
        what = "no known word" if rule == "omit" else "no word"
        click.echo(f"embedded {stats.lines:,} lines as {model.dim}-dim rows in {stats.seconds:.1f} s "
                   f"({rate:,.0f} lines/min), {100 * known:.1f}% of tokens averaged (unknown words: {rule}); "
                   f"{stats.missing:,} lines with {what} (listed in {missing_file}); wrote {output}", err=True)


def _embed_on_cluster(model_path, inputs, output, fill, unknown, workers, scheduler, block_mb, quiet):
    from .progress import Progress
    from .use.cluster import embed_on_cluster, refuse_model_output

    if output.suffix.lower() == ".npy":
        raise click.UsageError(f"-o {output}: on a cluster the output is a directory of shards, not one .npy file; "
                               f"give a directory name such as {output.with_suffix('')}")
    refuse_model_output(output)  # any model's directory, or inside one: the same line the first time and on resume
    model_dir = _model_dir(model_path)
    _refuse_overwrite({"-o": output}, [("the model", model_dir), *(("INPUT", p) for p in inputs)])
    _load(model_path)  # the model is checked here, once, with the messages of every command; workers map it
    bar = Progress(0, unit="shards", enabled=None if not quiet else False)

    def report(done, total):
        bar.total = total
        bar.update(done, prefix="embedding on the cluster: ", force=done == total)

    try:
        stats = embed_on_cluster(model_dir, inputs, output, workers=workers, scheduler=scheduler,
                                 fill=0.0 if fill == "zero" else float("nan"), unknown=unknown,
                                 block_bytes=max(int(block_mb * (1 << 20)), 1), progress=report)
    finally:
        bar.close()
    if not quiet:
        rate = stats.lines / stats.seconds * 60 if stats.seconds > 0 else 0
        resumed = f" ({stats.skipped:,} done by an earlier run)" if stats.skipped else ""
        click.echo(f"embedded {stats.lines:,} lines into {stats.shards:,} shards{resumed} on {stats.workers} "
                   f"workers in {stats.seconds:.1f} s ({rate:,.0f} lines/min); {stats.missing:,} lines with nothing "
                   f"to average; wrote {output}/manifest.json", err=True)


def _lookup_word(model, word: str) -> str:
    """``word`` as the model spells it: as given, else lowercased (our tokens are lowercase)."""
    i = model.get_index(word, -1)
    if i < 0:
        raise click.ClickException(f"{word!r} is not in the vocabulary of {len(model):,} words")
    return model.index_to_key[i]


@main.command(short_help="Nearest words of a word, or nearest lines of a sentence.")
@_model_option()
@click.argument("words", nargs=-1)
@click.option("--sentence", default=None, help="Find the lines of --in nearest to this sentence.")
@click.option("--in", "in_path", type=click.Path(path_type=Path, allow_dash=True), default=None,
              help="Text file searched for --sentence (one sentence per line; .gz/.bz2/.xz too).")
@click.option("--index", "index_path", type=click.Path(path_type=Path), default=None,
              help="Search a sentence index (made by 'scbow-numba index') for --sentence instead of scanning --in.")
@click.option("--ef", type=click.IntRange(min=1, max=1 << 20), default=None,
              help="With --index: search effort (more finds more of the true nearest lines, slower).  "
                   "[default: the index's]")
@click.option("--negative", multiple=True, help="A word to subtract from the query (repeatable).")
@click.option("-n", "--topn", type=click.IntRange(min=1, max=10**9), default=10, show_default=True, help="How many to print.")
def neighbors(model_path, words, sentence, in_path, index_path, ef, negative, topn):
    """Print the nearest words of WORD... by cosine, or the nearest sentences of a file.

    \b
    scbow-numba neighbors WORD              word<TAB>cosine, nearest first
    scbow-numba neighbors king woman --negative man
    scbow-numba neighbors --sentence "..." --in FILE    cosine<TAB>line number<TAB>line
    scbow-numba neighbors --sentence "..." --index DIR  the same from an index, in milliseconds

    Several words are averaged (as unit vectors), --negative words subtracted, as in
    gensim's most_similar; the query's own words are never printed.
    """
    if ef is not None and index_path is None:
        raise click.ClickException("--ef needs --index")
    if in_path is not None and index_path is not None:
        raise click.ClickException("give --in FILE (an exact scan) or --index DIR, not both")
    if sentence is None:
        if in_path is not None or index_path is not None:
            raise click.ClickException(f"{'--in' if in_path is not None else '--index'} needs --sentence: the "
                                       "sentence whose nearest lines to find")
        if not words:
            raise click.ClickException('give a WORD, or --sentence "..." --in FILE')
        model = _load(model_path)
        positive = [_lookup_word(model, w) for w in words]
        minus = [_lookup_word(model, w) for w in negative]
        try:
            found = model.most_similar(positive, topn=topn, negative=minus)
        except ValueError:  # the words cancel out: no direction left to compare with
            query = " + ".join(positive) + "".join(f" - {w}" for w in minus)
            raise click.ClickException(f"the query {query} is the zero vector (its words cancel out, or their "
                                       "vectors are zero); it has no nearest words") from None
        for word, cos in found:
            click.echo(f"{word}\t{cos:.4f}")
        return
    if words or negative:
        raise click.ClickException("give either WORDs or --sentence, not both")
    if in_path is None and index_path is None:
        raise click.ClickException("--sentence needs --in FILE or --index DIR: the sentences to search")
    from .use.embedding import nearest_sentences

    if index_path is not None:  # an index that records its model answers only with it: check before loading
        from .use.index import check_query_model

        check_query_model(index_path, _model_dir(model_path))
    model = _load(model_path)
    known, unknown = model.ids(sentence)
    hashed = model.unknown_rule[0] == "hash"
    if not known and not (hashed and unknown):
        what = "no word" if hashed else "no word in the vocabulary"
        raise click.ClickException(f"the sentence has {what}; it has no embedding")
    if unknown:
        what = "given hashed random vectors" if hashed else "left out"
        click.echo(f"unknown words {what}: {', '.join(unknown)}", err=True)
    if index_path is not None:
        from .use.index import search_command

        try:
            found = search_command(model, sentence, index_path, topn=topn, ef=ef, model_dir=_model_dir(model_path))
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
        several = len({f for _, f, _, _ in found}) > 1
        for cos, file, line, text in found:
            click.echo(f"{cos:.4f}\t{f'{file}:{line}' if several else line}\t{text}")
        return
    for cos, line, text in nearest_sentences(model, sentence, in_path, topn=topn):
        click.echo(f"{cos:.4f}\t{line}\t{text}")


@main.command(short_help="Build an approximate nearest-neighbour index of embedded sentences.")
@click.argument("embeddings", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="Index directory to write.")
@click.option("--text", type=click.Path(path_type=Path), default=None,
              help="The text file EMBEDDINGS was made from (needed for a .npy; shards name their files).")
@click.option("-m", "--model", "model_path", type=click.Path(path_type=Path), default=None,
              help="The model that embedded the lines, recorded so that queries with another one are refused.  "
                   "[default: the shards' model, else $SCBOW_MODEL or ~/.local/share/scbow-numba/model if it exists]")
@click.option("--M", "m", type=click.IntRange(min=4, max=512), default=32, show_default=True,
              help="HNSW links per node: more finds more of the true neighbours, costs memory and build time.")
@click.option("--ef-construction", type=click.IntRange(min=8, max=1 << 16), default=200, show_default=True,
              help="HNSW build effort.")
@click.option("--threads", type=click.IntRange(min=0, max=65_536), default=0, show_default=True,
              help="Build threads (0: all cores).")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
def index(embeddings, output, text, model_path, m, ef_construction, threads, quiet):
    """Index the rows of EMBEDDINGS (an 'embed' .npy, or a directory of shards) for fast search.

    \b
    scbow-numba embed -m model books.txt -o books.npy
    scbow-numba index books.npy --text books.txt -m model -o books.index
    scbow-numba neighbors -m model --sentence "he walked home" --index books.index

    An HNSW graph (faiss) over the L2-normalised rows: cosine search in milliseconds
    instead of a scan of every line. Rows with no embedding are left out. Needs:
    pip install 'scbow-numba[index]'.
    """
    from .use.index import index_command

    _refuse_overwrite({"-o": output}, [("EMBEDDINGS", embeddings), ("--text", text), ("the model", model_path)],
                      replaces_dirs=True)
    summary = index_command(embeddings, output, text=text, M=m, ef_construction=ef_construction, quiet=quiet,
                            model=model_path, threads=threads)
    if not quiet:
        click.echo(summary, err=True)


@main.command(short_help="Add words from larger pretrained vectors (vocabulary expansion).")
@_model_option()
@click.option("--source", type=click.Path(path_type=Path), required=True,
              help="Pretrained vectors with a larger vocabulary (word2vec text or binary, or a model directory).")
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="Model directory to write.")
@click.option("--max-words", type=click.IntRange(min=0, max=2**62), default=0, show_default=True,
              help="Add only the first N new words of --source, in its order (usually most frequent first; 0: all).")
@click.option("--affine", is_flag=True, help="Fit x M + b instead of the linear map x M.")
def expand(model_path, source, output, max_words, affine):
    """Add the words of --source the model lacks, mapped into its space (vocabulary expansion).

    A linear map from the --source space into ours is fitted by least squares on the words
    both have (skip-thought, Kiros et al. 2015, section 2.2); every --source word that our
    tokenizer can produce and the model lacks gets the image of its vector. Reports the fit
    (R2 on the shared words; mean cosine of mapped and true vectors on a held-out tenth)
    and the words added.
    """
    import math

    import numpy as np

    from .errors import ModelError
    from .training.pretrained import expand_vocabulary
    from .vectors.formats import check_output_dir, load_model, save_model

    _refuse_overwrite({"-o": output}, {"the model": _model_dir(model_path), "--source": source}, replaces_dirs=True)
    output = check_output_dir(output)
    model = _load(model_path)
    if not source.exists():
        raise click.ClickException(f"{source}: no such vectors file")
    vectors = load_model(source)
    with np.errstate(all="ignore"):  # an overflow is reported below, not as a numpy warning
        new, r = expand_vocabulary(model, vectors, max_words=max_words, intercept=affine, source_name=str(source))
    if not all(x is None or math.isfinite(x) for x in (r["r2"], r["heldout_cosine"])):
        raise click.ClickException("cannot fit a map: the model's vectors do not vary on the shared words (all "
                                   "equal or zero), so there is nothing to map onto; nothing was written")
    from .vectors.formats import check_vectors

    try:
        check_vectors(output, np.asarray(new.vectors), len(new.vocab))
    except ModelError as exc:
        raise click.ClickException(f"the mapped --source vectors are not usable ({str(exc).split('damaged model: ')[-1]}); "
                                   "nothing was written") from None
    save_model(new, output)
    held = "" if r["heldout_cosine"] is None else (
        f", mean cosine {r['heldout_cosine']:.3f} on {r['heldout_words']:,} held-out words")
    click.echo(f"fitted a {r['source_dim']} -> {model.dim} {'affine' if affine else 'linear'} map on "
               f"{r['shared']:,} shared words (R2 {r['r2']:.3f}{held}); added {r['added']:,} words "
               f"({r['vocab_before']:,} -> {r['vocab_after']:,}); left out {r['skipped_not_token']:,} source words "
               f"that are not single lowercase tokens" +
               (f" and {r['skipped_max_words']:,} beyond --max-words" if r["skipped_max_words"] else "") +
               f"; model: {output}", err=True)
    if r["r2"] < WEAK_FIT_R2:
        click.echo(f"warning: the map explains only {100 * r['r2']:.1f}% of the variance of our vectors: least "
                   "squares then predicts little more than their mean, so the added vectors are all close to it and "
                   "say little about their words (the --source space does not predict ours linearly)", err=True)


@main.command("cache", short_help="List or clear the cache of encoded corpora.")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=None,
              help="The cache to look at. Default: $SCBOW_CACHE_DIR or ~/.cache/scbow-numba/corpus.")
@click.option("--clear", is_flag=True, help="Delete every cached corpus (they are rebuilt when next needed).")
def cache_command(cache_dir, clear):
    """List the encoded corpora cached by 'train' (size, files, date), or delete them.

    'train' encodes a corpus once and keeps the encoding, keyed by the files (path, size,
    modification time) and the vocabulary settings, so that a rerun starts at once. An
    entry is about 4 bytes per token; nothing is removed on its own.
    """
    import time

    from .progress import plural
    from .training.cache import cache_entries, clear_cache, default_cache_dir, describe

    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if clear:
        removed, freed = clear_cache(root)
        click.echo(f"removed {plural(removed, 'cached corpus', 'cached corpora')} ({_mb(freed)}) from {root}",
                   err=True)
        return
    foreign: list[Path] = []
    entries = cache_entries(root, foreign)
    for e in entries:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e["modified"]))
        click.echo(f"{_mb(e['bytes']):>10}  {when}  {Path(e['path']).name}  {describe(e)}")
    total = sum(e["bytes"] for e in entries)
    click.echo(f"{plural(len(entries), 'cached corpus', 'cached corpora')}, {_mb(total)} in {root}", err=True)
    if foreign:
        click.echo(f"note: {root} also holds {plural(len(foreign), 'item')} scbow-numba did not write "
                   f"({', '.join(p.name for p in foreign[:3])}{', ...' if len(foreign) > 3 else ''}); "
                   "they are not listed and never removed", err=True)


WEAK_FIT_R2 = 0.2  # below this R2, `expand` warns that the added vectors carry little


def _data_places(name: str) -> list[Path]:
    """Where the project's data folder may hold ``name``: beside the current directory, then
    beside the checkout this package runs from (so that commands work from any directory of a
    source checkout; an installed package has no such place)."""
    places = [Path("shared/data") / name, Path("../shared/data") / name]
    checkout = Path(__file__).resolve().parents[1]
    if (checkout / "setup.cfg").is_file():
        places.append(checkout.parent / "shared" / "data" / name)
    out = []
    for p in places:
        if p not in out:
            out.append(p)
    return out


def default_sts_paths() -> list[Path]:
    """``$SCBOW_STS_DIR``, else ``shared/data/sts`` or ``../shared/data/sts`` from here or from the checkout."""
    env = os.environ.get("SCBOW_STS_DIR")
    if env and not Path(env).is_dir():
        raise click.ClickException(f"SCBOW_STS_DIR={env}: no such directory")
    candidates = [Path(env)] if env else _data_places("sts")
    for c in candidates:
        if c.is_dir():
            files = sorted(c.glob("*.tsv"))
            if not files:
                raise click.ClickException(f"{c}: no *.tsv STS files in the default STS folder")
            return files
    raise click.ClickException("no STS files given and no default STS folder found (looked in "
                               f"{', '.join(map(str, candidates))}); pass files or set SCBOW_STS_DIR")


def default_sts_dev() -> Path:
    """``$SCBOW_STS_DEV``, else ``shared/data/sts-dev/stsb.dev.tsv`` or ``../shared/data/...`` from here."""
    env = os.environ.get("SCBOW_STS_DEV")
    if env:
        if not Path(env).is_file():
            raise click.ClickException(f"SCBOW_STS_DEV={env}: no such file")
        return Path(env)
    places = [p / "stsb.dev.tsv" for p in _data_places("sts-dev")]
    for c in places:
        if c.is_file():
            return c
    raise click.ClickException(f"no STS dev set for --eval-every: none found (looked for {', '.join(map(str, places))}); "
                               "pass --eval-dev FILE or set SCBOW_STS_DEV")


def _sts_files(paths) -> list[Path]:
    """STS files, a folder standing for the *.tsv files in it."""
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = sorted(p.glob("*.tsv"))
            if not found:
                raise click.ClickException(f"{p}: no *.tsv STS files in this directory")
            files.extend(found)
        elif not p.exists():
            raise click.ClickException(f"{p}: no such STS file")
        else:
            files.append(p)
    return files


def _r(x) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def _curve_hook(eval_every, eval_dev, eval_sets, eval_test, config):
    """``train``'s learning-curve hook, or None without --eval-every; checks everything before training."""
    if eval_every is None:
        if eval_dev is not None or eval_sets or eval_test:
            raise click.ClickException("--eval-dev, --eval-sets and --eval-test need --eval-every N")
        return None
    from .text.units import parse_count
    from .training.curve import CurveHook
    from .use.evaluate import read_sts

    try:
        every = parse_count(eval_every)
    except ValueError as exc:
        raise click.ClickException(f"--eval-every {exc}") from None
    dev_path = eval_dev if eval_dev is not None else default_sts_dev()
    if not dev_path.is_file():
        raise click.ClickException(f"--eval-dev {dev_path}: no such file")
    test_files = _sts_files(list(eval_sets) + (default_sts_paths() if eval_test else []))
    k = config.components_removed
    return CurveHook(read_sts(dev_path), every, k, config.seed, tests=[read_sts(f) for f in test_files],
                     sources={"dev": str(dev_path), "test": [str(f) for f in test_files] or None},
                     unknown=config.unknown, unknown_scale=config.unknown_scale)


@main.command(short_help="Draw the learning curve recorded by train --eval-every.")
@click.argument("model_arg", metavar="[MODEL]", required=False, type=click.Path(path_type=Path))
@_model_option("Model directory or curve.json file (the same as MODEL). Default: $SCBOW_MODEL or "
               "~/.local/share/scbow-numba/model.")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("curve.png"), show_default=True,
              help="The PNG file to write.")
@click.option("--title", default=None, help="Title of the plot. Default: from the model's settings.")
def plot(model_arg, model_path, output, title):
    """Draw the learning curve of MODEL (recorded by 'train --eval-every') as a PNG.

    Pearson on the dev set against examples seen, after the post-processing the saved
    model gets (solid) and as trained (dashed), the test-set mean when it was recorded,
    and the ends of epochs. MODEL (or -m MODEL, as in the other commands) is a model
    directory or a curve.json file; default: $SCBOW_MODEL or ~/.local/share/scbow-numba/model.
    """
    from .files import check_output_file
    from .vectors.formats import CURVE_FILE, load_curve

    path = _model_arg(model_arg, model_path)
    _refuse_overwrite({"-o": output}, {"the model": path})
    check_output_file(output, "curve.png")
    config = {}
    if path.is_dir():
        if not (path / CURVE_FILE).is_file():
            if not (path / "config.json").is_file():
                raise click.ClickException(f"{path}: not a model directory (no config.json)")
            raise click.ClickException(f"{path}: the model has no learning curve ({CURVE_FILE}); "
                                       "train it with --eval-every N to record one")
        from .files import read_json

        meta = read_json(path / "config.json", what="damaged model")
        config = meta.get("config") if isinstance(meta, dict) else None
        config = config if isinstance(config, dict) else {}
        curve = load_curve(path / CURVE_FILE)
    elif path.is_file():
        curve = load_curve(path)
    else:
        raise click.ClickException(f"{path}: no such model or curve file")
    if not curve["points"]:
        raise click.ClickException(f"{path}: the learning curve has no points")
    try:
        from .use.plot import plot_curve
    except ImportError:
        raise click.ClickException("plotting needs matplotlib: pip install 'scbow-numba[plot]'") from None
    plot_curve(curve, output, title=title, config=config)
    click.echo(f"wrote {output} ({len(curve['points'])} points)", err=True)


@main.command(short_help="Score a model on STS sets, with baselines and significance.")
@_model_option()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--baseline", type=click.Path(path_type=Path), default=None,
              help="Word vectors to compare with (word2vec text or binary, or a model directory).")
@click.option("--control", type=click.Choice(["overlap"]), default=None,
              help="Add an untrained word-overlap control beside the model (-m, else the default model; the "
                   "control alone when there is no default model).")
@click.option("--resamples", type=click.IntRange(min=100, max=1_000_000), default=1000, show_default=True,
              help="Bootstrap resamples for the 95% interval of a Pearson difference.")
@click.option("--unknown", type=click.Choice(["omit", "hash"]), default=None,
              help="Words not in the vocabulary (of the model and --baseline): leave them out, or give each "
                   "a fixed random vector from a hash of the word.  [default: each model's own rule, hash "
                   "for models trained by this version, omit for word2vec files]")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def evaluate(model_path, paths, baseline, control, resamples, unknown, as_json):
    """Score a model on STS files (gold<TAB>s1<TAB>s2) or folders of *.tsv.

    With no PATHS: the paper's SemEval sets from $SCBOW_STS_DIR, else shared/data/sts or
    ../shared/data/sts (from the current directory, or beside a source checkout). Per set:
    pairs, pairs scored (a pair with a side without any known word is not scored), Pearson
    and Spearman; then the mean over sets and the mean weighted
    by pairs scored. --baseline and --control add column groups, each compared with the
    model by a paired Wilcoxon test and a bootstrap interval of the Pearson difference.
    """
    import functools
    import json

    from .use.evaluate import OverlapControl, evaluate_systems, format_table, read_sts
    from .vectors.formats import default_model_dir, load_model

    def embedder(model):
        return functools.partial(model.embed, unknown=unknown) if unknown is not None else model.embed

    sets = [read_sts(f) for f in _sts_files(paths or default_sts_paths())]
    systems, sources = {}, {}
    if model_path is not None or control is None or (default_model_dir() / "config.json").is_file():
        path = model_path or default_model_dir()
        systems["model"], sources["model"] = embedder(load_model(path)), str(path)
    if baseline is not None:
        if not baseline.exists():
            raise click.ClickException(f"{baseline}: no such baseline vectors file")
        systems["baseline"], sources["baseline"] = embedder(load_model(baseline)), str(baseline)
    if control == "overlap":
        systems["overlap"] = OverlapControl(dim=300).embed
        sources["overlap"] = "untrained control: a fixed random 300-d vector per distinct token, averaged over all tokens"
    if unknown is not None:
        sources = {k: v + (f" (unknown words: {unknown})" if k != "overlap" else "") for k, v in sources.items()}
    report = {"sources": sources, **evaluate_systems(systems, sets, resamples=resamples)}
    click.echo(json.dumps(report, indent=1) if as_json else format_table(report))


if __name__ == "__main__":
    main()
