"""``embed``, ``index`` and ``neighbors``: sentences as rows, and the nearest of them."""

from __future__ import annotations

from pathlib import Path

import click

from ..outputs import refuse_overwrite
from ..vectors.neighbours import NEIGHBOUR_MIN_COUNT, nearest_words
from .app import Count, encoding_option, load, main, model_dir, model_option, say, unknown_option


class FiniteRange(click.FloatRange):
    """click's FloatRange, and not NaN (which compares inside every range)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if number != number:
            self.fail(f"{value!r} is not a number", param, ctx)
        return number


@main.command(short_help="Embed every line of a file into a .npy array (or many files on a Dask cluster).")
@model_option()
@click.argument("inputs", metavar="INPUT...", nargs=-1, required=True,
                type=click.Path(path_type=Path, allow_dash=True))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="The .npy file to write: float32, one row per line of INPUT. With --workers or --scheduler: "
                   "a directory of shards.")
@encoding_option()
@click.option("--missing", "missing_file", type=click.Path(path_type=Path), default=None,
              help="Where to list the lines with no known word. Default: OUTPUT with .npy replaced by .missing.txt.")
@click.option("--fill", type=click.Choice(["nan", "zero"]), default="nan", show_default=True,
              help="Values of the row of a line with no known word.")
@click.option("--threads", type=click.IntRange(min=0, max=65_536), default=1, show_default=True,
              help="Threads of the parallel averaging kernel (0: all cores). 1: the serial kernel, which already "
                   "runs beside the tokenizer on a second core; more pays off only for models of many dimensions.")
@unknown_option()
@click.option("--workers", type=click.IntRange(min=1, max=4096), default=None,
              help="Embed on a local Dask cluster of this many worker processes; OUTPUT is a directory of shards.")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Embed on a running Dask cluster (tcp://host:8786); OUTPUT is a directory of shards.")
@click.option("--block-mb", type=FiniteRange(min=0.001, max=1 << 20), default=64.0, show_default=True,
              help="With a cluster: MB of plain text per block (one shard each); a compressed file is one block.")
@click.option("-q", "--quiet", is_flag=True, help="No progress line and no summary.")
def embed(model_path, inputs, output, encoding, missing_file, fill, threads, unknown, workers, scheduler, block_mb,
          quiet):
    """Embed every line of INPUT (one sentence per line; .gz/.bz2/.xz read too; - for stdin).

    Row i of OUTPUT is the sentence embedding of line i + 1 (the same as 'similarity' and
    Model.encode use), empty lines included; the numbers of the lines with nothing to
    average (their rows are NaN, or zero with --fill zero) are listed in the --missing
    file. Written block by block, so INPUT may be larger than memory, and renamed into
    place at the end.

    With --workers N (a local cluster) or --scheduler ADDRESS (Dask), several INPUT files
    are cut into blocks and embedded in parallel into OUTPUT/shard-*.npy, listed in
    OUTPUT/manifest.json; running the same command again skips the shards already done.
    Read them back with scbow.open_shards(OUTPUT). Needs: pip install 'scbow-numba[dask]'.
    """
    if workers is not None and scheduler is not None:
        raise click.UsageError("give --workers (a local cluster) or --scheduler (a running one), not both")
    if workers is not None or scheduler is not None:
        if missing_file is not None:
            raise click.UsageError("--missing is for one output file; a cluster lists missing lines per shard")
        if output.suffix.lower() == ".npy":
            raise click.UsageError(f"-o {output}: on a cluster the output is a directory of shards, not one .npy "
                                   f"file; give a directory name such as {output.with_suffix('')}")
        from ..use.cluster import cluster_command

        summary = cluster_command(model_dir(model_path), inputs, output, workers=workers, scheduler=scheduler,
                                  fill=fill, unknown=unknown, block_mb=block_mb, quiet=quiet, encoding=encoding)
    elif len(inputs) > 1:
        raise click.UsageError(f"{len(inputs)} inputs: one process embeds one INPUT; several need --workers N "
                               "(a local Dask cluster) or --scheduler ADDRESS")
    else:
        from ..use.embedding import embed_command

        summary = embed_command(model_dir(model_path), inputs[0], output, missing_file, fill=fill, threads=threads,
                                unknown=unknown, quiet=quiet, encoding=encoding)
    if summary:
        say(summary)


@main.command(short_help="Nearest words of a word, or nearest lines of a sentence.")
@model_option()
@click.argument("words", nargs=-1)
@click.option("--sentence", default=None, help="Find the lines of --in nearest to this sentence.")
@click.option("--in", "in_path", type=click.Path(path_type=Path, allow_dash=True), default=None,
              help="Text file searched for --sentence (one sentence per line; .gz/.bz2/.xz too).")
@encoding_option()
@click.option("--index", "index_path", type=click.Path(path_type=Path), default=None,
              help="Search a sentence index (made by 'scbow-numba index') for --sentence instead of scanning --in.")
@click.option("--ef", type=click.IntRange(min=1, max=1 << 20), default=None,
              help="With --index: search effort (more finds more of the true nearest lines, slower).  "
                   "[default: the index's]")
@click.option("--negative", multiple=True, help="A word to subtract from the query (repeatable).")
@click.option("-n", "--topn", type=click.IntRange(min=1, max=10**9), default=10, show_default=True, help="How many to print.")
@click.option("--min-count", type=Count(minimum=0, what="occurrences"), default=NEIGHBOUR_MIN_COUNT, show_default=True,
              help="Print only words seen at least this often in the training corpus (rare words' vectors are "
                   "mostly noise and crowd out the answer); 0: every word, by plain cosine. Words with no "
                   "recorded count (read from a word2vec or GloVe file) are always printed. From Python: "
                   "model.wv.most_similar(WORD, min_count=N) (its default, as gensim's, is every word).")
def neighbors(model_path, words, sentence, in_path, encoding, index_path, ef, negative, topn, min_count):
    """Print the nearest words of WORD... by cosine, or the nearest sentences of a file.

    \b
    scbow-numba neighbors WORD              word<TAB>cosine, nearest first
    scbow-numba neighbors king woman --negative man
    scbow-numba neighbors --sentence "..." --in FILE
                                cosine<TAB>line number<TAB>line
    scbow-numba neighbors --sentence "..." --index DIR
                                the same from an index, in milliseconds

    Several words are averaged (as unit vectors), --negative words subtracted, as in
    gensim's most_similar; the query's own words (which --min-count does not limit) are
    never printed.
    """
    if ef is not None and index_path is None:
        raise click.ClickException("--ef needs --index")
    if in_path is None and click.get_current_context().get_parameter_source("encoding").name != "DEFAULT":
        raise click.ClickException(f"--encoding {encoding}: it is the encoding of the --in file, and none is given")
    if sentence is not None and click.get_current_context().get_parameter_source("min_count").name != "DEFAULT":
        raise click.ClickException("--min-count is for nearest words; --sentence finds nearest lines")
    if in_path is not None and index_path is not None:
        raise click.ClickException("give --in FILE (an exact scan) or --index DIR, not both")
    if sentence is None:
        if in_path is not None or index_path is not None:
            raise click.ClickException(f"{'--in' if in_path is not None else '--index'} needs --sentence: the "
                                       "sentence whose nearest lines to find")
        if not words:
            raise click.ClickException('give a WORD, or --sentence "..." --in FILE')
        for word, cos in nearest_words(load(model_path), words, negative, topn=topn, min_count=min_count):
            click.echo(f"{word}\t{cos:.4f}")
        return
    if words or negative:
        raise click.ClickException("give either WORDs or --sentence, not both")
    if in_path is None and index_path is None:
        raise click.ClickException("--sentence needs --in FILE or --index DIR: the sentences to search")
    from ..use.embedding import nearest_sentences, query_sentence

    if index_path is not None:  # an index that records its model answers only with it: check before loading
        from ..use.index import check_query_model, search_lines

        check_query_model(index_path, model_dir(model_path))
    model = load(model_path)
    query_sentence(model, sentence, note=say)
    if index_path is not None:
        for line in search_lines(model, sentence, index_path, topn=topn, ef=ef, model_dir=model_dir(model_path)):
            click.echo(line)
        return
    for cos, line, text in nearest_sentences(model, sentence, in_path, topn=topn, warn=say, encoding=encoding):
        click.echo(f"{cos:.4f}\t{line}\t{text}")


@main.command(short_help="Build an approximate nearest-neighbour index of embedded sentences.")
@click.argument("embeddings", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="Index directory to write.")
@click.option("--text", type=click.Path(path_type=Path), default=None,
              help="The text file EMBEDDINGS was made from (needed for a .npy; shards name their files).")
@encoding_option()
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
def index(embeddings, output, text, encoding, model_path, m, ef_construction, threads, quiet):
    """Index the rows of EMBEDDINGS (an 'embed' .npy, or a directory of shards) for fast search.

    \b
    scbow-numba embed -m model books.txt -o books.npy
    scbow-numba index books.npy --text books.txt -m model -o books.index
    scbow-numba neighbors -m model --sentence "he walked home" --index books.index

    An HNSW graph (faiss) over the L2-normalised rows: cosine search in milliseconds
    instead of a scan of every line. Rows with no embedding are left out. Needs:
    pip install 'scbow-numba[index]'.
    """
    from ..use.index import index_command

    refuse_overwrite({"-o": output}, [("EMBEDDINGS", embeddings), ("--text", text), ("the model", model_path)],
                      replaces_dirs=True)
    summary = index_command(embeddings, output, text=text, M=m, ef_construction=ef_construction, quiet=quiet,
                            model=model_path, threads=threads, encoding=encoding)
    if not quiet:
        click.echo(summary, err=True)
