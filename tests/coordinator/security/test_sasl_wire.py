"""SASL/PLAIN over real sockets with raw frames, and the ACL admin API changing what a connection may do."""
from __future__ import annotations

import asyncio
import struct
import time

import aiohttp
from sasl_client import Client
from structlog.testing import capture_logs

from groupcoord.coordinator.embed import running
from groupcoord.protocol import frames
from groupcoord.protocol.consumer import encode_subscription
from groupcoord.protocol.errors import ErrorCode

SASL = {"sasl.enabled.mechanisms": "PLAIN", "groupcoord.sasl.users": "alice:alice-secret,bob:bob-secret",
        "connection.failed.authentication.delay.ms": 300}
JOIN = {"group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
        "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": encode_subscription({"topics": ["t"], "user_data": None}, 0)}]}


async def test_authenticated_connection_works_and_its_principal_is_the_user():
    async with running(config=SASL) as gc:
        c = await Client.connect(gc.bootstrap_servers)
        resp = await c.login("alice", "alice-secret")
        assert resp == {"error_code": 0, "error_message": None, "auth_bytes": b"", "session_lifetime_ms": 0}
        assert (await c.call(11, 5, JOIN))["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
        conn = next(iter(gc.server.connections.values()))
        assert (conn.principal, conn.authenticated) == ("User:alice", True)
        c.close()


async def test_request_before_authentication_closes_the_connection():
    async with running(config=SASL) as gc:
        c = await Client.connect(gc.bootstrap_servers)
        c.send(3, 1, {"topics": None})                         # Metadata, no handshake
        assert await c.closed()
        c = await Client.connect(gc.bootstrap_servers)
        assert (await c.call(17, 1, {"mechanism": "PLAIN"}))["error_code"] == 0
        c.send(11, 5, JOIN)                                     # JoinGroup before SaslAuthenticate
        assert await c.closed()


async def test_wrong_password_is_answered_after_the_delay_then_closed():
    async with running(config=SASL) as gc:
        c = await Client.connect(gc.bootstrap_servers)
        started = time.monotonic()
        resp = await c.login("alice", "bob-secret")
        assert time.monotonic() - started >= 0.3               # connection.failed.authentication.delay.ms
        assert resp["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert resp["error_message"] == "Authentication failed: Invalid username or password"
        assert await c.closed()


async def test_acls_from_the_admin_api_apply_to_the_next_request():
    config = {**SASL, "groupcoord.acls.enabled": "true", "super.users": "User:admin"}
    async with running(config=config, http=True, http_token="tok") as gc:
        c = await Client.connect(gc.bootstrap_servers)
        await c.login("bob", "bob-secret")
        assert (await c.call(11, 5, JOIN))["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        auth = {"Authorization": "Bearer tok"}
        bob_reads_g = {"principal": "User:bob", "resource_type": "GROUP", "resource_name": "g", "operation": "READ"}
        async with aiohttp.ClientSession(gc.admin_url) as http:
            async with http.post("/api/acls", json=bob_reads_g) as r:
                assert r.status == 401
            async with http.post("/api/acls", json={"acls": [{**bob_reads_g, "operation": "WRITE"}]},
                                 headers=auth) as r:
                assert r.status == 400
                assert (await r.json())["error"] == "invalid_acl"
                assert "does not apply to a GROUP" in (await r.json())["message"]
            async with http.post("/api/acls", json=bob_reads_g, headers=auth) as r:
                assert r.status == 201
                created = (await r.json())["created"]
            assert created == [{**bob_reads_g, "host": "*", "pattern_type": "LITERAL", "permission_type": "ALLOW"}]
            assert (await c.call(11, 5, JOIN))["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
            async with http.get("/api/acls", params={"principal": "User:bob"}) as r:
                listing = await r.json()
            assert listing == {"enabled": True, "super_users": ["User:admin"],
                               "allow_everyone_if_no_acl_found": False, "acls": created}
            async with http.get("/api/acls", params={"operation": "FLY"}) as r:
                assert r.status == 400
            async with http.delete("/api/acls", params={"principal": "User:bob"}, headers=auth) as r:
                assert (await r.json())["deleted"] == created
            assert (await c.call(11, 5, JOIN))["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
            async with http.get("/openapi.json") as r:
                assert set((await r.json())["paths"]["/api/acls"]) == {"get", "post", "delete"}
        c.close()


async def test_acl_changes_need_an_authorizer():
    async with running(http=True) as gc:
        async with aiohttp.ClientSession(gc.admin_url) as http:
            async with http.get("/api/acls") as r:
                assert (await r.json())["enabled"] is False
            async with http.post("/api/acls", json={"principal": "User:a", "resource_type": "GROUP",
                                                    "resource_name": "g", "operation": "READ"}) as r:
                assert r.status == 409 and (await r.json())["error"] == "security_disabled"


async def test_a_frame_over_sasl_server_max_receive_size_closes_at_its_size_prefix():
    """Kafka reads every frame before authentication completes with a NetworkReceive limited to
    sasl.server.max.receive.size (512 KiB): a larger size prefix fails the authentication and
    closes the connection at once, without reading the body."""
    async with running(config=SASL) as gc:
        with capture_logs() as logs:
            c = await Client.connect(gc.bootstrap_servers)
            assert (await c.call(17, 1, {"mechanism": "PLAIN"}))["error_code"] == 0
            c.writer.write(struct.pack(">i", 60 << 20))     # a 60 MB SaslAuthenticate: the size prefix only
            assert await c.closed()
            j = await Client.connect(gc.bootstrap_servers)
            j.writer.write(struct.pack(">i", 524289) + struct.pack(">hhih", 11, 5, 1, 1) + b"j")   # a JoinGroup
            assert await j.closed()
        closes = [e for e in logs if e["event"] == "closing_connection"]
        assert [e["reason"] for e in closes] == [
            "Failing SASL authentication due to invalid receive size (size = 62914560 larger than "
            "sasl.server.max.receive.size=524288)",
            "Failing SASL authentication due to invalid receive size (size = 524289 larger than "
            "sasl.server.max.receive.size=524288)"]
        # once authenticated, the limit is socket.request.max.bytes: a 600 kB JoinGroup is answered
        c = await Client.connect(gc.bootstrap_servers)
        await c.login("alice", "alice-secret")
        big = {**JOIN, "protocols": [{"name": "range", "metadata": b"m" * 600_000}]}
        assert (await c.call(11, 5, big))["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
        c.close()


async def test_sasl_server_max_receive_size_is_configurable():
    handshake = frames.encode_request(17, 1, 1, {"mechanism": "PLAIN"}, "c" * 250)    # 250-byte client id
    async with running(config={**SASL, "sasl.server.max.receive.size": 200}) as gc:
        c = await Client.connect(gc.bootstrap_servers)
        c.writer.write(handshake)
        assert await c.closed()
        c = await Client.connect(gc.bootstrap_servers)
        assert (await c.login("alice", "alice-secret"))["error_code"] == 0      # its frames are smaller
        # authenticated, the limit is socket.request.max.bytes
        c.writer.write(frames.encode_request(3, 1, 9, {"topics": None}, "c" * 250))
        assert (await c.read(3, 1))["brokers"]
        c.close()
    async with running(config=SASL) as gc:              # 512 KiB by default
        c = await Client.connect(gc.bootstrap_servers)
        c.writer.write(handshake)
        assert (await c.read(17, 1))["error_code"] == 0
        c.close()


async def test_a_wrong_password_loop_leaves_nothing_behind():
    """Kafka has no lockout: each guess is answered SASL_AUTHENTICATION_FAILED after the delay and
    its connection closed (a second SaslAuthenticate on it gets no answer). 40 guesses, 20 at a
    time; then no connection is left and the right password still logs in."""
    async with running(config={**SASL, "connection.failed.authentication.delay.ms": 50}) as gc:
        async def guess(i: int) -> None:
            c = await Client.connect(gc.bootstrap_servers)
            resp = await c.login("alice", f"guess-{i}")
            assert resp["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
            c.send(36, 2, {"auth_bytes": b"\0alice\0alice-secret"})
            assert await c.closed()

        for batch in range(2):
            await asyncio.gather(*(guess(20 * batch + i) for i in range(20)))
        deadline = time.monotonic() + 5
        while gc.server.connections:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.005)
        c = await Client.connect(gc.bootstrap_servers)
        assert (await c.login("alice", "alice-secret"))["error_code"] == 0
        c.close()
