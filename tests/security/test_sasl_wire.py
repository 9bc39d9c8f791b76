"""SASL/PLAIN over real sockets with raw frames, and the ACL admin API changing what a connection may do."""
from __future__ import annotations

import time

import aiohttp
from sasl_client import Client

from groupcoord.coordinator.embed import running
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
