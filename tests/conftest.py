"""Fixtures for every test."""
from __future__ import annotations

import pytest
import structlog


@pytest.fixture(autouse=True)
def _structlog_config_restored():
    """A test that runs a command in this process (its --log-level reconfigures structlog) leaves
    the configuration as it found it, so a later test's capture_logs() sees info lines."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)
