"""The ``tapeviz`` command starts quietly: TensorFlow's C++ start-up lines (oneDNN, CPU
features) are not printed before the command's own output.

``tapeviz/__init__.py`` imports this module first (record/__init__.py imports nothing),
before anything imports TensorFlow.
When the process is the ``tapeviz`` command (and only then: a user's notebook or script
that imports tapeviz keeps TensorFlow's logging as it is), it sets
``TF_CPP_MIN_LOG_LEVEL=2`` unless the user set it, and imports TensorFlow with its C++
output caught: TF 2.21 prints its oneDNN line through absl before that level applies, so
the lines below the level are dropped here and every other line (an error, a Python
warning) is written to stderr as it was. A user's ``TF_CPP_MIN_LOG_LEVEL=0`` shows
everything.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

__all__ = ["quiet_start", "is_the_command", "kept_lines"]

#: A C++ log line: severity letter I/W/E/F, date, time, thread, file:line]
_LOG_LINE = re.compile(rb"^([IWEF])\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ \S+:\d+\] ")
_SEVERITY = {b"I": 0, b"W": 1, b"E": 2, b"F": 3}
#: Lines absl prints around INFO lines logged before its set-up (a banner, the CPU features' second line).
_INFO_COMPANIONS = (b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",)
_INFO_CONTINUATIONS = (b"To enable the following instructions:",)


def is_the_command() -> bool:
    """Whether this process is the ``tapeviz`` command: the console script (``sys.argv[0]``
    names it) or ``python -m tapeviz.cli``."""
    if sys.argv and sys.argv[0] and Path(sys.argv[0]).stem in ("tapeviz", "tapeviz-script"):
        return True
    orig = list(getattr(sys, "orig_argv", ()))
    return any(a == "-m" and b == "tapeviz.cli" for a, b in zip(orig, orig[1:], strict=False))


def kept_lines(output: bytes, level: int) -> bytes:
    """What of TensorFlow's start-up ``output`` to show at ``TF_CPP_MIN_LOG_LEVEL=level``:
    log lines of a lower severity go (with absl's banner and continuation lines for INFO),
    every other line stays."""
    kept = []
    for line in output.splitlines(keepends=True):
        m = _LOG_LINE.match(line)
        if m is not None:
            if _SEVERITY[m.group(1)] >= level:
                kept.append(line)
            continue
        bare = line.rstrip(b"\r\n")
        if level >= 1 and (bare in _INFO_COMPANIONS or bare.startswith(_INFO_CONTINUATIONS)):
            continue
        kept.append(line)
    return b"".join(kept)


def quiet_start() -> None:
    """Set TensorFlow's C++ log level (unless the user did) and import it with the
    start-up lines below that level dropped; only in the ``tapeviz`` command."""
    if "tensorflow" in sys.modules or not is_the_command():
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        level = int(os.environ["TF_CPP_MIN_LOG_LEVEL"])
    except ValueError:
        return  # a setting TF itself would not read: leave everything as TF prints it
    if level <= 0:
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        return  # no stderr to catch: nothing would be printed anyway
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            import tensorflow  # noqa: F401 - imported here so that its start-up lines are caught
        finally:
            try:
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            rest = kept_lines(caught.read(), level)
            if rest:
                os.write(2, rest)


quiet_start()
