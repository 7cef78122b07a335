"""Browser-test harness: a real Jupyter front end driven by headless Chromium.

Three front ends, one harness: JupyterLab 4, Jupyter Notebook 7 and Voilà (a notebook
served as an app: it runs when the page opens and shows outputs only). A
:class:`FrontEnd` record holds what differs between them (command, flags, notebook URL,
whether there is a Run menu); starting, isolating, waiting for and stopping a server is
the same code for all of them.

Plain module (no pytest imports at module level) so it can also be used from a
script or a REPL. The pytest fixtures that wrap it live in ``tests/conftest.py``.

Typical use inside a test::

    @pytest.mark.browser
    def test_something(jupyterlab, page):           # or notebook7, voila
        write_notebook(jupyterlab.root / "t.ipynb", ["import ipywidgets as w", ...])
        run_notebook(page, jupyterlab, "t.ipynb")   # open + Run All (Voilà: open)
        ...
        screenshot(page, "something")

Facts this relies on (measured, see shared/ARCHITECTURE.md "Browser tests"):
- Debian's /usr/bin/chromium, launched through Playwright with the flags below.
- The server in its own process group, ready when /api/status (Voilà: its tree page)
  answers.
- The notebook execution indicator says "idle" before a kernel exists, so the kernel
  name in the toolbar has to be checked as well before running anything.
- Notebook 7 has JupyterLab's notebook panel, toolbar and Run menu (same selectors);
  it swallows arrow keys before they reach a slider, and on a fresh profile it raises
  a page error of its own ("reading 'schema'"), with or without widgets.
- Voilà stops at the first cell that raises and shows its traceback.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parents[1]  # tests/: artifacts/ and .cache/ live there
REPO_ROOT = TESTS_DIR.parent
NOTEBOOKS_DIR = REPO_ROOT / "notebooks" / "en"  # the English lesson set (notebooks/zh: the Chinese one)
ARTIFACTS_DIR = Path(os.environ.get("TAPEVIZ_TEST_ARTIFACTS", TESTS_DIR / "artifacts"))

CHROMIUM = os.environ.get("TAPEVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
VIEWPORT = {"width": 1400, "height": 1000}

# Generous defaults: 2 cores, and a kernel that may import TensorFlow.
SERVER_START_TIMEOUT = 90.0  # seconds
DEFAULT_TIMEOUT_MS = 60_000  # Playwright actions / expect
KERNEL_READY_TIMEOUT_MS = 90_000
RUN_ALL_TIMEOUT_MS = 300_000

# Selectors (JupyterLab 4).
SEL_PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"
SEL_EXEC_INDICATOR = ".jp-Notebook-ExecutionIndicator"
SEL_KERNEL_NAME = ".jp-Toolbar-kernelName"
SEL_MENU_LABEL = ".lm-MenuBar-itemLabel"
SEL_RUN_ALL = "li.lm-Menu-item[data-command='runmenu:run-all']"
SEL_PROMPT = ".jp-CodeCell .jp-InputArea-prompt"
SEL_STDERR_OUTPUT = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
SEL_DIALOG_ACCEPT = ".jp-Dialog .jp-Dialog-button.jp-mod-accept"
# Notebook 7 shows the same notebook panel and Run menu; Voilà shows outputs in its body.
SEL_VOILA_ROOT = "body[data-voila]"


# --------------------------------------------------------------------------- checks


def is_ci() -> bool:
    """True when the CI environment variable is set to something truthy."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing_requirements(frontend: FrontEnd | str | None = None) -> list[str]:
    """What is missing to run browser tests here (empty list: all there); with
    ``frontend``, also that front end's own package (``notebook``, ``voila``)."""
    missing = list(_missing_requirements())
    if frontend is not None:
        module = (FRONT_ENDS[frontend] if isinstance(frontend, str) else frontend).module
        try:
            __import__(module)
        except ImportError as exc:  # pragma: no cover - depends on the machine
            missing.append(f"Python module {module!r} not importable ({exc}); pip install -e '.[test]'")
    return missing


@functools.lru_cache(maxsize=1)
def _missing_requirements() -> tuple[str, ...]:
    missing = []
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        missing.append(
            f"Chromium not found at {CHROMIUM} "
            "(apt-get install -y --no-install-recommends chromium fonts-dejavu-core fonts-noto-cjk)"
        )
    for mod in ("playwright.sync_api", "jupyterlab", "ipykernel", "ipywidgets", "nbformat"):
        try:
            __import__(mod)
        except ImportError as exc:  # pragma: no cover - depends on the machine
            missing.append(f"Python module {mod!r} not importable ({exc})")
    return tuple(missing)


# --------------------------------------------------------------------------- server


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class FrontEnd:
    """How to start one Jupyter front end as a server, and where its pages are.

    The three front ends a class meets share a kernel protocol and the ipywidgets
    manager but differ in the command that starts them, the flags they take and the
    URL of a notebook: one record per front end keeps those differences in one place
    and lets every other part of the harness (process group, private state dirs,
    readiness, clean shutdown) stay the same.
    """

    name: str  # "lab", "notebook", "voila"
    module: str  # started as `python -m MODULE`
    page: str  # URL path of a notebook, "{}" = its path relative to the root
    server_flags: tuple[str, ...]  # after the port/ip/token/root flags, constant per front end
    config_class: str  # where --port, --ip, --token and --root_dir go
    interactive: bool  # a notebook UI (cells, Run menu) rather than a rendered app
    rest_api: bool  # has the Jupyter Server REST API (sessions, kernels, kernelspecs)

    def command(self, python: str, port: int, token: str, root: Path) -> list[str]:
        c = self.config_class
        identity = "IdentityProvider.token" if c == "ServerApp" else f"{c}.token"
        return [
            python,
            "-m",
            self.module,
            "--no-browser",
            f"--port={port}",
            f"--{c}.port_retries=0",
            f"--{c}.ip=127.0.0.1",
            f"--{identity}={token}",
            f"--{c}.root_dir={root}",
            *self.server_flags,
        ]

    def notebook_path(self, name: str) -> str:
        return self.page.format(urllib.parse.quote(name.lstrip("/")))


_SERVER_APP_FLAGS = ("--ServerApp.allow_root=True", "--ServerApp.terminals_enabled=False")

LAB = FrontEnd(
    name="lab",
    module="jupyterlab",
    page="lab/tree/{}",
    config_class="ServerApp",
    server_flags=(
        *_SERVER_APP_FLAGS,
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.news_url=None",
    ),
    interactive=True,
    rest_api=True,
)
NOTEBOOK7 = FrontEnd(
    name="notebook",
    module="notebook",
    page="notebooks/{}",
    config_class="ServerApp",
    server_flags=_SERVER_APP_FLAGS,
    interactive=True,
    rest_api=True,
)
# Voilà runs the notebook itself when the page is requested and shows only its outputs.
# Tracebacks are shown so a failing cell explains itself in the test's failure message.
VOILA = FrontEnd(
    name="voila",
    module="voila",
    page="voila/render/{}",
    config_class="Voila",
    server_flags=("--VoilaConfiguration.show_tracebacks=True",),
    interactive=False,
    rest_api=False,
)
FRONT_ENDS = {f.name: f for f in (LAB, NOTEBOOK7, VOILA)}


@dataclass
class JupyterServer:
    """A running Jupyter front end's server. Build it with :func:`start_server`."""

    root: Path  # the server's root_dir: a temp copy of the notebooks
    token: str
    port: int
    proc: subprocess.Popen
    state_dir: Path  # isolated config/runtime/settings dirs and the server log
    log_path: Path
    frontend: FrontEnd = LAB
    startup_seconds: float = 0.0
    _stopped: bool = field(default=False, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "", **params: str) -> str:
        """Absolute URL for ``path`` (e.g. ``"lab/tree/x.ipynb"``) with the token added."""
        path = path.lstrip("/")
        query = {"token": self.token, **params}
        sep = "&" if "?" in path else "?"
        return f"{self.base_url}/{path}{sep}{urllib.parse.urlencode(query)}"

    def notebook_url(self, name: str, **params: str) -> str:
        """The page that shows notebook ``name`` (relative to ``root``) in this front end."""
        return self.url(self.frontend.notebook_path(name), **params)

    # -- REST helpers -------------------------------------------------------------
    def api(self, path: str, method: str = "GET", timeout: float = 10.0):
        """Call the server's REST API; returns decoded JSON (or None for no content)."""
        req = urllib.request.Request(
            f"{self.base_url}/{path.lstrip('/')}",
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """Delete every session and kernel and forget saved workspaces, so the next
        test opens a clean page. Errors are ignored (best effort).

        Voilà has no REST API, and keeps a page's kernel running after the page is
        closed: its kernels (found by their connection files, under this server's
        private temp dir) are ended by pid."""
        if not self.frontend.rest_api:
            _kill_pids([p for p in _pids_mentioning(str(self.state_dir)) if p != self.proc.pid], timeout=5.0)
            return
        with contextlib.suppress(Exception):
            for s in self.api("api/sessions"):
                with contextlib.suppress(Exception):
                    self.api(f"api/sessions/{s['id']}", method="DELETE", timeout=30)
        with contextlib.suppress(Exception):
            for k in self.api("api/kernels"):
                with contextlib.suppress(Exception):
                    self.api(f"api/kernels/{k['id']}", method="DELETE", timeout=30)
        if self.frontend is not LAB:
            return
        with contextlib.suppress(Exception):
            ws = self.api("lab/api/workspaces")
            ids = ws.get("workspaces", {}).get("ids", []) if isinstance(ws, dict) else []
            for wid in ids:
                with contextlib.suppress(Exception):
                    self.api(f"lab/api/workspaces/{wid}", method="DELETE")

    def log_tail(self, n: int = 60) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def stop(self, timeout: float = 20.0) -> None:
        """Shut kernels down, then stop the server's process group."""
        if self._stopped:
            return
        self._stopped = True
        if self.proc.poll() is None:
            self.shutdown_kernels()
        _kill_group(self.proc, timeout)
        # Kernels run in their own sessions (jupyter_client uses start_new_session),
        # so the group kill does not reach them. Find the ones that belong to this
        # server by its private runtime dir and end them by pid.
        _kill_pids(_pids_mentioning(str(self.state_dir)), timeout=5.0)


JupyterLab = JupyterServer  # the name from when the harness drove JupyterLab only


def _kill_group(proc: subprocess.Popen, timeout: float) -> None:
    if proc.poll() is not None:
        return
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        return
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, sig)
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    # Leftovers in the group (server gone but children alive).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _pids_mentioning(needle: str) -> list[int]:
    """PIDs whose command line contains ``needle`` (a unique temp path of ours)."""
    pids = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in cmdline:
            pids.append(int(entry.name))
    return pids


def _kill_pids(pids: Iterable[int], timeout: float) -> None:
    pids = list(pids)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if Path(f"/proc/{p}").exists() and not _is_zombie(p)]
        time.sleep(0.1)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _is_zombie(pid: int) -> bool:
    try:
        return (Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]) == "Z"
    except (OSError, IndexError):
        return True


def start_server(
    frontend: FrontEnd | str,
    workdir: Path,
    source: Path | None = NOTEBOOKS_DIR,
    python: str = sys.executable,
    timeout: float = SERVER_START_TIMEOUT,
    extra_args: Sequence[str] = (),
) -> JupyterServer:
    """Start ``frontend`` (a :class:`FrontEnd` or its name: "lab", "notebook", "voila")
    serving a copy of ``source`` under ``workdir / "root"``.

    ``workdir`` must be a fresh, empty-or-missing directory owned by the caller.
    Config, runtime, settings, workspaces and data dirs are private to this server
    (kernelspecs still come from ``python``'s environment: ``<prefix>/share/jupyter``).
    """
    frontend = FRONT_ENDS[frontend] if isinstance(frontend, str) else frontend
    workdir = Path(workdir)
    root = workdir / "root"
    state = workdir / "state"
    if source is not None and Path(source).is_dir():
        shutil.copytree(source, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    root.mkdir(parents=True, exist_ok=True)
    for sub in ("config", "runtime", "data", "settings", "workspaces", "ipython", "tmp"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    # No "Would you like to get notified about official Jupyter news?" toast over
    # screenshots, and no attempt to reach the internet for news or updates.
    notif = state / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notif.parent.mkdir(parents=True, exist_ok=True)
    notif.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))

    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(state / "config"),
        JUPYTER_RUNTIME_DIR=str(state / "runtime"),
        # A user-level ~/.local/share/jupyter/kernels/python3 would shadow the venv's
        # kernel; a private data dir keeps discovery on <prefix>/share/jupyter.
        JUPYTER_DATA_DIR=str(state / "data"),
        JUPYTERLAB_SETTINGS_DIR=str(state / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(state / "workspaces"),
        IPYTHONDIR=str(state / "ipython"),
        # Voilà writes its kernels' connection files to a temp dir: a private one makes
        # them findable by path (see JupyterServer.shutdown_kernels / stop).
        TMPDIR=str(state / "tmp"),
        JUPYTER_PLATFORM_DIRS="0",
        PYTHONUNBUFFERED="1",
    )
    env["PATH"] = os.pathsep.join([str(Path(python).parent), env.get("PATH", "")])
    env.pop("JUPYTER_PATH", None)
    env.pop("JUPYTER_CONFIG_PATH", None)

    last_error = ""
    for attempt in range(3):  # a free port can be taken between probe and bind
        token = secrets.token_hex(16)
        port = free_port()
        log_path = workdir / f"{frontend.name}-{attempt}.log"
        cmd = [*frontend.command(python, port, token, root), *extra_args]
        t0 = time.monotonic()
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                cmd,
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        server = JupyterServer(
            root=root, token=token, port=port, proc=proc, state_dir=state, log_path=log_path, frontend=frontend
        )
        try:
            _wait_ready(server, timeout)
        except (RuntimeError, TimeoutError) as exc:  # the server exited, or never answered
            last_error = f"{exc}\n--- server log ---\n{server.log_tail()}"
            server.stop()
            continue
        server.startup_seconds = time.monotonic() - t0
        if frontend.rest_api:
            _check_kernelspec(server)
        return server
    raise RuntimeError(f"{frontend.module} did not start:\n{last_error}")


def start_jupyterlab(workdir: Path, source: Path | None = NOTEBOOKS_DIR, **kw) -> JupyterServer:
    """:func:`start_server` for JupyterLab."""
    return start_server(LAB, workdir, source, **kw)


def _wait_ready(server: JupyterServer, timeout: float) -> None:
    """Ready = the server answers an authenticated request: Jupyter Server's
    /api/status, or Voilà's file tree (Voilà has no REST API)."""
    deadline = time.monotonic() + timeout
    url = server.url("api/status" if server.frontend.rest_api else "voila/tree")
    while True:
        if server.proc.poll() is not None:
            raise RuntimeError(f"server exited with code {server.proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"no answer from {url} in {timeout:.0f} s")
        time.sleep(0.2)


def _check_kernelspec(server: JupyterServer) -> None:
    specs = server.api("api/kernelspecs")
    if "python3" not in specs.get("kernelspecs", {}):
        server.stop()
        raise RuntimeError(f"{server.frontend.module} finds no python3 kernel: {json.dumps(specs)[:500]}")


@contextlib.contextmanager
def running_server(
    frontend: FrontEnd | str, workdir: Path, source: Path | None = NOTEBOOKS_DIR, **kw
) -> Iterator[JupyterServer]:
    """Context manager around :func:`start_server` that always stops the server."""
    server = start_server(frontend, workdir, source, **kw)
    try:
        yield server
    finally:
        server.stop()


def running_jupyterlab(workdir: Path, source: Path | None = NOTEBOOKS_DIR, **kw):
    """:func:`running_server` for JupyterLab."""
    return running_server(LAB, workdir, source, **kw)


# --------------------------------------------------------------------------- browser


def launch_chromium(playwright, headless: bool = True, **kw):
    """Launch Debian's Chromium through Playwright (a fresh temp profile each launch)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=headless, args=list(CHROMIUM_ARGS), **kw)


def new_page(browser, timeout_ms: int = DEFAULT_TIMEOUT_MS):
    """A page in a fresh context (own cookies/storage) with the standard viewport."""
    context = browser.new_context(viewport=dict(VIEWPORT), device_scale_factor=1)
    context.set_default_timeout(timeout_ms)
    page = context.new_page()
    return page


@contextlib.contextmanager
def lab_and_page(prefix: str = "tapeviz-bench-") -> Iterator[tuple[JupyterServer, object]]:
    """A JupyterLab on a temp copy of the notebooks and a Chromium page, both closed after
    (the benchmarks' setup: no pytest there)."""
    import tempfile

    from playwright.sync_api import sync_playwright

    with (
        tempfile.TemporaryDirectory(prefix=prefix) as tmp,
        running_jupyterlab(Path(tmp)) as lab,
        sync_playwright() as pw,
    ):
        browser = launch_chromium(pw)
        try:
            yield lab, new_page(browser)
        finally:
            browser.close()


# --------------------------------------------------------------------------- notebooks

KERNELSPEC_METADATA = {
    "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
    "language_info": {"name": "python"},
}


def write_notebook(path: Path, cells: Sequence[str], markdown: Sequence[str] = ()) -> Path:
    """Write a notebook of code ``cells`` (preceded by optional markdown cells).

    The kernelspec metadata is set so JupyterLab starts python3 without asking.
    """
    import nbformat

    nb = nbformat.v4.new_notebook(metadata=json.loads(json.dumps(KERNELSPEC_METADATA)))
    nb.cells = [nbformat.v4.new_markdown_cell(m) for m in markdown]
    nb.cells += [nbformat.v4.new_code_cell(src) for src in cells]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


_KERNEL_READY_JS = """
([panelSel, indSel, nameSel]) => {
  const panel = document.querySelector(panelSel);
  if (!panel) return false;
  const ind = panel.querySelector(indSel);
  const name = panel.querySelector(nameSel);
  if (!ind || !name) return false;
  const text = (name.textContent || '').trim();
  const ok = ind.getAttribute('data-status') === 'idle' && text !== '' && !/no kernel/i.test(text);
  // Require the state to hold for a moment: right after the kernel name appears the
  // kernel still reports busy while it starts up.
  if (!ok) { window.__tvReadySince = null; return false; }
  if (!window.__tvReadySince) window.__tvReadySince = Date.now();
  return Date.now() - window.__tvReadySince >= 300;
}
"""


def open_notebook(
    page, server: JupyterServer, name: str, timeout_ms: int = KERNEL_READY_TIMEOUT_MS, reset: bool = True
) -> None:
    """Open ``name`` (relative to ``server.root``) in the server's front end.

    JupyterLab and Notebook 7: wait for the notebook's kernel. Ready = the notebook's
    execution indicator says idle AND the toolbar names a kernel (the indicator is
    "idle" before any kernel exists). If the front end asks which kernel to use, the
    default choice is accepted. ``reset`` adds JupyterLab's ``reset`` URL flag: the
    server-side workspace is emptied, so tabs a previous test left open are not
    restored (each restored notebook would start its own kernel).

    Voilà: the page itself runs the notebook; see :func:`open_voila`.
    """
    if not server.frontend.interactive:
        open_voila(page, server, name, timeout_ms=max(timeout_ms, RUN_ALL_TIMEOUT_MS))
        return
    params = {"reset": ""} if reset and server.frontend is LAB else {}
    page.goto(server.notebook_url(name, **params), wait_until="domcontentloaded", timeout=timeout_ms)
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        remaining_ms = max(1, int((deadline - time.monotonic()) * 1000))
        try:
            page.wait_for_function(
                _KERNEL_READY_JS,
                arg=[SEL_PANEL, SEL_EXEC_INDICATOR, SEL_KERNEL_NAME],
                timeout=min(2_000, remaining_ms),
                polling=100,
            )
            return
        except Exception as exc:  # playwright TimeoutError
            if not _is_timeout(exc):
                raise
            # A "Select Kernel" dialog blocks the kernel start: accept the default.
            dialog = page.locator(SEL_DIALOG_ACCEPT)
            if dialog.count() and dialog.first.is_visible():
                dialog.first.click()
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"notebook {name!r}: kernel not ready after {timeout_ms / 1000:.0f} s "
                    f"(kernel name: {_text_or_none(page, SEL_KERNEL_NAME)!r}, "
                    f"status: {_attr_or_none(page, SEL_EXEC_INDICATOR, 'data-status')!r})\n"
                    f"--- server log ---\n{server.log_tail(30)}"
                ) from None


# Voilà streams the page while its kernel runs the cells, with a "#loading" spinner on
# top; the spinner goes when the last cell has run (or one raised: Voilà stops there).
_VOILA_DONE_JS = """
() => document.readyState === 'complete' && !!document.body
      && document.body.getAttribute('data-voila') === 'voila' && !document.querySelector('#loading')
"""


def open_voila(
    page, server: JupyterServer, name: str, timeout_ms: int = RUN_ALL_TIMEOUT_MS, raise_on_error: bool = True
) -> float:
    """Open ``name`` as a Voilà app and wait until every cell has run; returns the seconds
    it took. With ``raise_on_error`` a cell's traceback raises ``AssertionError``.

    Widgets are drawn after that ("Loading widget..." until the page's widget manager
    has connected to the kernel): wait for the widget itself before using it."""
    t0 = time.monotonic()
    page.goto(server.notebook_url(name), wait_until="commit", timeout=timeout_ms)
    page.wait_for_function(_VOILA_DONE_JS, timeout=timeout_ms, polling=100)
    elapsed = time.monotonic() - t0
    if raise_on_error:
        errors = cell_errors(page, root=SEL_VOILA_ROOT)
        if errors:
            raise AssertionError(f"Voilà: notebook {name!r} raised:\n" + "\n---\n".join(errors))
    return elapsed


def run_notebook(page, server: JupyterServer, name: str) -> float:
    """Show notebook ``name`` with every cell run, in any front end: open it and Run All
    (JupyterLab, Notebook 7), or let Voilà run it. Returns the seconds the run took."""
    if not server.frontend.interactive:
        return open_voila(page, server, name)
    open_notebook(page, server, name)
    return run_all(page)


def notebook_root(server: JupyterServer) -> str:
    """CSS selector of the element holding the notebook's outputs in this front end."""
    return SEL_PANEL if server.frontend.interactive else SEL_VOILA_ROOT


# Watches the active notebook for any sign of execution ([*] prompt or a busy
# indicator) so that a Run All that finishes between two polls is still noticed.
_ARM_JS = """
([panelSel, indSel, promptSel]) => {
  const panel = document.querySelector(panelSel);
  window.__tvRun = {sawBusy: false};
  if (window.__tvRunObserver) window.__tvRunObserver.disconnect();
  const check = () => {
    const ind = panel && panel.querySelector(indSel);
    if (ind && ind.getAttribute('data-status') !== 'idle') window.__tvRun.sawBusy = true;
    for (const p of (panel ? panel.querySelectorAll(promptSel) : []))
      if ((p.textContent || '').includes('*')) window.__tvRun.sawBusy = true;
  };
  const obs = new MutationObserver(check);
  if (panel) obs.observe(panel, {subtree: true, childList: true, characterData: true,
                                 attributes: true, attributeFilter: ['data-status']});
  window.__tvRunObserver = obs;
  // Number of code cells that have some source: a notebook without any runs nothing.
  const cells = panel ? panel.querySelectorAll('.jp-CodeCell') : [];
  let nonEmpty = 0;
  for (const c of cells) {
    const src = c.querySelector('.cm-content');
    if (src && (src.textContent || '').trim() !== '') nonEmpty += 1;
  }
  return nonEmpty;
}
"""

_RUN_DONE_JS = """
([panelSel, indSel, promptSel]) => {
  const panel = document.querySelector(panelSel);
  if (!panel || !window.__tvRun || !window.__tvRun.sawBusy) return false;
  const ind = panel.querySelector(indSel);
  if (!ind || ind.getAttribute('data-status') !== 'idle') return false;
  for (const p of panel.querySelectorAll(promptSel))
    if ((p.textContent || '').includes('*')) return false;
  return true;
}
"""


def run_all(page, timeout_ms: int = RUN_ALL_TIMEOUT_MS, raise_on_error: bool = True) -> float:
    """Run > Run All Cells, then wait until the kernel is idle and no cell shows [*].

    Returns the seconds it took. With ``raise_on_error`` (default) a cell error
    output raises ``AssertionError`` carrying the traceback text.
    """
    nonempty = page.evaluate(_ARM_JS, [SEL_PANEL, SEL_EXEC_INDICATOR, SEL_PROMPT])
    t0 = time.monotonic()
    page.locator(SEL_MENU_LABEL, has_text="Run").first.click()
    page.locator(SEL_RUN_ALL).click()
    if nonempty:
        page.wait_for_function(
            _RUN_DONE_JS,
            arg=[SEL_PANEL, SEL_EXEC_INDICATOR, SEL_PROMPT],
            timeout=timeout_ms,
            polling=100,
        )
    elapsed = time.monotonic() - t0
    page.evaluate("() => window.__tvRunObserver && window.__tvRunObserver.disconnect()")
    if raise_on_error:
        errors = cell_errors(page)
        if errors:
            raise AssertionError("notebook cell raised:\n" + "\n---\n".join(errors))
    return elapsed


# JupyterLab 4 renders an error output exactly like stderr text (same mime type, same
# classes), so errors are recognised by IPython's traceback layout instead: the
# "ExcName    Traceback (most recent call last)" header, or the "Cell In[3], line 1"
# location line that also heads SyntaxErrors. Warnings and TF logs have neither.
_CELL_ERRORS_JS = r"""
([panelSel, stderrSel]) => {
  const panel = document.querySelector(panelSel);
  if (!panel) return [];
  const header = /^\S+\s+Traceback \(most recent call last\)\s*$/m;
  const where = /^\s*Cell In\[\d*\], line \d+/m;
  return Array.from(panel.querySelectorAll(stderrSel))
    .map(e => e.innerText || '')
    .filter(t => header.test(t) || where.test(t));
}
"""


def cell_errors(page, root: str = SEL_PANEL) -> list[str]:
    """Text of every cell error (traceback) shown in the active notebook (``root``:
    the element holding it, :func:`notebook_root`)."""
    return page.evaluate(_CELL_ERRORS_JS, [root, SEL_STDERR_OUTPUT])


# Uncaught page errors a front end raises by itself, whatever the notebook holds.
KNOWN_PAGE_ERRORS = {
    "notebook": ("reading 'schema'",),  # Notebook 7 on a fresh profile
}


def watch_page_errors(page) -> list[str]:
    """Start collecting the page's uncaught errors; returns the (growing) list."""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return errors


def unexpected_page_errors(errors: Sequence[str], server: JupyterServer) -> list[str]:
    """``errors`` without the ones the front end raises by itself (KNOWN_PAGE_ERRORS)."""
    known = KNOWN_PAGE_ERRORS.get(server.frontend.name, ())
    return [e for e in errors if not any(k in e for k in known)]


def screenshot(page, name: str, full_page: bool = False) -> Path:
    """Save a PNG to tests/artifacts/NAME.png and return its path."""
    ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    path = ARTIFACTS_DIR / f"{safe}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


# --------------------------------------------------------------------------- the explorer
# Its canvas (a widget with class tv-canvas) holds one inline SVG, replaced on every
# repaint; the figure title among its texts names the step shown (output/artists.py's title).
_SVG_JS = "sel => { const s = document.querySelector(sel + ' svg'); return s ? s.outerHTML : null; }"
# A title wrapped onto two lines (a narrow picture, e.g. the explorer's) is one <text> per
# line inside <g id="title">: read them joined, as the title reads.
_TITLE_JS = r"""
sel => {
  const lines = t => Array.from(t.querySelectorAll('text')).map(x => (x.textContent || '').trim());
  const head = /^(Step \d+\/\d+|Backward pass)/;
  const group = document.querySelector(sel + ' svg g#title');
  const whole = group ? lines(group).join(' ') : '';
  if (head.test(whole)) return whole;
  const svg = document.querySelector(sel + ' svg');
  return (svg ? lines(svg) : []).find(t => head.test(t)) || null;
}
"""
_CHANGED_JS = "([sel, old]) => { const s = document.querySelector(sel + ' svg'); return !!s && s.outerHTML !== old; }"


def canvas_svg(page, canvas: str) -> str | None:
    """The SVG markup inside the element ``canvas`` (a CSS selector) now."""
    return page.evaluate(_SVG_JS, canvas)


def canvas_title(page, canvas: str) -> str | None:
    """The picture's title ("Step k/n ..." or "Backward pass ...") now."""
    return page.evaluate(_TITLE_JS, canvas)


def wait_svg_changed(page, canvas: str, old: str) -> str:
    """Wait until the canvas shows other SVG markup than ``old`` (a repaint); returns it."""
    page.wait_for_function(_CHANGED_JS, arg=[canvas, old], polling=50)
    return canvas_svg(page, canvas)


def wait_title_matching(page, canvas: str, pattern: str) -> str:
    """Wait until the picture's title matches the JavaScript regex ``pattern``; returns it.
    (Waiting for the expected title, not for any change: a burst of moves can paint
    frames on the way to the last one.)"""
    js = "([sel, pat]) => { const t = (" + _TITLE_JS + ")(sel); return t !== null && new RegExp(pat).test(t); }"
    page.wait_for_function(js, arg=[canvas, pattern], polling=50)
    return canvas_title(page, canvas)


def wait_title_changed(page, canvas: str, old: str | None) -> str:
    """Wait until the picture's title differs from ``old``; returns the new title."""
    js = "([sel, old]) => { const t = (" + _TITLE_JS + ")(sel); return t !== null && t !== old; }"
    page.wait_for_function(js, arg=[canvas, old], polling=50)
    return canvas_title(page, canvas)


# --------------------------------------------------------------------------- small utils


def _is_timeout(exc: Exception) -> bool:
    return type(exc).__name__ == "TimeoutError"


def _text_or_none(page, sel: str):
    with contextlib.suppress(Exception):
        loc = page.locator(f"{SEL_PANEL} {sel}")
        if loc.count():
            return loc.first.inner_text(timeout=1_000)
    return None


def _attr_or_none(page, sel: str, attr: str):
    with contextlib.suppress(Exception):
        loc = page.locator(f"{SEL_PANEL} {sel}")
        if loc.count():
            return loc.first.get_attribute(attr, timeout=1_000)
    return None


# --------------------------------------------------------------------------- kernel


def kernel_client(lab: JupyterServer):
    """A jupyter_client on the server's one running kernel (a second client beside the page):
    tests and benchmarks read the kernel's objects through it."""
    from jupyter_client import BlockingKernelClient

    kernels = lab.api("api/kernels")
    if len(kernels) != 1:
        raise RuntimeError(f"expected one kernel, found {len(kernels)}")
    cf = lab.state_dir / "runtime" / f"kernel-{kernels[0]['id']}.json"
    kc = BlockingKernelClient(connection_file=str(cf))
    kc.load_connection_file()
    kc.start_channels()
    kc.wait_for_ready(timeout=30)
    return kc


def kernel_eval(kc, code: str) -> str:
    """Run ``code`` in the kernel; returns what it printed (raises with the traceback on an error)."""
    out = []

    def hook(msg):
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            out.append("\n".join(msg["content"]["traceback"]))

    reply = kc.execute_interactive(code, output_hook=hook, timeout=60)
    if reply["content"]["status"] != "ok":
        raise RuntimeError("kernel code failed:\n" + "".join(out))
    return "".join(out)
