"""The package as a user gets it: the sdist and the wheel built with pypa/build (the wheel
from the sdist, as pip would), the wheel installed into a fresh venv, and tapeviz run from
there, never from this checkout: an import, `tapeviz examples`, `tapeviz demo --export`,
`tapeviz demo` serving the shipped notebooks, and one shipped notebook through nbclient.

The fresh venv gets the same versions as the venv running this test (a constraints file
made from it), so TensorFlow and the rest come from pip's cache instead of the network.
Run with `make test-wheel`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest

import tapeviz
from tapeviz.examples import EXAMPLES

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(
    p.relative_to(ROOT / "notebooks").as_posix()
    for p in (ROOT / "notebooks").rglob("*")
    if p.is_file() and ".ipynb_checkpoints" not in p.parts
)
# What a rebuild from the sdist needs, whatever else it carries.
SDIST_NEEDS = [
    "pyproject.toml",
    "README.md",
    "CHANGELOG.md",
    "tapeviz/__init__.py",
    "tapeviz/cli.py",
    *(f"notebooks/{n}" for n in NOTEBOOKS),
]


def run(cmd: list, *, timeout: float = 900, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kwargs)
    assert proc.returncode == 0, (
        f"{' '.join(map(str, cmd))} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    )
    return proc


@dataclass
class Dist:
    sdist: Path
    wheel: Path  # built from the sdist
    checkout_wheel: Path  # built straight from the checkout


@pytest.fixture(scope="session")
def dist(tmp_path_factory) -> Dist:
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", out / "from-sdist", ROOT])  # sdist, then wheel from it
    run([sys.executable, "-m", "build", "--wheel", "--outdir", out / "from-checkout", ROOT])
    (sdist,) = (out / "from-sdist").glob("*.tar.gz")
    (wheel,) = (out / "from-sdist").glob("*.whl")
    (checkout_wheel,) = (out / "from-checkout").glob("*.whl")
    return Dist(sdist, wheel, checkout_wheel)


def _wheel_names(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as z:
        return sorted(z.namelist())


def _sdist_names(path: Path) -> list[str]:
    with tarfile.open(path) as tar:
        return sorted(m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile())


def _git_files() -> list[str] | None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return None
    proc = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    return proc.stdout.splitlines() if proc.returncode == 0 else None


def test_names_carry_the_one_version(dist):
    version = tapeviz.__version__
    assert dist.sdist.name == f"tapeviz-{version}.tar.gz"
    assert dist.wheel.name == f"tapeviz-{version}-py3-none-any.whl"
    with zipfile.ZipFile(dist.wheel) as z:
        meta = z.read(f"tapeviz-{version}.dist-info/METADATA").decode()
    assert re.search(rf"^Version: {re.escape(version)}$", meta, re.M)
    assert "Provides-Extra: cpu" in meta and "Provides-Extra: notebook" in meta
    assert re.search(r"^Requires-Dist: tensorflow-cpu<2\.22,>=2\.16; extra == 'cpu'$", meta, re.M), meta


def test_sdist_has_what_a_rebuild_needs(dist):
    names = set(_sdist_names(dist.sdist))
    missing = [n for n in SDIST_NEEDS if n not in names]
    assert not missing, f"the sdist lacks {missing}"
    tracked = _git_files()
    if tracked is not None:  # every tracked source, test, doc and notebook (not the CI script)
        wanted = [f for f in tracked if f.split("/")[0] in ("tapeviz", "notebooks", "tests", "tests_dist", "docs")]
        assert not [f for f in wanted if f not in names], "tracked files missing from the sdist"
    # Nothing generated: hatchling applies the root .gitignore only (not nested ones).
    generated = (
        ".ipynb_checkpoints/",
        "__pycache__/",
        "docs/_build/",
        "docs/_generated/",
        "docs/notebooks/",
        "tests/.cache/",
        "tests/artifacts/",
        ".venv",
        ".ruff_cache/",
        ".mypy_cache/",
    )
    assert not [n for n in names if any(g in n for g in generated)]


def test_wheel_from_sdist_is_the_wheel_from_the_checkout(dist):
    # The sdist is a complete source: rebuilding from it gives the very same files.
    assert _wheel_names(dist.wheel) == _wheel_names(dist.checkout_wheel)


def test_wheel_ships_the_package_and_every_notebook(dist):
    names = _wheel_names(dist.wheel)
    shipped = sorted(n.removeprefix("tapeviz/notebooks/") for n in names if n.startswith("tapeviz/notebooks/"))
    assert shipped == NOTEBOOKS
    assert any(n.endswith(".png") for n in shipped), "notebooks/img travels with the notebooks"
    modules = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tapeviz").rglob("*.py"))
    assert sorted(n for n in names if n.endswith(".py") and not n.startswith("tapeviz/notebooks/")) == modules
    assert not [n for n in names if n.startswith(("tests", "notebooks/", "docs"))]
    static = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tapeviz" / "explorer" / "static").iterdir())
    assert static and set(static) <= set(names), "the front end's JavaScript and CSS travel with the package"
    with zipfile.ZipFile(dist.wheel) as z:  # byte for byte the committed notebooks (no outputs added)
        for n in NOTEBOOKS:
            assert z.read(f"tapeviz/notebooks/{n}") == (ROOT / "notebooks" / n).read_bytes(), n


# ----------------------------------------------------------------------------- installed
@dataclass
class Venv:
    root: Path
    python: Path
    tapeviz: Path
    env: dict
    work: Path


@pytest.fixture(scope="session")
def installed(dist, tmp_path_factory) -> Venv:
    """A fresh venv with the wheel (+ the cpu and notebook extras) and nbclient."""
    root = tmp_path_factory.mktemp("wheel-venv")
    run([sys.executable, "-m", "venv", root])
    python = root / "bin" / "python"
    # The same versions as this venv: pip takes them from its cache (TF is ~600 MB unpacked,
    # a download of ~250 MB otherwise) and the run tests what `make test` tested.
    pins = sorted(
        {
            f"{d.metadata['Name']}=={d.version}"
            for d in metadata.distributions()
            if d.metadata["Name"] and d.metadata["Name"].lower() not in ("tapeviz", "pip", "setuptools")
        }
    )
    constraints = root / "constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    work = tmp_path_factory.mktemp("wheel-work")  # cwd: nothing of the checkout importable
    state = work / ".jupyter"
    env.update(
        JUPYTER_CONFIG_DIR=str(state / "config"),
        JUPYTER_RUNTIME_DIR=str(state / "runtime"),
        JUPYTER_DATA_DIR=str(state / "data"),
        JUPYTERLAB_SETTINGS_DIR=str(state / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(state / "workspaces"),
        PYTHONUNBUFFERED="1",
    )
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        env.pop(var, None)
    t0 = time.monotonic()
    # The cleaned environment for pip too: with this checkout on PYTHONPATH, pip would take
    # tapeviz for installed already.
    # --no-compile: no .pyc for all of TF up front (imports compile what they use).
    run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-compile",
            "-c",
            constraints,
            f"{dist.wheel}[cpu,notebook]",
            "nbclient",
        ],
        cwd=work,
        env=env,
    )
    print(f"\nwheel venv installed in {time.monotonic() - t0:.1f} s")
    return Venv(root, python, root / "bin" / "tapeviz", env, work)


def in_venv(v: Venv, *args, timeout: float = 600) -> subprocess.CompletedProcess:
    return run(list(args), timeout=timeout, cwd=v.work, env=v.env)


def test_import_comes_from_the_wheel(installed):
    out = in_venv(
        installed,
        installed.python,
        "-c",
        "import json, tapeviz, tensorflow as tf; from tapeviz import cli; "
        "print(json.dumps([tapeviz.__version__, tapeviz.__file__, str(cli.find_notebooks()), "
        "tf.__version__]))",
    )
    version, path, notebooks, tf_version = json.loads(out.stdout.strip().splitlines()[-1])
    assert version == tapeviz.__version__
    site = Path(path).resolve().parent
    assert site.is_relative_to(installed.root.resolve()), f"imported {path}, not the installed wheel"
    assert Path(notebooks) == site / "notebooks" / "en"  # the English set unless asked (or the locale says zh)
    import tensorflow as tf

    assert tf_version == tf.__version__  # TF came from the same wheel (pip's cache), not a newer one


def test_examples_command(installed):
    out = in_venv(installed, installed.tapeviz, "examples")
    assert [ln.split()[0] for ln in out.stdout.strip().splitlines()] == list(EXAMPLES)


def test_demo_export_command(installed):
    out_dir = installed.work / "demo"
    out = in_venv(installed, installed.tapeviz, "demo", "--export", "--out", out_dir)
    assert f"wrote {3 * len(EXAMPLES)} files for {len(EXAMPLES)} examples" in out.stdout
    magic = {".png": b"\x89PNG", ".svg": b"<?xml", ".gif": b"GIF8"}
    files = sorted(out_dir.iterdir())
    assert sorted(p.name for p in files) == sorted(f"{n}{s}" for n in EXAMPLES for s in magic)
    for p in files:
        assert p.read_bytes().startswith(magic[p.suffix]), p


def test_shipped_notebook_runs_through_nbclient(installed):
    script = r"""
import shutil, sys, tempfile
from pathlib import Path
import nbformat
from nbclient import NotebookClient
from tapeviz import cli
src = cli.find_notebooks("zh") / "01_basics.ipynb"
work = Path(tempfile.mkdtemp()) / src.name
shutil.copy(src, work)
nb = nbformat.read(str(work), as_version=4)
NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(work.parent)}}).execute()
errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
assert not errors, errors
print(str(src))
streams = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "stream"]
print("".join(o.get("text", "") for o in streams))
"""
    out = in_venv(installed, installed.python, "-c", script)
    lines = out.stdout.splitlines()
    assert Path(lines[0]).is_relative_to(installed.root.resolve()), lines[0]
    text = "\n".join(lines[1:])
    assert "梯度: 6.0" in text and "tapeviz: 6.0   TensorFlow: 6.0" in text, text  # computed by TF in the kernel


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_demo_serves_the_shipped_notebooks(installed):
    """`tapeviz demo` from the installed package: JupyterLab on copies of the notebooks the
    wheel ships (no checkout anywhere), stopped cleanly with the command."""
    served = installed.work / "served"
    log = installed.work / "demo.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen(
            [str(installed.tapeviz), "demo", "--lang", "en", "--no-browser"]
            + ["--port", str(_free_port()), "--workdir", str(served)],
            cwd=installed.work,
            env=installed.env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = None
        deadline = time.monotonic() + 240
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            m = re.search(r"(http://127\.0\.0\.1:\d+)/lab\?token=([0-9a-f]+)", log.read_text())
            url = m.groups() if m else None
            time.sleep(0.25)
        assert url, f"no URL printed (exit {proc.poll()}):\n{log.read_text()[-4000:]}"
        base, token = url
        with urllib.request.urlopen(f"{base}/api/contents?token={token}", timeout=30) as resp:
            names = sorted(item["name"] for item in json.load(resp)["content"] if item["type"] == "notebook")
        english = sorted(n.removeprefix("en/") for n in NOTEBOOKS if n.startswith("en/") and n.endswith(".ipynb"))
        assert names == english and english  # the English set, as asked
        assert "site-packages/tapeviz/notebooks" in log.read_text()  # "working copies of <source>"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # our own process group: the CLI stops its server
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert proc.returncode == 0, log.read_text()[-4000:]
