"""The package's layers (README's "Code map"): no import cycle, each layer imports only those below it,
read from every ``import`` statement of the source, inside functions too (not under ``if TYPE_CHECKING``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "scbow"
MODULES = {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
           for p in PACKAGE.rglob("*.py")}


def _runtime_imports(name: str):
    """(import node, the module a relative import names) of ``name``, outside ``if TYPE_CHECKING:`` blocks."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    stack = [ast.parse(path.read_text(encoding="utf-8"))]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield node, None
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            yield node, ".".join(base + ([node.module] if node.module else [])) if node.level else node.module or ""
        stack.extend(ast.iter_child_nodes(node))


def imports_of(name: str) -> set[str]:
    found = {a.name if module is None else f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module
             for node, module in _runtime_imports(name) for a in node.names}
    return {t for t in found if t in MODULES and t != name}


GRAPH = {name: imports_of(name) for name in MODULES}


def cycles() -> list[str]:
    """The modules on an import cycle."""

    def reaches(start, goal):
        seen, todo = set(), list(GRAPH[start])
        while todo:
            m = todo.pop()
            if m == goal:
                return True
            if m not in seen:
                seen.add(m)
                todo.extend(GRAPH[m])
        return False

    return sorted(m for m in GRAPH if reaches(m, m))


def test_every_relative_import_names_a_module_of_the_package():
    # an import the graph cannot place would hide an arrow (and fails when it runs)
    missing = [(name, module) for name in MODULES for node, module in _runtime_imports(name)
               if isinstance(node, ast.ImportFrom) and node.level and module not in MODULES]
    assert missing == []


def test_the_graph_is_read():
    # the reader finds what is plainly there, so an empty graph cannot pass the tests below
    assert "scbow.training.backends.cpu" in GRAPH["scbow.training.trainer"]
    assert "scbow.kernels.sampling" in GRAPH["scbow.kernels.cpu"]
    assert "scbow.text.reader" in GRAPH["scbow.text.prepare"]


def test_no_import_cycle():
    assert cycles() == []


def test_a_cycle_would_be_found(monkeypatch):
    monkeypatch.setitem(GRAPH, "scbow.kernels.sampling", GRAPH["scbow.kernels.sampling"] | {"scbow.training.trainer"})
    assert {"scbow.training.trainer", "scbow.kernels.sampling"} <= set(cycles())


def test_an_arrow_upwards_would_be_found(monkeypatch):
    monkeypatch.setitem(GRAPH, "scbow.text.vocab", GRAPH["scbow.text.vocab"] | {"scbow.vectors.model"})
    with pytest.raises(AssertionError, match="text imports a layer above it"):
        test_each_layer_imports_only_what_is_below_it("text")


# The layers, bottom to top, as the folders show them (README's "Code map"). A module may
# import only from its own layer and those below it.
LAYERS = [
    ("foundation", ("scbow.errors", "scbow.reading", "scbow.files", "scbow.outputs", "scbow.progress", "scbow.config",
                    "scbow.reference")),
    ("text", ("scbow.text",)),
    ("kernels", ("scbow.kernels",)),
    ("vectors", ("scbow.vectors",)),
    ("use", ("scbow.use",)),
    ("training", ("scbow.training",)),
    ("entry", ("scbow.cli", "scbow.__main__", "scbow")),
]


def layer_of(module: str) -> int:
    """The index in LAYERS of ``module``'s layer (the longest matching prefix)."""
    best, found = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            # "scbow" is the front door itself, not a prefix: a new top-level module must be placed
            if (module == prefix or (prefix != "scbow" and module.startswith(prefix + "."))) and len(prefix) > best:
                best, found = len(prefix), i
    assert found is not None, f"{module} is in no layer: place it in LAYERS"
    return found


@pytest.mark.parametrize("layer", [name for name, _ in LAYERS])
def test_each_layer_imports_only_what_is_below_it(layer):
    level = [name for name, _ in LAYERS].index(layer)
    bad = sorted((m, t) for m in GRAPH if layer_of(m) == level and m != "scbow"
                 for t in GRAPH[m] if layer_of(t) > level and t != "scbow")
    assert bad == [], f"{layer} imports a layer above it: {bad}"


# within a layer, the arrows that must not be there
FORBIDDEN = {
    # numba code: arrays and scalars in, nothing above it
    "scbow.kernels": ("scbow.training", "scbow.vectors", "scbow.use", "scbow.cli", "scbow.reference"),
    # a backend runs batches; the loop and what watches it are above
    "scbow.training.backends": ("scbow.training.trainer", "scbow.training.session", "scbow.training.checkpoint",
                                "scbow.training.curve", "scbow.cli", "scbow.training.corpus"),
    # the loop knows nothing of checkpoints, signals, curves or the command line
    "scbow.training.trainer": ("scbow.training.session", "scbow.training.checkpoint", "scbow.training.curve"),
    "scbow.training.hooks": ("scbow.training.trainer", "scbow.training.backends", "scbow.training.session"),
    "scbow.training.postprocess": ("scbow.training.trainer", "scbow.training.backends", "scbow.training.session"),
    "scbow.training.start": ("scbow.training.trainer", "scbow.training.backends", "scbow.training.session"),
    # the parameter record is built for both devices: no CPU kernel is compiled for it
    "scbow.training.backends.params": ("scbow.kernels.cpu", "scbow.kernels.cuda"),
    # the model API and its files: the writer does not import the API, not even for types (no circle)
    "scbow.vectors.modeldir": ("scbow.vectors.model",),
    # no module below the entry points imports the package's front door
    **{f"scbow.{layer}": ("scbow",) for layer in ("text", "kernels", "vectors", "use", "training")},
}


def under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


@pytest.mark.parametrize("module", sorted(FORBIDDEN))
def test_the_forbidden_arrows_are_absent(module):
    bad = sorted((m, t) for m in GRAPH if under(m, module) for t in GRAPH[m]
                 if any(t == f or (f != "scbow" and under(t, f)) for f in FORBIDDEN[module]))
    assert bad == [], f"{module} imports what it must not: {bad}"


def test_only_the_entry_points_import_the_cli():
    assert sorted(m for m in GRAPH if "scbow.cli" in GRAPH[m]) == ["scbow.__main__"]


# the light modules the CLI imports before numpy: the standard library and each other only
LIGHT = ("scbow.errors", "scbow.reading", "scbow.files", "scbow.outputs", "scbow.text.reader", "scbow.training.cache",
         "scbow.text.tokenize", "scbow.progress")


@pytest.mark.parametrize("module", LIGHT)
def test_the_light_modules_stay_light(module):
    assert sorted(t for t in GRAPH[module] if t not in LIGHT) == []
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    top = {alias.name.split(".")[0] for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
           for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
    assert not top & {"numpy", "numba", "scipy"}, top


def test_text_is_opened_in_one_place():
    # the magic bytes of the compressed formats, and the decompressors' readers, live in scbow.text.reader
    for name, path in MODULES.items():
        if name == "scbow.text.reader":
            continue
        source = path.read_text(encoding="utf-8")
        for sign in ("\\x1f\\x8b", "BZh", "7zXZ", "gzip.open(", "GzipFile(fileobj=disk", "lzma.open(",
                     "bz2.open(", "LZMAFile(disk"):
            assert sign not in source, (name, sign)


def test_the_model_writer_does_not_know_the_model_api_even_for_types():
    # FORBIDDEN's graph leaves TYPE_CHECKING out: model <-> modeldir was a circle through one
    source = MODULES["scbow.vectors.modeldir"].read_text(encoding="utf-8")
    assert "TYPE_CHECKING" not in source and "from .model import" not in source


def test_no_module_imports_another_modules_private_names():
    """A name that starts with one underscore is its module's own: no other module imports it, or reads
    it off an imported module."""
    bad = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = set()  # names this module binds to an imported module
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                bad += [(name, node.module, a.name) for a in node.names if a.name.startswith("_")
                        and not a.name.startswith("__")]
                modules.update(a.asname or a.name for a in node.names)
            elif isinstance(node, ast.Import):
                modules.update((a.asname or a.name).split(".")[0] for a in node.names)
        bad += [(name, node.value.id, node.attr) for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name) and node.value.id in modules and node.attr.startswith("_")
                and not node.attr.startswith("__") and f"{node.value.id}.{node.attr}" not in ALLOWED_PRIVATE]
    assert bad == [], bad


# other libraries' private names a module may need (not the package's)
ALLOWED_PRIVATE = {"sys._getframe", "os._exit"}
