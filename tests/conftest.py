# ---------------------------------------------------------------------------
# Browser-test fixtures (JupyterLab / Notebook 7 / Voilà + headless Chromium).
# See tests/support/browser.py.
# Other fixtures may be appended below this block.
# ---------------------------------------------------------------------------
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))  # also under --import-mode=importlib
import browser as _browser  # tests/support/browser.py

_LABS = {}  # (front end, source dir) -> server started in this process

_BROWSER_FIXTURES = {
    "jupyterlab",
    "jupyterlab_factory",
    "server_factory",
    "notebook7",
    "voila",
    "chromium_browser",
    "page",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Tests that use a browser fixture count as `browser` tests even without the
    mark, and all browser tests share one xdist worker under `--dist loadgroup`
    (one JupyterLab and one Chromium per run instead of one per worker)."""
    for item in items:
        if _BROWSER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            if item.get_closest_marker("browser") is None:
                item.add_marker(pytest.mark.browser)
        if item.get_closest_marker("browser") is not None:
            item.add_marker(pytest.mark.xdist_group("browser"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if item.get_closest_marker("browser") is None:
        return
    missing = _browser.missing_requirements()
    if not missing:
        return
    _skip_or_fail("browser test needs: " + "; ".join(missing))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    # Remember each phase's outcome so the `page` fixture can keep evidence on failure.
    report = yield
    setattr(item, f"_tv_rep_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def server_factory(tmp_path_factory):
    """Start a front end serving a temp copy of a directory: ``factory(frontend, source=None)``
    with ``frontend`` one of "lab", "notebook", "voila" (``None`` source = the repo's
    notebooks/). One server per front end and source per session; all stop at the end."""

    def start(frontend, source=None):
        missing = _browser.missing_requirements(frontend)
        if missing:
            _skip_or_fail("browser test needs: " + "; ".join(missing))
        src = Path(source) if source is not None else _browser.NOTEBOOKS_DIR
        key = (frontend, str(src.resolve()))
        if key not in _LABS:
            workdir = tmp_path_factory.mktemp(frontend)
            _LABS[key] = _browser.start_server(frontend, workdir, src)
        return _LABS[key]

    try:
        yield start
    finally:
        while _LABS:
            _LABS.popitem()[1].stop()


@pytest.fixture(scope="session")
def jupyterlab_factory(server_factory):
    """Start a JupyterLab serving a temp copy of a directory: ``factory(source=None)``
    (``None`` = the repo's notebooks/). One server per source per session."""
    return lambda source=None: server_factory("lab", source)


@pytest.fixture(scope="session")
def jupyterlab(jupyterlab_factory):
    """The session's JupyterLab on a temp copy of notebooks/.

    ``.url(path)``, ``.root`` (write extra notebooks here), ``.token``, ``.api(path)``.
    """
    return jupyterlab_factory(None)


@pytest.fixture(scope="session")
def notebook7(server_factory):
    """The session's Jupyter Notebook 7 on a temp copy of notebooks/ (same API as ``jupyterlab``)."""
    return server_factory("notebook", None)


@pytest.fixture(scope="session")
def voila(server_factory):
    """The session's Voilà on a temp copy of notebooks/: ``.notebook_url(name)`` runs that
    notebook as an app (a new kernel per page)."""
    return server_factory("voila", None)


@pytest.fixture
def cjk_font():
    """The path of an installed CJK font. Without one the test is skipped with the reason
    (`make test` installs fonts-noto-cjk when run as root); under CI it fails instead."""
    from tapeviz.picture import fonts

    path = fonts.cjk_font_path()
    if path is None:
        _skip_or_fail("needs a CJK font: apt-get install fonts-noto-cjk (make test does it as root)")
    return path


def _skip_or_fail(reason: str):
    if _browser.is_ci():
        pytest.fail(f"{reason} (CI is set, so this fails instead of skipping)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def chromium_browser():
    """Debian Chromium launched once per session through Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = _browser.launch_chromium(pw)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(request, chromium_browser):
    """A fresh browser context + page (1400x1000). On failure a screenshot and the
    servers' log tails go to tests/artifacts/FAILED-<test>.*; afterwards all
    kernels/sessions/workspaces of the session's servers are reset (Voilà ends a
    page's kernel when the page closes)."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import expect

    expect.set_options(timeout=_browser.DEFAULT_TIMEOUT_MS)
    pg = _browser.new_page(chromium_browser)
    try:
        yield pg
    finally:
        rep = getattr(request.node, "_tv_rep_call", None)
        failed = rep is not None and rep.failed
        name = "FAILED-" + request.node.name
        if failed:
            try:
                path = _browser.screenshot(pg, name)
                print(f"\n[browser] failure screenshot: {path}")
            except (PlaywrightError, OSError) as exc:  # the page may be gone, or the disk full
                print(f"\n[browser] no failure screenshot: {exc}")
        pg.context.close()
        for i, server in enumerate(_LABS.values()):
            if failed:
                _browser.ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
                log = _browser.ARTIFACTS_DIR / f"{name}.{server.frontend.module}{i or ''}.log"
                log.write_text(server.log_tail(400))
            server.shutdown_kernels()
