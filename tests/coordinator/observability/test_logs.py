"""structlog set-up: lines go to the sys.stderr of the moment they are written."""
from __future__ import annotations

import io
import sys

import structlog

from groupcoord.coordinator.logs import configure


def test_lines_follow_sys_stderr_replaced_after_configure(monkeypatch):
    saved = structlog.get_config()
    try:
        first = io.StringIO()
        monkeypatch.setattr(sys, "stderr", first)
        configure("json", "info")
        first.close()                              # e.g. a finished test's captured stream
        second = io.StringIO()
        monkeypatch.setattr(sys, "stderr", second)
        structlog.get_logger("groupcoord.test").warning("closing_connection", reason="x")
        assert '"event": "closing_connection"' in second.getvalue()
    finally:
        structlog.configure(**saved)
