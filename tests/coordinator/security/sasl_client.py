"""A raw Kafka connection for the security tests (a module, not a conftest): frames in, responses out, in order."""
from __future__ import annotations

import asyncio
import struct

from groupcoord.protocol import frames


class Client:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.corr = 0

    @classmethod
    async def connect(cls, bootstrap: str) -> "Client":
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        return cls(*await asyncio.open_connection(host, int(port)))

    def send(self, api_key: int, version: int, body: dict) -> int:
        self.corr += 1
        self.writer.write(frames.encode_request(api_key, version, self.corr, body, "security-test"))
        return self.corr

    async def read(self, api_key: int, version: int, timeout: float = 5.0) -> dict:
        size = struct.unpack(">i", await asyncio.wait_for(self.reader.readexactly(4), timeout))[0]
        data = await asyncio.wait_for(self.reader.readexactly(size), timeout)
        return frames.decode_response(api_key, version, data)[1]

    async def call(self, api_key: int, version: int, body: dict) -> dict:
        self.send(api_key, version, body)
        return await self.read(api_key, version)

    async def closed(self, timeout: float = 5.0) -> bool:
        """True when the server closes the connection (EOF) within timeout."""
        try:
            data = await asyncio.wait_for(self.reader.read(1), timeout)
        except ConnectionError:
            return True
        return data == b""

    async def login(self, user: str, password: str, authzid: str = "") -> dict:
        """ApiVersions, SaslHandshake v1 PLAIN, SaslAuthenticate v2; returns the last response."""
        versions = await self.call(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert versions["error_code"] == 0
        assert (await self.call(17, 1, {"mechanism": "PLAIN"}))["error_code"] == 0
        token = f"{authzid}\0{user}\0{password}".encode()
        return await self.call(36, 2, {"auth_bytes": token})

    def close(self) -> None:
        self.writer.close()
