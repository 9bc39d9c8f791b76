"""The interop fixtures' teardown closes each client within a bound (clients.close_within): a close
that waits for ever inside a library (librdkafka's consumer close once did, on its own rebalance
callback) fails its test instead of hanging the suite."""
from __future__ import annotations

import threading

import pytest

from clients import Timeout, close_within


class _Closable:
    def __init__(self, release: threading.Event | None = None, error: Exception | None = None):
        self.release, self.error, self.closed = release, error, False

    def close(self) -> None:
        if self.release is not None:
            self.release.wait()
        if self.error is not None:
            raise self.error
        self.closed = True

    def __repr__(self) -> str:
        return "<closable>"


def test_a_close_that_returns_is_done():
    obj = _Closable()
    close_within(obj, 5)
    assert obj.closed


def test_a_close_that_does_not_return_fails_and_is_left_to_itself():
    release = threading.Event()
    obj = _Closable(release)
    with pytest.raises(Timeout, match=r"<closable>.close\(\) had not returned after 0.2 s"):
        close_within(obj, 0.2)
    assert not obj.closed
    release.set()                   # (the close left behind goes on when it can)
    for thread in threading.enumerate():
        if thread.name == "close _Closable":
            thread.join(5)
    assert obj.closed


def test_a_close_that_fails_raises_its_error():
    with pytest.raises(ValueError, match="broken"):
        close_within(_Closable(error=ValueError("broken")), 5)
