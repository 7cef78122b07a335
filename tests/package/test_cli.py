"""The `tapeviz` command line: examples, export, demo --export, and demo (JupyterLab)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tapeviz import cli
from tapeviz.examples import EXAMPLES

REPO = Path(__file__).resolve().parents[2]


def _tapeviz_cmd() -> list[str]:
    script = Path(sys.executable).with_name("tapeviz")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tapeviz.cli"]


def test_examples_lists_every_example(capsys):
    assert cli.main(["examples"]) == 0
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert len(lines) == len(EXAMPLES)
    for line, ex in zip(lines, EXAMPLES.values(), strict=True):
        assert line.split()[0] == ex.name
        assert ex.heading in line


@pytest.mark.slow
def test_examples_through_the_installed_command():
    proc = subprocess.run([*_tapeviz_cmd(), "examples"], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert [ln.split()[0] for ln in proc.stdout.strip().splitlines()] == list(EXAMPLES)


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml"), (".gif", b"GIF8")])
def test_export_writes_the_file(tmp_path, capsys, suffix, magic):
    out = tmp_path / f"sg{suffix}"
    assert cli.main(["export", "stop_gradient", "-o", str(out)]) == 0
    assert out.read_bytes().startswith(magic)
    assert f"wrote {out}" in capsys.readouterr().out


def test_export_unknown_name_exits_2(tmp_path, capsys):
    out = tmp_path / "x.png"
    assert cli.main(["export", "no_such_example", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no_such_example" in err and "tapeviz examples" in err
    assert not out.exists()


def test_export_bad_suffix_exits_2(tmp_path, capsys):
    assert cli.main(["export", "basic", "-o", str(tmp_path / "x.bmp")]) == 2
    assert "tapeviz:" in capsys.readouterr().err


def test_unknown_subcommand_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["no-such-command"])
    assert exc.value.code == 2


@pytest.mark.slow
def test_demo_export_writes_24_files(tmp_path, capsys):
    out = tmp_path / "tmp"
    assert cli.main(["demo", "--export", "--out", str(out)]) == 0
    files = sorted(p.name for p in out.iterdir())
    assert len(files) == 24 == 3 * len(EXAMPLES)
    assert files == sorted(f"{n}.{ext}" for n in EXAMPLES for ext in ("png", "svg", "gif"))
    assert all((out / f).stat().st_size > 0 for f in files)
    assert "wrote 24 files for 8 examples" in capsys.readouterr().out


def test_prepare_workdir_copies_once_and_keeps_edits(tmp_path):
    src = tmp_path / "src"
    (src / "img").mkdir(parents=True)
    (src / "a.ipynb").write_text("original")
    (src / "img" / "p.png").write_bytes(b"png")
    (src / ".ipynb_checkpoints").mkdir()
    (src / ".ipynb_checkpoints" / "a-checkpoint.ipynb").write_text("x")
    work = tmp_path / "work"
    assert {p.relative_to(work).as_posix() for p in cli.prepare_workdir(src, work)} == {"a.ipynb", "img/p.png"}
    (work / "a.ipynb").write_text("student's edit")
    assert cli.prepare_workdir(src, work) == []
    assert (work / "a.ipynb").read_text() == "student's edit"


def test_demo_without_notebooks_explains(tmp_path, capsys):
    assert cli.main(["demo", "--notebooks", str(tmp_path / "nothing")]) == 2
    assert "--export" in capsys.readouterr().err


def _read_lines(stream, sink: list[str]) -> None:
    for line in stream:
        sink.append(line)


@pytest.mark.slow
def test_demo_starts_jupyterlab_and_prints_a_working_url(tmp_path):
    """`tapeviz demo` with no display: serves copies of notebooks/, prints a URL with a
    token that answers, and stops the server when it is itself stopped."""
    env = dict(os.environ)
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        env.pop(var, None)
    state = tmp_path / "jupyter"
    env.update(
        JUPYTER_CONFIG_DIR=str(state / "config"),
        JUPYTER_RUNTIME_DIR=str(state / "runtime"),
        JUPYTER_DATA_DIR=str(state / "data"),
        JUPYTERLAB_SETTINGS_DIR=str(state / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(state / "workspaces"),
        PYTHONUNBUFFERED="1",
    )
    workdir = tmp_path / "served"
    cmd = [*_tapeviz_cmd(), "demo", "--workdir", str(workdir), "--port", str(_free_port())]
    proc = subprocess.Popen(
        cmd,
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    out: list[str] = []
    err: list[str] = []
    readers = [
        threading.Thread(target=_read_lines, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=_read_lines, args=(proc.stderr, err), daemon=True),
    ]
    for t in readers:
        t.start()
    url = None
    try:
        deadline = time.monotonic() + 180
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            m = re.search(r"(http://127\.0\.0\.1:\d+/lab\?token=[0-9a-f]+)", "".join(out))
            url = m.group(1) if m else None
            time.sleep(0.2)
        assert url, f"no URL printed (exit {proc.poll()}):\n{''.join(out)}\n{''.join(err)[-3000:]}"
        with urllib.request.urlopen(url, timeout=20) as resp:
            assert resp.status == 200
            assert "JupyterLab" in resp.read().decode("utf-8", "replace")
        # It serves the working copies of the repo's notebooks, not the originals.
        base, token = url.split("/lab?token=")
        with urllib.request.urlopen(f"{base}/api/contents?token={token}", timeout=20) as resp:
            import json

            names = {item["name"] for item in json.load(resp)["content"]}
        assert {p.name for p in (REPO / "notebooks" / "en").glob("*.ipynb")} <= names
        assert (workdir / "01_basics.ipynb").is_file()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # our own process group; the CLI stops its server
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        _kill_leftover_servers(str(workdir))
    assert proc.returncode == 0, "".join(err)[-3000:]
    if url:
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            urllib.request.urlopen(url, timeout=5)


def _free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill_leftover_servers(needle: str) -> None:
    """Safety net: a server started for ``needle`` (a unique temp path) that outlived the CLI."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
    import browser

    pids = browser._pids_mentioning(needle)
    browser._kill_pids(pids, timeout=5.0)
    assert not pids, f"tapeviz demo left JupyterLab running (pids {pids})"
