"""The `tapeviz` command: list the built-in examples, export their pictures, run the demo.

``tapeviz demo`` opens the teaching notebooks in JupyterLab; ``tapeviz demo --export``
writes every example as PNG/SVG/GIF instead (no Jupyter needed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .messages import LANGUAGES, say
from .picture.options import Options, option_help, option_names


def _printed(printed: dict, lang: str = "en") -> str:
    parts = []
    for k, v in printed.items():
        if v is None:
            parts.append(f"{k} = None")
        elif isinstance(v, list):
            parts.append(f"{k} = [" + ", ".join(f"{x:.4g}" for x in v) + "]")
        elif np.ndim(v) == 0:  # as Python prints a number (the tutorial's 6.0), not NumPy's 6.
            parts.append(f"{k} = {str(np.asarray(v)[()])}")
        else:
            parts.append(f"{k} = {np.array2string(np.asarray(v), precision=4, separator=', ')}".replace("\n", ""))
    return say("ui.printed", lang, what="; ".join(parts))


def export_example(
    name: str,
    path: str | os.PathLike,
    *,
    step: int | None = None,
    progress: bool = True,
    **options: Any,
) -> Path:
    """Run a built-in example and write its picture (.png/.svg), animation (.gif) or page
    (.html: tv.export_html's self-contained page, stepping in any browser with no network).
    A write that takes more than ~2 s shows a progress bar (``progress=False``: never).
    ``options``: those of tv.Options (``theme``, ``lang``, ...)."""
    from . import api, examples
    from .output.export import FORMATS, check_path

    ex = examples.get(name)
    check_path(path, formats=(*FORMATS, ".html", ".htm"))  # a bad path fails before the example runs
    run = ex.run()
    if Path(path).suffix.lower() in (".html", ".htm"):  # the page starts at the finished pass
        return api.export_html(run.tape, run.target, path, **options)
    return api.save(
        run.tape,
        run.target,
        path,
        step=step,
        caption=f"{ex.title}\n{_printed(run.printed, options.get('lang', Options().lang))}",
        progress=progress,
        **options,
    )


def export_all(out: Path, formats=("png", "svg", "gif"), *, progress: bool = True) -> list[Path]:
    """Every built-in example in every format, into ``out``; one progress bar for all the
    files once the whole takes more than ~2 s."""
    from . import examples
    from .output.export import progress_bar

    out.mkdir(parents=True, exist_ok=True)
    written = []
    jobs = [(name, fmt) for name in examples.EXAMPLES for fmt in formats]
    with progress_bar(len(jobs), f"writing {out}", progress, unit="file") as bar:
        for name, fmt in jobs:
            written.append(export_example(name, out / f"{name}.{fmt}", progress=False))
            bar.set_postfix_str(f"{name}.{fmt}", refresh=False)
            bar.update(1)
    return written


# ----------------------------------------------------------------------------- demo: JupyterLab

#: The teaching notebooks inside an installed package: the wheel ships notebooks/ (the lesson
#: sets en/ and zh/, their sources, img/) as package data here (see pyproject.toml,
#: [tool.hatch.build.targets.wheel]).
PACKAGE_NOTEBOOKS = Path(__file__).resolve().parent / "notebooks"
#: The teaching notebooks of a source checkout (an editable install or PYTHONPATH run), where
#: notebooks/ sits next to the package and pyproject.toml.
REPO_NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def _has_notebooks(folder: Path) -> bool:
    return folder.is_dir() and any(folder.glob("*.ipynb"))


def default_lang(environ: Mapping[str, str] | None = None) -> str:
    """The lesson set the user's locale asks for: "zh" for a Chinese locale (LC_ALL,
    LC_MESSAGES or LANG, the first one set, as gettext reads them), else "en"."""
    env = os.environ if environ is None else environ
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(var)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def find_notebooks(lang: str = "en") -> Path | None:
    """The teaching notebooks in ``lang`` this tapeviz came with, or None when it has none.

    An installed wheel has them as package data (``tapeviz/notebooks/<lang>``); a source
    checkout has the top-level ``notebooks/<lang>``. The checkout's folder counts only when a
    pyproject.toml sits beside it, so an unrelated ``notebooks`` folder next to an installed
    tapeviz (site-packages) is never served by mistake.
    """
    if _has_notebooks(PACKAGE_NOTEBOOKS / lang):
        return PACKAGE_NOTEBOOKS / lang
    if (REPO_NOTEBOOKS.parent / "pyproject.toml").is_file() and _has_notebooks(REPO_NOTEBOOKS / lang):
        return REPO_NOTEBOOKS / lang
    return None


def has_display() -> bool:
    """Whether a browser window could be opened here."""
    if sys.platform in ("win32", "darwin"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def pick_port(preferred: int = 8888, tries: int = 50) -> int:
    """``preferred`` or the next free port after it; any free port as a last resort."""
    for port in range(preferred, preferred + tries):
        if _port_free(port):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def prepare_workdir(source: Path, workdir: Path) -> list[Path]:
    """Copy the notebooks (and their images) into ``workdir``, keeping copies already there.

    The server runs on the copies: JupyterLab autosaves outputs into the notebooks it
    serves, and the originals are kept output-free. Returns the files copied now.
    """
    copied = []
    workdir.mkdir(parents=True, exist_ok=True)
    for src in sorted(source.rglob("*")):
        rel = src.relative_to(source)
        if not src.is_file() or any(part.startswith(".") for part in rel.parts):
            continue
        dst = workdir / rel
        if dst.exists():
            continue  # the student's copy, maybe edited: never overwritten
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
        copied.append(dst)
    return copied


def _wait_ready(proc: subprocess.Popen, url: str, timeout: float) -> bool:
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    return False


def run_jupyterlab(args) -> int:
    """Serve the notebooks with JupyterLab until Ctrl+C (or SIGTERM)."""
    import importlib.util
    import secrets

    if importlib.util.find_spec("jupyterlab") is None:
        print(
            "tapeviz demo: JupyterLab is not installed. Install it with pip install 'tapeviz[notebook]', "
            "or run `tapeviz demo --export` for pictures only.",
            file=sys.stderr,
        )
        return 2
    if args.notebooks:
        source = Path(args.notebooks).expanduser()
        if not _has_notebooks(source):
            print(
                f"tapeviz demo: no notebooks (*.ipynb) in {source}. Pass a folder that has some, leave out "
                "--notebooks to open the ones tapeviz ships, or run `tapeviz demo --export` for pictures only.",
                file=sys.stderr,
            )
            return 2
    else:
        found = find_notebooks(args.lang)
        if found is None:
            print(
                f"tapeviz demo: this tapeviz has no notebooks (looked in {PACKAGE_NOTEBOOKS / args.lang} and "
                f"{REPO_NOTEBOOKS / args.lang}). Reinstall it from a wheel or a checkout "
                "(pip install 'tapeviz[cpu,notebook]'), "
                "pass --notebooks DIR, or run `tapeviz demo --export` for pictures only.",
                file=sys.stderr,
            )
            return 2
        source = found
    if args.in_place:
        served = source.resolve()
    else:
        served = Path(args.workdir or f"out/notebooks/{args.lang}").expanduser().resolve()
        copied = prepare_workdir(source, served)
        kept = len([p for p in served.glob("*.ipynb")]) - len([p for p in copied if p.suffix == ".ipynb"])
        note = f" ({kept} kept from an earlier run; delete the folder for fresh copies)" if kept else ""
        print(f"tapeviz demo: working copies of {source} in {served}{note}", flush=True)

    port = args.port or pick_port()
    token = secrets.token_hex(24)
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--notebook-dir={served}",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--ServerApp.allow_root=True")  # containers often run as root; Jupyter refuses otherwise
    # Own session: Ctrl+C reaches only us, and we stop the server cleanly (no y/n prompt).
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=(os.name == "posix"))

    def _stop(signum, frame):  # SIGTERM / SIGHUP: stop the server too
        raise KeyboardInterrupt

    previous = {}
    for sig in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)):
        if sig is not None:
            previous[sig] = signal.signal(sig, _stop)
    base = f"http://127.0.0.1:{port}"
    try:
        if not _wait_ready(proc, f"{base}/api/status?token={token}", args.timeout):
            code = proc.poll()
            print(
                f"tapeviz demo: JupyterLab did not start"
                f"{f' (exit code {code})' if code is not None else f' within {args.timeout:.0f} s'}.",
                file=sys.stderr,
            )
            return 1
        url = f"{base}/lab?token={token}"
        print(
            f"tapeviz demo: JupyterLab is running. Open this URL:\n\n    {url}\n\n"
            f"Start with 01_basics.ipynb. Stop with Ctrl+C.",
            flush=True,
        )
        if not args.no_browser and has_display():
            import webbrowser

            webbrowser.open(f"{base}/lab/tree/01_basics.ipynb?token={token}")
        return proc.wait() or 0
    except KeyboardInterrupt:
        print("\ntapeviz demo: stopping JupyterLab", file=sys.stderr, flush=True)
        return 0
    finally:
        _terminate(proc)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _terminate(proc: subprocess.Popen, timeout: float = 20.0) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()  # SIGTERM: the server shuts its kernels down and exits
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def write_lessons(args) -> int:
    """``tapeviz lessons --html DIR``: every lesson executed and written as an offline page."""
    import importlib.util

    missing = [m for m in ("nbclient", "nbconvert", "ipykernel") if importlib.util.find_spec(m) is None]
    if missing:
        print(
            f"tapeviz lessons: {', '.join(missing)} not installed; the lessons are executed in a Jupyter kernel "
            "and converted by nbconvert. Install them with pip install 'tapeviz[notebook]'.",
            file=sys.stderr,
        )
        return 2
    source = Path(args.notebooks).expanduser() if args.notebooks else find_notebooks(args.lang)
    if source is None or not _has_notebooks(source):
        where = source if source is not None else f"{PACKAGE_NOTEBOOKS / args.lang} or {REPO_NOTEBOOKS / args.lang}"
        print(
            f"tapeviz lessons: no notebooks (*.ipynb) in {where}. Pass --notebooks DIR, or reinstall tapeviz "
            "from a wheel or a checkout (pip install 'tapeviz[cpu,notebook]').",
            file=sys.stderr,
        )
        return 2
    from .explorer.lesson_pages import write_lesson_pages

    out = Path(args.html).expanduser().resolve()
    try:
        pages = write_lesson_pages(
            source, out, lang=args.lang, report=lambda line: print(f"tapeviz lessons: {line}", flush=True)
        )
    except KeyboardInterrupt:
        print(f"\ntapeviz lessons: interrupted; the pages written so far are in {out}.", file=sys.stderr)
        return 130
    print(f"tapeviz lessons: wrote {len(pages)} pages and index.html into {out}")
    return 0


def _option_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per tv.Options field (``--show-all``, ``--theme dark``, ...), made from the
    options themselves: a flag left out leaves the option's one default to tv.Options."""
    for name, o in option_help().items():
        flag = "--" + name.replace("_", "-")
        if o["default"] is False:
            parser.add_argument(flag, action="store_true", default=argparse.SUPPRESS, help=o["help"])
        else:
            parser.add_argument(
                flag,
                type=o["parse"] or str,
                choices=o["choices"],
                default=argparse.SUPPRESS,
                help=f"{o['help']} (default: {o['default']})",
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tapeviz", description="See what tf.GradientTape records.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("examples", help="list the built-in examples")
    p_exp = sub.add_parser("export", help="write one example's picture")
    p_exp.add_argument("name")
    p_exp.add_argument(
        "-o", "--output", required=True, help="FILE.png, FILE.svg, FILE.gif or FILE.html (a page that steps offline)"
    )
    p_exp.add_argument(
        "--step",
        type=int,
        default=None,
        help="backward step to show, 0 (the start) to the last (the finished pass, the default)",
    )
    _option_flags(p_exp)
    p_demo = sub.add_parser(
        "demo", help="open the teaching notebooks in JupyterLab (--export: write every example as PNG/SVG/GIF)"
    )
    p_demo.add_argument(
        "--export",
        action="store_true",
        help="write every example as PNG/SVG/GIF into --out instead of starting JupyterLab",
    )
    p_demo.add_argument("--out", default=None, help="--export folder (default: out/demo); implies --export")
    p_demo.add_argument("--notebooks", default=None, help="notebooks to serve (default: the ones tapeviz ships)")
    p_demo.add_argument(
        "--lang",
        choices=LANGUAGES,
        default=default_lang(),
        help="the lesson set to open: en (English) or zh (Chinese); default: the locale's (zh for zh_*), else en",
    )
    p_demo.add_argument(
        "--workdir",
        default=None,
        help="where the server's working copies live (default: out/notebooks/<lang>); copies already there are kept",
    )
    p_demo.add_argument(
        "--in-place",
        action="store_true",
        help="serve the notebooks themselves, not copies (outputs get saved into them)",
    )
    p_demo.add_argument("--port", type=int, default=0, help="port (default: 8888 or the next free one)")
    p_demo.add_argument("--no-browser", action="store_true", help="only print the URL, even with a display")
    p_demo.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for JupyterLab to start")
    p_lessons = sub.add_parser(
        "lessons", help="write the teaching notebooks as offline pages (one .html per lesson and an index)"
    )
    p_lessons.add_argument("--html", required=True, metavar="DIR", help="folder for the pages (made if missing)")
    p_lessons.add_argument(
        "--lang",
        choices=LANGUAGES,
        default=default_lang(),
        help="the lesson set: en (English) or zh (Chinese); default: the locale's (zh for zh_*), else en",
    )
    p_lessons.add_argument("--notebooks", default=None, help="notebooks to write (default: the ones tapeviz ships)")
    args = parser.parse_args(argv)

    if args.command == "examples":
        from .examples import EXAMPLES

        width = max(len(n) for n in EXAMPLES)
        for e in EXAMPLES.values():
            print(f"{e.name:<{width}}  {e.heading}  {e.title}")
        return 0
    if args.command == "export":
        from .examples import EXAMPLES

        if args.name not in EXAMPLES:
            print(f"tapeviz: no example named {args.name!r}; run `tapeviz examples` to list them.", file=sys.stderr)
            return 2
        try:
            options = {name: getattr(args, name) for name in option_names() if hasattr(args, name)}
            path = export_example(args.name, args.output, step=args.step, **options)
        except (ValueError, OSError) as e:
            print(f"tapeviz: {e}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:  # the file being written was removed: nothing half-written is left
            print(f"\ntapeviz: interrupted; {args.output} was not written.", file=sys.stderr)
            return 130
        print(f"wrote {path}")
        return 0
    if args.command == "demo":
        if not (args.export or args.out):
            return run_jupyterlab(args)
        out = Path(args.out or "out/demo").resolve()
        try:
            written = export_all(out)
        except KeyboardInterrupt:
            print(
                f"\ntapeviz demo: interrupted; the files written so far are in {out}, none of them half-written.",
                file=sys.stderr,
            )
            return 130
        print(f"tapeviz demo: wrote {len(written)} files for {len(written) // 3} examples into {out}")
        return 0
    if args.command == "lessons":
        return write_lessons(args)
    return 2  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
