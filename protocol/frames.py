"""Request and response headers, and whole frames.

A frame on the wire is an int32 size followed by that many bytes: a header and a
body. The header version follows from the body's (api key, version):

- request header v1 (non-flexible API version): api key, api version, correlation
  id, client id (nullable classic string);
- request header v2 (flexible): the same plus a tagged-field section; the client id
  stays a classic int16-length string;
- response header v0: correlation id; v1 adds a tagged-field section; ApiVersions
  responses always use v0 (KIP-511).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .api_keys import ApiKey
from .errors import DecodeError, UnsupportedVersionError
from .messages import APIS
from .schema import F, MessageSpec

API_VERSIONS_KEY = int(ApiKey.API_VERSIONS)

REQUEST_HEADER = MessageSpec("RequestHeader", [
    F("RequestApiKey", "int16"),
    F("RequestApiVersion", "int16"),
    F("CorrelationId", "int32"),
    F("ClientId", "string", "1+", nullable="1+", flexible="none"),
], valid="0-2", flexible="2+")

RESPONSE_HEADER = MessageSpec("ResponseHeader", [
    F("CorrelationId", "int32"),
], valid="0-1", flexible="1+")

_PEEK = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")
_SIZE_AND_CORRELATION = struct.Struct(">ii")


def request_header_version(api_key: int, api_version: int) -> int:
    api = APIS.get(api_key)
    if api is not None and api.request.is_flexible(api_version):
        return 2
    return 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    api = APIS.get(api_key)
    if api is not None and api.response.is_flexible(api_version):
        return 1
    return 0


def frame(payload: bytes | bytearray) -> bytes:
    """Prefix a payload with its int32 size."""
    return _SIZE.pack(len(payload)) + payload


def peek_header(data: bytes) -> tuple[int, int, int]:
    """(api key, api version, correlation id) of a request frame, without decoding more."""
    if len(data) < 8:
        raise DecodeError("RequestHeader", None, 0, f"a request needs at least 8 bytes, got {len(data)}")
    return _PEEK.unpack_from(data, 0)


@dataclass
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    body: dict
    header: dict = field(repr=False, default_factory=dict)
    trailing: int = 0       # bytes after the body, which Kafka ignores (librdkafka sends some)

    @property
    def api_name(self) -> str:
        api = APIS.get(self.api_key)
        return api.name if api else str(self.api_key)


_REQUEST_DECODERS: dict[tuple[int, int], tuple] = {}
_RESPONSE_ENCODERS: dict[tuple[int, int], tuple] = {}


def decode_request(data: bytes) -> Request:
    """Decode a request frame (without its size prefix): header and body.

    An API or version we do not speak raises UnsupportedVersionError; anything
    malformed raises DecodeError with the API, the version and the offset. Bytes after the
    body are ignored and counted in ``trailing``, as Kafka reads the fields it knows and no more
    (librdkafka's all-topics Metadata request carries three).
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    api_key, api_version, _ = peek_header(data)
    cached = _REQUEST_DECODERS.get((api_key, api_version))
    if cached is not None:
        header_decode, body_decode = cached
        header, pos = header_decode(data, 0)
        body, end = body_decode(data, pos)
        client_id = header["client_id"]
        return Request(api_key, api_version, header["correlation_id"],
                       "" if client_id is None else client_id, body, header, len(data) - end)
    api = APIS.get(api_key)
    if api is None:
        raise UnsupportedVersionError(f"ApiKey{api_key}", api_version, 0, f"unknown API key {api_key}")
    if not api.request.supports(api_version):
        raise UnsupportedVersionError(api.request.name, api_version, 2,
                                      f"supported versions are {api.request.valid[0]}-{api.request.valid[1]}")
    hv = 2 if api.request.is_flexible(api_version) else 1
    _REQUEST_DECODERS[api_key, api_version] = (REQUEST_HEADER.codec(hv).decode_from,
                                               api.request.codec(api_version).decode_from)
    return decode_request(data)


def encode_request(api_key: int, api_version: int, correlation_id: int, body: dict,
                   client_id: str | None = "groupcoord", *, framed: bool = True) -> bytes:
    api = APIS[api_key]
    hv = 2 if api.request.is_flexible(api_version) else 1
    out = REQUEST_HEADER.codec(hv).encode_into({
        "request_api_key": api_key, "request_api_version": api_version,
        "correlation_id": correlation_id, "client_id": client_id,
    })
    out += api.request.codec(api_version).encode_into(body)
    return frame(out) if framed else bytes(out)


class SharedBody(dict):
    """A response body answered to many requests (a Metadata answer of one cluster epoch). It
    must not change once built; its encoding is kept per API version and reused."""
    __slots__ = ("encoded", "framed")

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.encoded: dict[tuple[int, int], bytes] = {}
        # per API version: (the frame's size, the frame after the correlation id)
        self.framed: dict[tuple[int, int], tuple[int, bytes]] = {}


def encode_response(api_key: int, api_version: int, correlation_id: int, body: dict,
                    *, framed: bool = True) -> bytes:
    if framed and body.__class__ is SharedBody:
        # all but the correlation id kept (the answer to a heartbeat: 1.1x the heartbeats a second)
        known = body.framed.get((api_key, api_version))
        if known is not None:
            return _SIZE_AND_CORRELATION.pack(known[0], correlation_id) + known[1]
        frame = _encode_response(api_key, api_version, correlation_id, body, True)
        body.framed[api_key, api_version] = (len(frame) - 4, frame[8:])
        return frame
    return _encode_response(api_key, api_version, correlation_id, body, framed)


def _encode_response(api_key: int, api_version: int, correlation_id: int, body: dict, framed: bool) -> bytes:
    cached = _RESPONSE_ENCODERS.get((api_key, api_version))
    if cached is None:
        api = APIS[api_key]
        cached = _RESPONSE_ENCODERS[api_key, api_version] = (
            response_header_version(api_key, api_version) == 1, api.response.codec(api_version).encode_into)
    flexible_header, encode_body = cached
    if body.__class__ is SharedBody:
        payload = body.encoded.get((api_key, api_version))
        if payload is None:
            payload = body.encoded[api_key, api_version] = bytes(encode_body(body))
    else:
        payload = encode_body(body)
    header = _SIZE.pack(correlation_id) + (b"\x00" if flexible_header else b"")
    if framed:
        return _SIZE.pack(len(header) + len(payload)) + header + payload
    return header + bytes(payload)


def decode_response(api_key: int, api_version: int, data: bytes) -> tuple[int, dict]:
    """Decode a response frame (without its size prefix) into (correlation id, body)."""
    if not isinstance(data, bytes):
        data = bytes(data)
    api = APIS[api_key]
    hv = response_header_version(api_key, api_version)
    header, pos = RESPONSE_HEADER.codec(hv).decode_from(data, 0)
    return header["correlation_id"], api.response.codec(api_version).decode(data, pos)
