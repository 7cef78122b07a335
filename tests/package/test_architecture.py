"""The pipeline's shape, checked from the source: one way, no cycles, TF's private APIs in
one file. An import added in the wrong direction fails here before it tangles the stages.

Imports inside functions count too: a lazy import is still a dependency, and a lazy cycle
is still a cycle (it only moves the failure to run time)."""

from __future__ import annotations

import ast
import pathlib

import networkx as nx
import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "tapeviz"

# Stages in pipeline order: the subpackages of tapeviz/ (docs/architecture.md lists what
# each holds), with the few top-level modules placed among them. A module may import from its
# own stage or an earlier one, never from a later one.
STAGES = [
    {"messages", "gcpause"},  # sentences per language; the collector paused while a picture is built
    {"record"},
    {"gradients"},
    {"picture"},
    {"output"},
    {"training"},
    {"explorer"},
    {"api", "examples", "cli", ""},
]
RANK = {stage: rank for rank, stages in enumerate(STAGES) for stage in stages}
# Where drawing happens: it reads a computed flow, it never records or computes one.
DRAWING_STAGES = {"picture", "output"}
DRAWING_EXPLORER = {
    "explorer." + m
    for m in ("state", "panels", "widget", "keyboard", "notebook_theme", "html_page", "slope_plot", "quiz")
}
# The hook, the recorder, the replay and the tape: what drawing must not import. Drawing
# reads the record stage's graph (and its plain records) only.
READABLE_RECORDS = {"record", "record.graph", "record.records", "record.values", "record.bounded_cache"}


def stage_of(module: str) -> str:
    """The stage a module belongs to: its subpackage, or itself at the top ("" is tapeviz/__init__)."""
    return module.split(".")[0]


def _drawing(sources) -> set[str]:
    return {m for m in sources if stage_of(m) in DRAWING_STAGES and m not in DRAWING_STAGES} | DRAWING_EXPLORER


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(dotted: str) -> bool:
    """Whether a dotted name inside the package is a module (file or subpackage)."""
    where = PACKAGE.joinpath(*dotted.lstrip(".").split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


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
                module = ".".join(base + node.module.split("."))
                ours.add(module)
                # "from ..record import capture" imports the module record.capture
                ours.update(f"{module}.{alias.name}" for alias in node.names if _is_module(f"{module}.{alias.name}"))
            else:
                ours.update(".".join(base + [alias.name]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            absolute.add(node.module or "")
            if node.module and node.module.startswith("tapeviz"):
                module = node.module.removeprefix("tapeviz").lstrip(".")
                ours.update(f"{module}.{a.name}".lstrip(".") for a in node.names if _is_module(f"{module}.{a.name}"))
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
    stages = {stage_of(m) for m in sources}
    assert stages - set(RANK) == set(), (
        "put the new module into a stage's subpackage (or add it to STAGES and docs/architecture.md)"
    )
    assert set(RANK) - stages == set(), "STAGES names a stage that no longer exists"
    top = sorted(p.name for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file())
    assert len(top) <= 12, f"the top of tapeviz/ holds the stages' folders and a few front ends, not {top}"


def test_stage_packages_are_subfolders_and_top_level_modules_are_few(sources):
    """The folders show the stages: every stage after the shared base is a subpackage."""
    for stage in set().union(*STAGES[1:-1]):
        assert (PACKAGE / stage / "__init__.py").is_file(), stage


def test_no_import_cycles(import_graph):
    assert list(nx.simple_cycles(import_graph)) == []


def test_imports_only_go_back_along_the_pipeline(import_graph):
    forward = [(a, b) for a, b in import_graph.edges if RANK[stage_of(b)] > RANK[stage_of(a)]]
    assert forward == [], "these imports reach a later stage"


def test_only_the_record_stage_touches_tensorflow_private_apis(sources):
    # tensorflow.core holds protobuf message definitions (a wire format, not hooks): allowed.
    private = {
        module: sorted(m for m in absolute if m.startswith(("tensorflow.python", "keras.src")))
        for module, (_, absolute) in sources.items()
    }
    touching = {module for module, names in private.items() if names}
    assert touching and {stage_of(m) for m in touching} == {"record"}, touching
    # Reaching in through attributes (tf.python..., tf._...) is the same thing by another road.
    for path in PACKAGE.rglob("*.py"):
        if stage_of(_module_name(path)) != "record":
            text = path.read_text(encoding="utf-8")
            assert "tf.python" not in text and "pywrap" not in text, path.name


def test_drawing_never_records_or_computes_gradients(import_graph, sources):
    """Drawing reads records and flows it is handed: it imports neither the hook nor the
    tape, and never calls TF's gradient machinery itself."""
    drawing = _drawing(sources)
    assert drawing >= {"picture.scene", "output.svg", "explorer.state"} and drawing <= set(sources)
    recording = {m for m in sources if stage_of(m) == "record"} - READABLE_RECORDS | {"api"}
    assert {"record.hooks", "record.recorder", "record.tape"} <= recording
    direct = {module: sorted(set(import_graph.successors(module)) & recording) for module in drawing}
    assert {module: names for module, names in direct.items() if names} == {}
    for module in drawing:
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


def test_no_module_reaches_a_thousand_lines():
    """Small modules with one job: a module growing past this splits by job (GUIDE.md)."""
    sizes = {_module_name(p): len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {m: n for m, n in sizes.items() if n >= 1000} == {}


def test_both_writers_paint_through_one_interface():
    """Drawing goes one way, scene -> writers: the SVG and matplotlib writers each implement
    every method of the one painter interface themselves."""
    from tapeviz.output.artists import MplPainter
    from tapeviz.output.painter import Painter
    from tapeviz.output.svg import SvgPainter

    methods = {name for name in vars(Painter) if not name.startswith("_")}
    assert methods == {"box", "text", "arrow", "marks", "swatch"}
    for painter in (SvgPainter, MplPainter):
        assert issubclass(painter, Painter) and methods <= set(vars(painter)), painter
