"""What a widget's page sends, delivered in the kernel as Jupyter delivers it, without a page.

A front end's ``model.send(content)`` (anywidget, ipywidgets) reaches the kernel as a
``comm_msg`` whose data is ``{"method": "custom", "content": content}``; the kernel hands it
to the widget's comm, which hands it to the widget. Tests that stand in for the page send
through that same entry point, so they keep working only while the widget handles the
message the page really sends.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any


class _Caught(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _comm_message(widget: Any, content: dict, buffers: Sequence[bytes] = ()) -> dict:
    """The ``comm_msg`` the kernel receives when ``widget``'s page calls ``model.send(content)``."""
    return {
        "header": {"msg_type": "comm_msg"},
        "content": {"comm_id": widget.comm.comm_id, "data": {"method": "custom", "content": content}},
        "buffers": list(buffers),
    }


def send_from_page(widget: Any, content: dict, buffers: Sequence[bytes] = ()) -> None:
    """Deliver ``content`` to ``widget`` as its page's ``model.send(content)`` arrives.

    ipywidgets logs an exception raised while handling a message instead of raising it (a
    notebook shows it beside the cell); here it fails the caller, with the widget's message.
    """
    caught = _Caught()
    widget.log.addHandler(caught)
    try:
        widget.comm.handle_msg(_comm_message(widget, content, buffers))
    finally:
        widget.log.removeHandler(caught)
    if caught.records:
        first = caught.records[0]
        raise AssertionError(f"the widget failed on {content!r}: {first.getMessage()}") from (
            first.exc_info[1] if first.exc_info else None
        )
