"""Bearer token on mutating endpoints; refusing to listen beyond loopback without one; the CLI."""
from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time

import aiohttp
import pytest

from groupcoord.coordinator.admin.app import AdminListener, TokenRequired, check_exposure, is_loopback
from groupcoord.coordinator.embed import running

from admin_helpers import Http

TOKEN = "s3cret-token"


async def test_mutating_endpoints_need_the_token_reads_do_not():
    async with running(http=True, http_token=TOKEN, topics={"t": 1}) as gc, aiohttp.ClientSession() as session:
        http = Http(session, gc.admin_url)
        for method, path, body in [("POST", "/api/topics", {"name": "new"}),
                                   ("POST", "/api/topics/t/partitions", {"count": 2}),
                                   ("DELETE", "/api/topics/t", None),
                                   ("DELETE", "/api/groups/g", None),
                                   ("POST", "/api/groups/g/offsets/reset", {"topic": "t", "to": "earliest"})]:
            for token in (None, "wrong", TOKEN + "x", ""):
                status, answer = await http.call(method, path, body, token=token)
                assert (status, answer["error"]) == (401, "unauthorized"), (method, path, token)
            async with session.request(method, gc.admin_url + path, json=body,
                                       headers={"Authorization": f"Basic {TOKEN}"}) as r:
                assert r.status == 401 and r.headers["WWW-Authenticate"] == "Bearer"
        assert set(gc.service.cluster.topics) == {"t"} and gc.service.cluster.topics["t"].partition_count == 1
        for path in ("/api/nodes", "/api/topics", "/api/topics/t", "/api/groups", "/openapi.json"):
            status, _ = await http.get(path, token=None)
            assert status == 200, path
        status, body = await http.post("/api/topics", {"name": "new"}, token=TOKEN)
        assert status == 201
        async with session.post(gc.admin_url + "/api/topics", json={"name": "newer"},
                                headers={"Authorization": f"bearer {TOKEN}"}) as r:     # scheme: any case
            assert r.status == 201
        # the document says so
        status, doc = await http.get("/openapi.json")
        ops = [(path, method, op) for path, item in doc["paths"].items() for method, op in item.items()
               if method in ("get", "post", "delete", "put", "patch")]
        for path, method, op in ops:
            if method == "get":
                assert "security" not in op, path
            else:
                assert op["security"] == [{"bearer": []}] and "401" in op["responses"], (method, path)
        assert doc["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}


async def test_without_a_token_on_loopback_nothing_is_required(admin_gc, admin_http):
    status, _ = await admin_http.post("/api/topics", {"name": "open"}, token=None)
    assert status == 201
    status, doc = await admin_http.get("/openapi.json")
    assert all("security" not in op for item in doc["paths"].values() for op in item.values()
               if isinstance(op, dict))


async def test_mutations_from_another_origin_are_refused(admin_gc):
    """A web page on another site may POST a text/plain body to a token-less loopback listener
    without a preflight; its Origin header gives it away."""
    url = admin_gc.admin_url
    async with aiohttp.ClientSession() as session:
        for origin in ("http://evil.example", "null", url.replace("127.0.0.1", "localhost")):
            async with session.post(url + "/api/topics", data='{"name": "evil"}',
                                    headers={"Origin": origin, "Content-Type": "text/plain"}) as r:
                assert r.status == 403 and (await r.json())["error"] == "cross_origin", origin
            async with session.post(url + "/api/nodes/0/down",
                                    headers={"Origin": origin, "Content-Type": "text/plain"}) as r:
                assert r.status == 403, origin
        assert "evil" not in admin_gc.service.cluster.topics and admin_gc.service.cluster.nodes[0].up
        async with session.get(url + "/api/topics", headers={"Origin": "http://evil.example"}) as r:
            assert r.status == 200      # reads stay open (the browser keeps them from the other site)
        async with session.post(url + "/api/topics", json={"name": "mine"}, headers={"Origin": url}) as r:
            assert r.status == 201      # the page's own origin
    assert "mine" in admin_gc.service.cluster.topics


async def test_without_a_token_only_loopback_host_names_are_answered(admin_gc):
    """A DNS-rebinding page reaches 127.0.0.1 under its own name (same origin for the browser);
    its Host header gives it away."""
    port = admin_gc.admin.port
    async with aiohttp.ClientSession() as session:
        for i, (host, status) in enumerate([(f"evil.example:{port}", 403), ("evil.example", 403),
                                            (f"localhost:{port}", 200), (f"127.0.0.1:{port}", 200),
                                            (f"[::1]:{port}", 200)]):
            async with session.get(admin_gc.admin_url + "/api/nodes", headers={"Host": host}) as r:
                assert r.status == status, host
                if status == 403:
                    assert (await r.json())["error"] == "host_not_allowed"
            async with session.post(admin_gc.admin_url + "/api/topics", json={"name": f"t{status}-{i}"},
                                    headers={"Host": host, "Origin": f"http://{host}"}) as r:
                assert r.status == (201 if status == 200 else 403), host
    assert not [t for t in admin_gc.service.cluster.topics if t.startswith("t403")]


async def test_with_a_token_any_host_name_is_answered():
    async with running(http=True, http_token=TOKEN) as gc, aiohttp.ClientSession() as session:
        async with session.get(gc.admin_url + "/api/nodes", headers={"Host": "coordinator.internal"}) as r:
            assert r.status == 200


def test_exposure_rules():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert is_loopback("127.3.2.1")
    for host in ("0.0.0.0", "::", "10.1.2.3", "example.org", ""):
        assert not is_loopback(host)
        with pytest.raises(TokenRequired, match="not on loopback"):
            check_exposure(host, None)
        with pytest.raises(TokenRequired):
            check_exposure(host, "")
        check_exposure(host, TOKEN)
    with pytest.raises(TokenRequired):
        AdminListener(service=None, host="0.0.0.0")


def _serve(*args, env_token: str | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "GROUPCOORD_HTTP_TOKEN"}
    if env_token is not None:
        env["GROUPCOORD_HTTP_TOKEN"] = env_token
    return subprocess.Popen(
        [sys.executable, "-m", "groupcoord.cli", "serve", "--port", "0", "--no-data-dir",
         "--http-port", "0", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _lines(stream) -> "queue.Queue[str]":
    q: queue.Queue[str] = queue.Queue()

    def pump():
        for line in stream:
            q.put(line)
    threading.Thread(target=pump, daemon=True).start()
    return q


def _wait_for(q: queue.Queue, prefix: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = q.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line.startswith(prefix):
            return line.strip()
    raise AssertionError(f"no line starting with {prefix!r}")


def test_cli_refuses_an_exposed_listener_without_a_token():
    proc = _serve("--http-host", "0.0.0.0")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert "not on loopback" in err and "--http-token" in err
    assert "Traceback" not in err and "bootstrap servers" not in out


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_cli_starts_exposed_with_a_token(how):
    import json
    import urllib.error
    import urllib.request
    proc = _serve("--http-host", "0.0.0.0", *(["--http-token", TOKEN] if how == "flag" else []),
                  env_token=TOKEN if how == "environment" else None)
    try:
        lines = _lines(proc.stdout)
        _wait_for(lines, "bootstrap servers:")
        url = _wait_for(lines, "admin:").split()[-1]
        assert url.startswith("http://0.0.0.0:")
        local = url.replace("0.0.0.0", "127.0.0.1")
        with urllib.request.urlopen(local + "/api/nodes", timeout=10) as r:
            assert r.status == 200 and json.load(r)[0]["node_id"] == 0
        request = urllib.request.Request(local + "/api/topics", data=b'{"name": "t"}', method="POST",
                                         headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(request, timeout=10)
        assert denied.value.code == 401 and json.load(denied.value)["error"] == "unauthorized"
        request.add_header("Authorization", f"Bearer {TOKEN}")
        with urllib.request.urlopen(request, timeout=10) as r:
            assert r.status == 201
        proc.terminate()
        _wait_for(lines, "stopped")
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_paths_outside_the_web_folder_are_not_served(admin_gc):
    """Traversal in every spelling reaches nothing but a 404 (or the router's own refusal)."""
    url = admin_gc.admin_url
    async with aiohttp.ClientSession() as session:
        for path in ("/static/../app.py", "/static/..%2fapp.py", "/static/%2e%2e%2f%2e%2e%2fconfig.py",
                     "/static/....//app.py", "/static/%2e%2e/admin/app.py", "/static/app.js%00.css",
                     "/../../etc/passwd", "/static/..\\app.py"):
            async with session.get(url + path) as r:
                body = await r.read()
                assert r.status in (400, 404), (path, r.status)
                assert b"import" not in body and b"root:" not in body, path
        async with session.get(url + "/static/app.js") as r:
            assert r.status == 200      # the folder's own files are served


async def test_a_deeply_nested_body_is_a_400_and_the_listener_goes_on(admin_gc):
    """A JSON body nested far deeper than any request needs is refused as malformed, not a crash."""
    url = admin_gc.admin_url
    deep = '{"name": ' + "[" * 100_000 + "]" * 100_000 + "}"
    async with aiohttp.ClientSession() as session:
        async with session.post(url + "/api/topics", data=deep, headers={"Content-Type": "application/json"}) as r:
            assert r.status == 400 and "error" in await r.json()
        async with session.get(url + "/api/nodes") as r:
            assert r.status == 200
    assert len(admin_gc.service.cluster.topics) == 2
