"""The package's layers: no import cycle, and each layer imports only those below it.

The import graph is read from the source (every ``import`` statement, also those inside
functions, which run later but still couple the modules; those under ``if TYPE_CHECKING``
are left out: they never run). The layers, top to bottom, are in README's "Code map".
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "scbow"


def module_names() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = module_names()


def _runtime_imports(tree: ast.AST):
    """Import nodes of ``tree`` outside ``if TYPE_CHECKING:`` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def imports_of(name: str) -> set[str]:
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES else module
                       for alias in node.names]
        found.update(t for t in targets if t in MODULES and t != name)
    return found


GRAPH = {name: imports_of(name) for name in MODULES}


def cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return out


def test_the_graph_is_read():
    # the reader finds what is plainly there, so an empty graph cannot pass the tests below
    assert "scbow.backends" in GRAPH["scbow.trainer"]
    assert "scbow.kernels.sampling" in GRAPH["scbow.kernels.cpu"]
    assert "scbow.modeldir" in GRAPH["scbow.model"]  # inside a method
    assert "scbow.model" not in GRAPH["scbow.modeldir"]  # only under TYPE_CHECKING


def test_no_import_cycle():
    assert cycles() == []


def test_a_cycle_would_be_found(monkeypatch):
    monkeypatch.setitem(GRAPH, "scbow.kernels.sampling", GRAPH["scbow.kernels.sampling"] | {"scbow.trainer"})
    assert any("scbow.trainer" in c and "scbow.kernels.sampling" in c for c in cycles())


# module (or package prefix) -> modules it must never import
INFERENCE = ("scbow.model", "scbow.formats", "scbow.modeldir", "scbow.evaluate", "scbow.embedding", "scbow.cluster",
             "scbow.index",
             "scbow.vocab",
             "scbow.tokenize", "scbow.files")
TRAINING = ("scbow.trainer", "scbow.backends", "scbow.hooks", "scbow.start", "scbow.session", "scbow.checkpoint",
            "scbow.curve")
FORBIDDEN = {
    # numba code: arrays and scalars in, nothing above it
    "scbow.kernels": ("scbow.backends", "scbow.trainer", "scbow.session", "scbow.checkpoint", "scbow.curve",
                      "scbow.corpus", "scbow.model", "scbow.formats", "scbow.cli", "scbow.hooks"),
    # a backend runs batches; the loop and what watches it are above
    "scbow.backends": ("scbow.trainer", "scbow.session", "scbow.checkpoint", "scbow.curve", "scbow.cli"),
    # the loop knows nothing of checkpoints, signals, curves or the command line
    "scbow.trainer": ("scbow.session", "scbow.checkpoint", "scbow.curve", "scbow.cli"),
    "scbow.hooks": ("scbow.trainer", "scbow.backends", "scbow.session", "scbow.cli"),
    "scbow.postprocess": ("scbow.trainer", "scbow.backends", "scbow.session", "scbow.cli"),
    "scbow.start": ("scbow.trainer", "scbow.backends", "scbow.session", "scbow.cli"),
    **{m: TRAINING + ("scbow.cli",) for m in INFERENCE},
}


def under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_each_layer_imports_only_what_is_below_it(layer):
    bad = sorted((m, t) for m in GRAPH if under(m, layer) for t in GRAPH[m]
                 if any(under(t, f) for f in FORBIDDEN[layer]))
    assert bad == [], f"{layer} imports a layer above it: {bad}"


def test_only_the_entry_points_import_the_cli():
    assert sorted(m for m in GRAPH if "scbow.cli" in GRAPH[m]) == ["scbow.__main__"]


# the light modules the CLI imports before numpy: the standard library and each other only
LIGHT = ("scbow.errors", "scbow.files", "scbow.textio", "scbow.corpuscache", "scbow.tokenize")


@pytest.mark.parametrize("module", LIGHT)
def test_the_light_modules_stay_light(module):
    assert sorted(t for t in GRAPH[module] if t not in LIGHT) == []
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    top = {alias.name.split(".")[0] for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
           for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
    assert not top & {"numpy", "numba", "scipy"}, top


def test_text_is_opened_in_one_place():
    # the magic bytes of the compressed formats, and the decompressors' readers, live in scbow.textio
    for name, path in MODULES.items():
        if name == "scbow.textio":
            continue
        source = path.read_text(encoding="utf-8")
        for sign in ("\\x1f\\x8b", "BZh", "7zXZ", "gzip.open(", "GzipFile(fileobj=disk", "lzma.open(",
                     "bz2.open(", "LZMAFile(disk"):
            assert sign not in source, (name, sign)
