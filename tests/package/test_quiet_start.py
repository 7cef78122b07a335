"""The `tapeviz` command starts quietly: no TensorFlow C++ start-up line (oneDNN, CPU
features) before its own output, and a user's own TF_CPP_MIN_LOG_LEVEL is kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tapeviz.record import quietstart

REPO = Path(__file__).resolve().parents[2]
TF_MARKS = ("oneDNN", "cpu_feature_guard", "absl::InitializeLog", "TensorFlow binary", "port.cc")


def _run_as_command(tmp_path: Path, body: str, *args: str, level: str | None = None) -> subprocess.CompletedProcess:
    """Run ``body`` as a script named ``tapeviz`` (as the installed console script is)."""
    script = tmp_path / "tapeviz"
    script.write_text(body, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    if level is not None:
        env["TF_CPP_MIN_LOG_LEVEL"] = level
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path
    )


@pytest.mark.slow
def test_tapeviz_help_prints_no_tensorflow_line(tmp_path):
    proc = _run_as_command(tmp_path, "import sys\nfrom tapeviz.cli import main\nsys.exit(main())\n", "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: tapeviz")
    assert not [m for m in TF_MARKS if m in proc.stderr + proc.stdout], proc.stderr


@pytest.mark.slow
def test_the_users_own_log_level_is_kept(tmp_path):
    body = "import os, tapeviz, tensorflow\nprint(os.environ['TF_CPP_MIN_LOG_LEVEL'])\n"
    assert _run_as_command(tmp_path, body).stdout.strip() == "2"  # ours, set before TF was imported
    assert _run_as_command(tmp_path, body, level="1").stdout.strip() == "1"


def test_a_library_import_changes_nothing():
    """Under pytest (not the command) nothing was set or caught."""
    assert not quietstart.is_the_command()


START = (
    b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
    b"I0000 00:00:1796192546.321886    5243 port.cc:153] oneDNN custom operations are on.\n"
    b"I0000 00:00:1796192546.35    5243 cpu_feature_guard.cc:227] This TensorFlow binary is optimized.\n"
    b"To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow.\n"
    b"W0000 00:00:1796192546.4    5243 cuda.cc:1] Could not find cuda drivers.\n"
    b"E0000 00:00:1796192546.5    5243 op.cc:2] something broke\n"
    b"/x.py:3: UserWarning: a Python warning\n"
)


def test_kept_lines_drops_only_what_is_below_the_level():
    assert quietstart.kept_lines(START, 2) == (
        b"E0000 00:00:1796192546.5    5243 op.cc:2] something broke\n/x.py:3: UserWarning: a Python warning\n"
    )
    assert b"cuda.cc" in quietstart.kept_lines(START, 1) and b"oneDNN" not in quietstart.kept_lines(START, 1)
    assert quietstart.kept_lines(START, 3).splitlines() == [b"/x.py:3: UserWarning: a Python warning"]
    assert quietstart.kept_lines(START, 0) == START
