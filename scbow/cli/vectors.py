"""``similarity``, ``info`` and ``export``: what a model says and how it travels."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from ..outputs import refuse_overwrite
from ..progress import plural
from .app import Count, encoding_option, load, main, model_arg, model_dir, model_option, say, unknown_option


@main.command(short_help="Cosine similarity of two sentences (or of many pairs).")
@model_option()
@click.argument("sentence1", required=False)
@click.argument("sentence2", required=False)
@click.option("--pairs", "pairs_path", type=click.Path(path_type=Path, allow_dash=True), default=None,
              help="Score every pair of this file instead (- for stdin): one pair a line, s1<TAB>s2, or "
                   "gold<TAB>s1<TAB>s2 as in STS files (blank lines are skipped, as 'evaluate' skips them); one "
                   "cosine a line on stdout, in order.")
@encoding_option()
@unknown_option()
def similarity(model_path, sentence1, sentence2, pairs_path, encoding, unknown):
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
        from ..use.pairs import score_pairs

        total, unscored = score_pairs(load(model_path), pairs_path, unknown=unknown, warn=say,
                                       encoding=encoding)
        say(f"scored {plural(total, 'pair')}" + (f"; {unscored:,} had a side with nothing to average (printed as nan)"
                                                if unscored else ""))
        return
    if click.get_current_context().get_parameter_source("encoding").name != "DEFAULT":
        raise click.ClickException(f"--encoding {encoding}: it is the encoding of the --pairs file, and none is given")
    if sentence2 is None:
        raise click.ClickException('give two sentences: scbow-numba similarity "SENTENCE 1" "SENTENCE 2" '
                                   "(or --pairs FILE)")
    from ..use.embedding import sentence_similarity

    click.echo(f"{sentence_similarity(load(model_path), sentence1, sentence2, unknown, note=say):.4f}")


@main.command(short_help="What a model is: size, corpus, settings and recorded scores.")
@click.argument("model_arg_", metavar="[MODEL]", required=False, type=click.Path(path_type=Path))
@model_option("Model directory or word2vec/GloVe file (the same as MODEL).")
@click.option("--json", "as_json", is_flag=True, help="Print everything recorded in the model as JSON.")
def info(model_arg_, model_path, as_json):
    """Describe MODEL: dimensions and vocabulary, the corpus and settings it was trained with,
    the training run, and the scores recorded in it (the learning curve of --eval-every).

    Settings that differ from this version's defaults are marked with *.
    """
    from ..use.describe import describe, model_record, wrapped

    path = model_arg(model_arg_, model_path)
    model = load(path)
    click.echo(model_record(model, path) if as_json else
               "\n".join(wrapped(describe(model, path), shutil.get_terminal_size().columns)))


@main.command(short_help="Export the model: word2vec file, or a sentence-transformers or model2vec folder.")
@model_option()
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="File (word2vec) or folder (sentence-transformers, model2vec) to write.")
@click.option("--format", "fmt", metavar="[word2vec|sentence-transformers|model2vec]", default="word2vec",
              show_default=True, help="word2vec: the word vectors as a text or binary file. sentence-transformers, "
                                      "model2vec: a folder those libraries load offline, whose encode() gives this "
                                      "model's sentence vectors, unknown words split into the model's pieces "
                                      "(see docs/export.md).")
@click.option("--binary/--text", default=None,
              help="word2vec binary or text format. Default: binary for a name ending in .bin, else text.")
@click.option("--part", type=click.Choice(["all", "sentence", "word"]), default=None,
              help="Columns to write (word2vec): the whole rows (what sentences average), or one part of a model with "
                   "a word part.  [default: word, the word part (what word similarity lives on), for a model with "
                   "one; else all]")
@click.option("--min-count", type=Count(minimum=0, what="occurrences"), default=0,
              help="Leave out the words seen fewer times in the training corpus (a word with no recorded count is "
                   "kept). In a folder, a word left out is unknown.  [default: 0, all]")
@click.option("--limit", type=Count(minimum=0, what="words"), default=0,
              help="Write only the first N words, the most frequent (0: all).  [default: 0]")
@click.option("--add-words", "add_words", type=click.Path(path_type=Path), multiple=True,
              help="Folders of a model that hashes unknown words (repeatable): text files, such as the training "
                   "corpus, whose words the model lacks get rows holding their hashed vectors, so the folder scores as "
                   "the model's hashing does on them; a word --min-count or --limit left out gets its own row back.")
@encoding_option("Folders: the --add-words files'")
@click.option("--license", "license_", default=None, help="Folders: the licence named in the model card's front matter.")
def export(model_path, output, fmt, binary, part, min_count, limit, add_words, encoding, license_):
    """Export the model: its word vectors as a word2vec text (default) or binary file, or the
    whole model as a folder that sentence-transformers or model2vec loads.

    \b
    scbow-numba export -o vectors.bin
    scbow-numba export --format sentence-transformers -o my-st-model
    scbow-numba export --format model2vec -o my-m2v-model

    A folder holds the rows, a tokenizer.json that splits text exactly as this model does,
    the libraries' settings and a model card (README.md); it is written whole beside the
    output and renamed into place. Unknown words are split there into the pieces the model
    splits them into (rows of their own), so the folder embeds as the model does.
    """
    from ..vectors.export import check_export, export_format
    from ..vectors.export import export as write

    spec = export_format(fmt)
    inputs = {"the model": model_dir(model_path), **{f"--add-words {p}": p for p in add_words}}
    refuse_overwrite({"-o": output}, inputs, replaces_dirs=spec.folder)
    options = {"binary": binary, "part": part, "add_words": add_words, "license": license_, "encoding": encoding}
    check_export(output, spec.name, **options)  # everything checked before the model is read
    result = write(load(model_path), output, spec.name, min_count=min_count, limit=limit, note=say, **options)
    say(*result.lines())

