"""structlog set-up: console lines for people, JSON lines for machines."""
from __future__ import annotations

import logging
import sys

import structlog


#: the levels of --log-level
LEVELS = ("debug", "info", "warning", "error")


def check_level(level: str) -> str:
    """The level in lower case; ValueError naming the known ones for anything else."""
    if not isinstance(level, str) or level.lower() not in LEVELS:
        raise ValueError(f"unknown log level {level!r}: expected {', '.join(LEVELS[:-1])} or {LEVELS[-1]}")
    return level.lower()


class _Stderr:
    """Whatever sys.stderr is when a line is written (it may be replaced after configure(), as
    pytest's capture does; a stream closed since must not make logging fail)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure(fmt: str = "console", level: str = "info", stream=None) -> None:
    """Console lines (or JSON lines with fmt="json") at level and above, to stream (default: the
    current sys.stderr, looked up at each line)."""
    level = check_level(level)
    stream = stream or _Stderr()
    renderer = (structlog.processors.JSONRenderer() if fmt == "json"
                else structlog.dev.ConsoleRenderer(colors=False))
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True, key="time"),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(stream),
        cache_logger_on_first_use=False,
    )


def quiet_unless_configured() -> None:
    """groupcoord embedded in another program (``embed``, the pytest plugin) logs as a library does:
    through Python's ``logging``, under the ``groupcoord`` loggers, so only warnings show until the
    program asks for more (``logging.basicConfig(level=logging.INFO)``, or
    ``logging.getLogger("groupcoord").setLevel(logging.DEBUG)`` with a handler; pytest shows them
    with a failed test). structlog's configuration is global: a program that configured structlog
    keeps its configuration (and gets groupcoord's lines through it), but one that logs with
    structlog's defaults, unconfigured, finds them replaced by this route through ``logging`` once
    groupcoord is embedded: configure structlog first to keep them."""
    if structlog.is_configured():
        return
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.processors.format_exc_info,
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )
