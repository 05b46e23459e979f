"""``train``, ``prepare`` and ``cache``: from text to a model."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from ..config import FIELD_CHOICES, FIELD_HELP, TrainConfig
from ..outputs import named
from ..progress import Progress
from ..text.prepare import DEFAULT_JSONL_FIELD, DEFAULT_LANGUAGE, DEFAULT_SEGMENTER, DOCUMENT_MODES, SEGMENTERS
from ..text.prepare import prepare as prepare_corpus
from .app import DEFAULT_MODEL, Count, GroupedCommand, encoding_option, main, say

# the hyperparameters that are counts, and what they count
COUNT_FIELDS = {"min_count": "occurrences", "max_vocab": "words", "count_floor": "occurrences",
                "max_length": "words"}


def hyperparameter_options(command):
    """One option per TrainConfig field (``--min-count`` for ``min_count``), with its default,
    type and the description config.FIELD_HELP gives it: the hyperparameters are declared once."""
    for field in reversed(dataclasses.fields(TrainConfig)):
        kind = FIELD_CHOICES.get(field.name)
        if kind:
            kind = click.Choice(kind)
        elif field.name in COUNT_FIELDS:  # counts as people type them: 100k, 2M, 1e6
            kind = Count(minimum=0 if field.default == 0 else 1, what=COUNT_FIELDS[field.name])
        else:
            kind = {"int": int, "float": float}[field.type]
        command = click.option(f"--{field.name.replace('_', '-')}", field.name, type=kind, default=field.default,
                               show_default=True, help=FIELD_HELP[field.name])(command)
    return command


# train --help: its 38 options under five headings
TRAIN_OPTION_GROUPS = [
    ("Data", ["output", "encoding", "min_count", "max_vocab", "cache_dir", "no_cache"]),
    ("Model", ["dim", "word_passes", "word_dim", "word_mix", "word_context", "word_noise", "word_sample_count",
               "frequency_weight", "unknown", "unknown_scale", "common_components", "max_length", "init_std"]),
    ("Optimisation", ["negatives", "negative_mode", "epochs", "lr", "min_lr_fraction", "weight_decay",
                      "count_power", "count_floor", "word_lr", "seed"]),
    ("Run control", ["threads", "device", "checkpoint_every", "resume", "quiet"]),
    ("Evaluation", ["eval_every", "eval_dev", "eval_sets", "eval_test"]),
]


@main.command(cls=GroupedCommand, option_groups=TRAIN_OPTION_GROUPS,
              short_help="Train a model on a corpus (one sentence per line).")
@click.argument("corpus", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help=f"Model directory to write. {DEFAULT_MODEL}")
@encoding_option()
@hyperparameter_options
@click.option("--cache-dir", type=click.Path(path_type=Path), default=None,
              help="Where encoded corpora are cached. Default: $SCBOW_CACHE_DIR or ~/.cache/scbow-numba/corpus.")
@click.option("--no-cache", is_flag=True, help="Encode the corpus without reading or writing the cache.")
@click.option("--checkpoint-every", metavar="N|DURATION", default=None, show_default="off",
              help="Write a checkpoint (OUTPUT.checkpoint) every N examples (500000, 500k, 2M, 1e6; at the first "
                   "batch end at or after each multiple) or every DURATION (30s, 10m, 2h). A lowercase m is minutes "
                   "here, an uppercase M a million. Ctrl-C and SIGTERM always write one.")
@click.option("--resume", is_flag=True,
              help="Continue the interrupted run into OUTPUT from its checkpoint (same corpus and settings).")
@click.option("-q", "--quiet", is_flag=True, help="No progress line and no summary.")
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
def train(corpus, output, encoding, cache_dir, no_cache, quiet, checkpoint_every, resume,
          eval_every, eval_dev, eval_sets, eval_test, **hyper):
    """Train a model on CORPUS: text files (.gz/.bz2/.xz too) or directories of them.

    One sentence per line; an empty line, and the end of each file, ends a document.
    Japanese, Chinese and Thai need nothing installed: the tokenizer cuts text written
    without spaces into short units itself (see the README's "Tokenizer"). 'prepare
    --segmenter lines' makes a Japanese or Chinese corpus with no library (it cuts their
    sentences at 。！？).
    """
    from ..training import session
    from ..vectors.modeldir import default_model_dir

    config = TrainConfig(**hyper)
    output = named(output or default_model_dir())  # '-o .' names the current directory
    result = session.train_session(corpus, config, output, cache_dir=cache_dir, use_cache=not no_cache, quiet=quiet,
                                   checkpoint_every=checkpoint_every, resume=resume,
                                   eval_every=eval_every, eval_dev=eval_dev, eval_sets=eval_sets,
                                   eval_test=eval_test, warn=say, encoding=encoding)
    if not quiet:
        say(*session.summary_lines(result, config, output))


@main.command(short_help="Turn raw documents into a corpus for train (sentence splitting).")
@click.argument("inputs", metavar="INPUT...", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="Corpus file to write for 'train' (.gz, .bz2 or .xz compress it).")
@click.option("--jsonl-field", metavar="NAME", default=DEFAULT_JSONL_FIELD, show_default=True,
              help="The field of each JSON Lines record (.jsonl, .ndjson) that holds its text.")
@click.option("--documents", type=click.Choice(DOCUMENT_MODES), default=DOCUMENT_MODES[0], show_default=True,
              help="What makes a document: each file (and each JSON Lines record), or each block of lines "
                   "between blank lines.")
@click.option("--segmenter", type=click.Choice(list(SEGMENTERS)), default=DEFAULT_SEGMENTER, show_default=True,
              help="How sentences are found: nupunkt (English; pip install 'scbow-numba[prepare]'), sentencex "
                   "(about 300 languages, see --language), blingfire, pysbd, syntok (each pip install NAME), or "
                   "lines: the text is already one sentence per line.")
@click.option("--language", default=DEFAULT_LANGUAGE, show_default=True,
              help="ISO 639-1 code of the text, for sentencex and pysbd (nupunkt and syntok know English only).")
@click.option("--strict", is_flag=True,
              help="Stop at a JSON Lines line that is not JSON, not an object or has no text in --jsonl-field, "
                   "writing nothing (default: skip such lines, count them and name the first few).")
@encoding_option()
@click.option("-q", "--quiet", is_flag=True, help="No progress line and no summary.")
def prepare(inputs, output, jsonl_field, documents, segmenter, language, strict, encoding, quiet):
    """Turn raw documents into a corpus for 'train': one sentence per line, a blank line between documents.

    INPUT: text files (.txt, .text, .md), JSON Lines files (.jsonl, .ndjson; one record, one
    document), any of them .gz/.bz2/.xz, and folders of them (searched recursively). Lines
    of a paragraph are joined and split into sentences; a blank line ends a paragraph.
    Read in blocks, so inputs larger than memory work; OUTPUT is renamed into place at the end.
    The segmenters were compared in benchmarks/results/segmenters.md.

    Japanese and Chinese need no library, whatever the segmenter: a line that holds Han or kana
    is a paragraph of its own, cut after 。！？ (and their kin) outside quotes and brackets
    (「」『』（）“” kept whole); '--segmenter lines' then reads such text with nothing installed.
    Only the --jsonl-field of a record is read: its other fields (an Aozora Bunko record's
    title, author, source) are not written.
    """
    bar = Progress(0, unit="B", quiet=quiet)
    try:
        stats = prepare_corpus(inputs, output, jsonl_field=jsonl_field, documents=documents, segmenter=segmenter,
                               language=language, progress=lambda done, total: bar.update(done, "preparing: ", total=total),
                               strict=strict, encoding=encoding)
    finally:
        bar.close()
    say(*stats.warnings())
    if not quiet:
        say(stats.summary())


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
    from ..training.cache import cache_listing, clear_listing, default_cache_dir

    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if clear:
        say(clear_listing(root))
        return
    rows, notes = cache_listing(root)
    for row in rows:
        click.echo(row)
    say(*notes)
