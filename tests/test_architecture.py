"""The pipeline's shape, checked from the source: one way, no cycles, TF's private APIs in
one file. An import added in the wrong direction fails here before it tangles the stages.

Imports inside functions count too: a lazy import is still a dependency, and a lazy cycle
is still a cycle (it only moves the failure to run time)."""

from __future__ import annotations

import ast
import pathlib

import networkx as nx
import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "tapeviz"

# Stages in pipeline order (README "Layout of the code"). A module may import from its own
# stage or an earlier one, never from a later one.
STAGES = [
    {
        "messages",
        "messages.en",
        "messages.zh",
        "reasons",
        "gcpause",
        "themes",
        "buckets",
        "gif",
        "svgparts",
        "keys",
        "pagetheme",
    },
    {"capture"},
    {"graph"},
    {"flow", "diagnose", "clipping", "magnitude"},
    {"shown"},
    {"layout", "bands"},
    {"fonts", "scene"},
    {"raster", "svg", "render", "view"},
    {"tape", "flags", "pictures", "history_plot", "tensorboard", "sumsq", "layers_plot", "runpanel"},
    {"panels", "state", "export", "page", "widget", "slope"},
    {"keras_callback", "history", "scrubber", "whatif"},
    {"api", "examples", "cli", ""},
]
RANK = {module: rank for rank, stage in enumerate(STAGES) for module in stage}
# Modules that draw or show: they read a computed flow, they never record or compute one.
DRAWING = {
    "shown",
    "layout",
    "bands",
    "fonts",
    "scene",
    "raster",
    "svg",
    "render",
    "view",
    "svgparts",
    "gif",
    "panels",
    "state",
    "page",
    "widget",
    "keys",
    "pagetheme",
    "slope",
}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: pathlib.Path) -> tuple[set[str], set[str]]:
    """(tapeviz modules imported, every absolute module imported) by one source file."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    if path.name == "__init__.py" and name == "":
        package = []
    ours, absolute = set(), set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)]
            if node.module:
                ours.add(".".join(base + node.module.split(".")))
            else:
                ours.update(".".join(base + [alias.name]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            absolute.add(node.module or "")
        elif isinstance(node, ast.Import):
            absolute.update(alias.name for alias in node.names)
    for module in absolute:
        if module == "tapeviz" or module.startswith("tapeviz."):
            ours.add(module.removeprefix("tapeviz").lstrip("."))
    return ours, absolute


@pytest.fixture(scope="module")
def sources() -> dict[str, tuple[set[str], set[str]]]:
    return {_module_name(path): _imports(path) for path in sorted(PACKAGE.rglob("*.py"))}


@pytest.fixture(scope="module")
def import_graph(sources) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(sources)
    for module, (ours, _) in sources.items():
        # "from . import x" names a module when x is one; otherwise the package itself.
        graph.add_edges_from((module, target if target in sources else target.rpartition(".")[0]) for target in ours)
    graph.remove_edges_from(nx.selfloop_edges(graph))
    return graph


def test_every_module_has_a_stage(sources):
    assert set(sources) - set(RANK) == set(), "add the new module to STAGES (and to the README's module map)"
    assert set(RANK) - set(sources) == set(), "STAGES names a module that no longer exists"


def test_no_import_cycles(import_graph):
    assert list(nx.simple_cycles(import_graph)) == []


def test_imports_only_go_back_along_the_pipeline(import_graph):
    forward = [(a, b) for a, b in import_graph.edges if RANK[b] > RANK[a]]
    assert forward == [], "these imports reach a later stage"


def test_only_capture_touches_tensorflow_private_apis(sources):
    # tensorflow.core holds protobuf message definitions (a wire format, not hooks): allowed.
    private = {
        module: sorted(m for m in absolute if m.startswith(("tensorflow.python", "keras.src")))
        for module, (_, absolute) in sources.items()
    }
    assert {module: names for module, names in private.items() if names} == {"capture": private["capture"]}
    # Reaching in through attributes (tf.python..., tf._...) is the same thing by another road.
    for path in PACKAGE.rglob("*.py"):
        if _module_name(path) != "capture":
            text = path.read_text(encoding="utf-8")
            assert "tf.python" not in text and "pywrap" not in text, path.name


def test_drawing_never_records_or_computes_gradients(import_graph, sources):
    """Drawing reads records and flows it is handed: it imports neither the hook nor the
    tape, and never calls TF's gradient machinery itself."""
    direct = {module: sorted(set(import_graph.successors(module)) & {"capture", "tape", "api"}) for module in DRAWING}
    assert {module: names for module, names in direct.items() if names} == {}
    for module in DRAWING:
        text = (PACKAGE / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")
        assert "GradientTape(" not in text and ".gradient(" not in text, module


def test_the_checks_see_a_wrong_import(tmp_path):
    """The walker itself: a cycle and a private import written to a file are found."""
    (tmp_path / "a.py").write_text("from .b import x\nfrom tensorflow.python.eager import tape\n")
    ours, absolute = _imports_outside(tmp_path / "a.py", tmp_path)
    assert ours == {"b"} and "tensorflow.python.eager" in absolute


def _imports_outside(path: pathlib.Path, root: pathlib.Path):
    global PACKAGE
    saved, PACKAGE = PACKAGE, root
    try:
        return _imports(path)
    finally:
        PACKAGE = saved
