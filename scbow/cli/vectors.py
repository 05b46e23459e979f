"""``similarity``, ``info``, ``export`` and ``expand``: what a model says and how it travels."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ..outputs import refuse_overwrite
from ..progress import plural
from .app import Count, echo_lines, load, main, model_arg, model_dir, model_option, say


@main.command(short_help="Cosine similarity of two sentences (or of many pairs).")
@model_option()
@click.argument("sentence1", required=False)
@click.argument("sentence2", required=False)
@click.option("--pairs", "pairs_path", type=click.Path(path_type=Path, allow_dash=True), default=None,
              help="Score every pair of this file instead (- for stdin): one pair a line, s1<TAB>s2, or "
                   "gold<TAB>s1<TAB>s2 as in STS files (blank lines are skipped, as 'evaluate' skips them); one "
                   "cosine a line on stdout, in order.")
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
        from ..use.pairs import score_pairs

        total, unscored = score_pairs(load(model_path), pairs_path, unknown=unknown, warn=say)
        say(f"scored {plural(total, 'pair')}" + (f"; {unscored:,} had a side with nothing to average (printed as nan)"
                                                if unscored else ""))
        return
    if sentence2 is None:
        raise click.ClickException('give two sentences: scbow-numba similarity "SENTENCE 1" "SENTENCE 2" '
                                   "(or --pairs FILE)")
    from ..use.embedding import sentence_words

    model = load(model_path)
    blank = [n for n, sentence in enumerate((sentence1, sentence2), 1) if not sentence.strip()]
    if blank:
        raise click.ClickException(f"no similarity: {' and '.join(f'sentence {n}' for n in blank)} "
                                   f"{'is' if len(blank) == 1 else 'are'} empty")
    sides = [sentence_words(model, sentence, unknown) for sentence in (sentence1, sentence2)]
    for n, side in enumerate(sides, 1):
        if side.unknown_note():
            click.echo(f"sentence {n}: {side.unknown_note()}", err=True)
    empty = [n for n, side in enumerate(sides, 1) if not side.has_embedding]
    if empty:
        which = " and ".join(f"sentence {n}" for n in empty)
        raise click.ClickException(f"no similarity: {which} has {sides[empty[0] - 1].lacks}")
    value = float(model.similarity_pairwise([sentence1], [sentence2], unknown=unknown)[0])
    if value != value:  # a side averages to the zero vector: its words' vectors cancel out or are zero
        raise click.ClickException("no similarity: a sentence's average is the zero vector (its words' vectors "
                                   "are zero or cancel out), so it has no direction to compare")
    click.echo(f"{value:.4f}")


@main.command(short_help="What a model is: size, corpus, settings and recorded scores.")
@click.argument("model_arg_", metavar="[MODEL]", required=False, type=click.Path(path_type=Path))
@model_option("Model directory or word2vec/GloVe file (the same as MODEL). Default: $SCBOW_MODEL or "
               "~/.local/share/scbow-numba/model.")
@click.option("--json", "as_json", is_flag=True, help="Print everything recorded in the model as JSON.")
def info(model_arg_, model_path, as_json):
    """Describe MODEL: dimensions and vocabulary, the corpus and settings it was trained with,
    the training run, and the scores recorded in it (the learning curve of --eval-every).

    Settings that differ from this version's defaults are marked with *.
    """
    from ..use.describe import describe, model_record

    path = model_arg(model_arg_, model_path)
    model = load(path)
    click.echo(model_record(model, path) if as_json else "\n".join(describe(model, path)))


EXPORT_FORMATS = ("word2vec", "sentence-transformers", "model2vec")


@main.command(short_help="Export the model: word2vec file, or a sentence-transformers or model2vec folder.")
@model_option()
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="File (word2vec) or folder (sentence-transformers, model2vec) to write.")
@click.option("--format", "fmt", metavar="[word2vec|sentence-transformers|model2vec]", default="word2vec",
              show_default=True, help="word2vec: the word vectors as a text or binary file. sentence-transformers, "
                                      "model2vec: a folder those libraries load offline, whose encode() gives this "
                                      "model's sentence vectors, unknown words left out (see docs/export.md).")
@click.option("--binary/--text", default=None,
              help="word2vec binary or text format. Default: binary for a name ending in .bin, else text.")
@click.option("--part", type=click.Choice(["all", "sentence", "word"]), default="all", show_default=True,
              help="Columns to write (word2vec): the whole rows (what sentences average), or one part of a model with "
                   "a word part (the word part is what word similarity lives on).")
@click.option("--min-count", type=Count(minimum=0, what="occurrences"), default=0,
              help="Leave out the words seen fewer times in the training corpus (a word with no recorded count is "
                   "kept). In a folder, a word left out is unknown.  [default: 0, all]")
@click.option("--limit", type=Count(minimum=0, what="words"), default=0,
              help="Write only the first N words, the most frequent (0: all).  [default: 0]")
@click.option("--add-words", "add_words", type=click.Path(path_type=Path), multiple=True,
              help="Folders only (repeatable): text files, such as the training corpus, whose words the model lacks "
                   "get rows holding the hashed vectors this model gives unknown words, so the folder scores as "
                   "the model's hashing does on them (a larger folder); a word --min-count or --limit left out gets its own "
                   "row back.")
@click.option("--license", "license_", default=None, help="Folders: the licence named in the model card's front matter.")
def export(model_path, output, fmt, binary, part, min_count, limit, add_words, license_):
    """Export the model: its word vectors as a word2vec text (default) or binary file, or the
    whole model as a folder that sentence-transformers or model2vec loads.

    \b
    scbow-numba export -o vectors.bin
    scbow-numba export --format sentence-transformers -o my-st-model
    scbow-numba export --format model2vec -o my-m2v-model

    A folder holds the rows, a tokenizer.json that splits text exactly as this model does,
    the libraries' settings and a model card (README.md); it is written whole beside the
    output and renamed into place. Unknown words are left out of the average there (their
    hashed vectors cannot travel; --add-words adds rows for the words of given files).
    """
    from ..files import foreign, output_path, resolved
    from ..outputs import refuse_inside_ours

    name = {"st": "sentence-transformers", "sentence_transformers": "sentence-transformers"}.get(fmt.lower(), fmt.lower())
    if name not in EXPORT_FORMATS:
        raise click.ClickException(f"--format {fmt!r}: choose one of {', '.join(EXPORT_FORMATS)}")
    inputs = {"the model": model_dir(model_path)}
    inputs.update({f"--add-words {p}": p for p in add_words})
    refuse_overwrite({"-o": output}, inputs, replaces_dirs=name != "word2vec")
    if name == "word2vec":
        if add_words:
            raise click.ClickException("--add-words applies to the folder formats (sentence-transformers, model2vec)")
        if license_ is not None:
            raise click.ClickException("--license applies to the folder formats (sentence-transformers, model2vec)")
        _export_word2vec(model_path, output, binary, part, min_count, limit)
        return
    if binary is not None:
        raise click.ClickException(f"--binary/--text apply to --format word2vec, not {name}")
    if part != "all":
        raise click.ClickException(f"--part {part}: a {name} folder embeds sentences with the whole rows; "
                                   "--part applies to --format word2vec")
    from ..vectors.hub import M2V_FILES, ST_FILES

    if output.name in ("", "..") or resolved(output) == resolved(Path.cwd()):  # a link loop resolves, not raises
        raise click.ClickException(f"-o {output}: give the new folder a name (the export replaces a folder whole; "
                                   "not the current one)")
    if os.path.exists(output) and not output.is_dir():  # a dangling link is no folder yet: its target is made
        raise click.ClickException(f"-o {output}: exists and is not a folder; a {name} export is a folder "
                                   "(choose a new name)")
    output_path(output)  # a link into a folder that does not exist is refused, as every -o LINK is
    refuse_inside_ours(output)
    own, other = (ST_FILES, M2V_FILES) if name == "sentence-transformers" else (M2V_FILES, ST_FILES)
    why = foreign(output, own) if output.is_dir() else None
    if why is not None:
        if foreign(output, other) is None:  # the other format's export, which we wrote
            theirs = "model2vec" if name == "sentence-transformers" else "sentence-transformers"
            raise click.ClickException(f"-o {output}: holds a {theirs} export; a {name} export is not written over "
                                       "it (choose a new name)")
        raise click.ClickException(f"-o {output}: {why}, so it is not replaced (move that away)")
    from ..text.reader import check_regular

    for path in add_words:
        check_regular(path, f"--add-words {path}")
    _export_folder(model_path, output, name, min_count, limit, add_words, license_)


def _export_word2vec(model_path, output, binary, part, min_count, limit):
    from ..vectors.formats import export_word2vec, part_columns
    from ..vectors.hub import subset

    model = load(model_path)
    width = part_columns(model, part).shape[1]
    if binary is None:  # gensim's and word2vec's convention: vectors.bin is binary
        binary = output.name.lower().endswith(".bin")
    kept = subset(model, min_count, limit)
    export_word2vec(kept, output, binary=binary, part=part)
    left = len(model) - len(kept)
    click.echo(f"wrote {plural(len(kept), 'vector')} of {plural(width, 'dim')} to {output} "
               f"(word2vec {'binary' if binary else 'text'})"
               + (f" (the {part} part)" if part != "all" else "")
               + (f"; {plural(left, 'rarer word')} left out" if left else ""), err=True)


def _export_folder(model_path, output, name, min_count, limit, add_words, license_):
    from ..vectors.hub import subset, words_of, write_folder

    model = load(model_path)
    kept = subset(model, min_count, limit)
    extra = []
    if add_words:
        say(f"reading the words of {plural(len(add_words), 'file')}...")
        extra = words_of(add_words, kept.tokenize)
    report = write_folder(kept, output, name, extra_words=extra, license=license_, whole=model)
    left = len(model) - len(kept)
    loader = (f"SentenceTransformer({str(output)!r})" if name == "sentence-transformers"
              else f"StaticModel.from_pretrained({str(output)!r})")
    say(f"wrote a {name} folder to {output}: {plural(report['rows'], 'row')} of {plural(report['dim'], 'dim')} "
        f"({plural(report['words'], 'word')}"
        + (f", {plural(report['added'], 'added word')}" if report["added"] else "")
        + (f" ({report['restored']:,} left out by --min-count/--limit, with their own rows)" if report["restored"] else "")
        + f" and {report['unk']} for unknown words; tokenizer version {model.tokenizer_version})"
        + (f"; {plural(left, 'rarer word')} left out" if left else ""))
    say(f"load it with {loader}")


@main.command(short_help="Add words from larger pretrained vectors (vocabulary expansion).")
@model_option()
@click.option("--source", type=click.Path(path_type=Path), required=True,
              help="Pretrained vectors with a larger vocabulary (word2vec text or binary, or a model directory).")
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="Model directory to write.")
@click.option("--max-words", type=Count(minimum=0, what="words"), default=0, show_default=True,
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
    from ..training.pretrained import expand_model, expansion_lines

    refuse_overwrite({"-o": output}, {"the model": model_dir(model_path), "--source": source}, replaces_dirs=True)
    model, report = expand_model(model_dir(model_path), source, output, max_words=max_words, affine=affine)
    echo_lines(expansion_lines(report, model.dim, affine, output))
