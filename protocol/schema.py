"""Messages as data: Kafka message declarations and the codecs derived from them.

A message is declared once, the way Kafka's JSON message definitions do it: every
field names its type, the versions it is present in, the versions in which it may
be null, and its tag if it is a tagged field. :class:`MessageSpec` derives a
:class:`~groupcoord.protocol.types.KStruct` for each version (classic or compact
encodings, tagged-field sections in flexible versions) and compiles it with
construct's compiler, our emitters doing the work.

Declaration example::

    F("GroupInstanceId", "string", "5+", nullable="5+", default=None)
    F("Protocols", A(S(F("Name", "string"), F("Metadata", "bytes"))))
    F("Assignment", S(F("TopicPartitions", A(...))), nullable="0+", default=None)

A struct field may be nullable (KIP-893): it then decodes to ``None`` or a dict, and is
written as Kafka writes it, a presence marker before the struct
(:class:`~groupcoord.protocol.types.NullableStruct`).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any, Iterable

from .errors import DecodeError, UnsupportedVersionError
from .types import (
    BOOL, FLOAT64, INT8, INT16, INT32, INT64, UINT16, UINT32, Array, Bytes, KField, KStruct, KType, NullableStruct, String, Uuid,
    UVarint, Varint, Varlong,
)

MISSING = object()
MAX_VERSION = 0x7FFF


def parse_versions(spec: str | None) -> tuple[int, int] | None:
    """'3+' -> (3, 32767); '1-4' -> (1, 4); '2' -> (2, 2); 'none'/None -> None."""
    if spec is None or spec == "none":
        return None
    spec = spec.strip()
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo), int(hi)
    return int(spec), int(spec)


def _in(rng: tuple[int, int] | None, v: int) -> bool:
    return rng is not None and rng[0] <= v <= rng[1]


def snake(name: str) -> str:
    """Kafka field name to our key: 'ThrottleTimeMs' -> 'throttle_time_ms'."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


_PRIMITIVES: dict[str, KType] = {
    "int8": INT8, "int16": INT16, "int32": INT32, "int64": INT64, "uint16": UINT16,
    "uint32": UINT32, "float64": FLOAT64, "bool": BOOL, "uuid": Uuid(),
    "uvarint": UVarint(), "varint": Varint(), "varlong": Varlong(),
}
_SIZED = {"string": String, "bytes": Bytes, "records": Bytes}


@dataclass(frozen=True)
class S:
    """A struct declaration: its fields in wire order."""

    fields: tuple

    def __init__(self, *fields: "F"):
        object.__setattr__(self, "fields", tuple(fields))


@dataclass(frozen=True)
class A:
    """An array declaration of a primitive type name or a struct."""

    elem: Any


class F:
    """One field declaration, in Kafka's terms.

    name      Kafka's field name (CamelCase); the decoded key is its snake_case form.
    type      'int8'...'int64', 'uint16', 'float64', 'bool', 'string', 'bytes', 'records',
              'uuid', '[]<primitive>', A(...) or S(...).
    versions  versions the field is present in ('0+', '3-5', '7').
    nullable  versions in which it may be null.
    tag       tag number if this is a tagged field (flexible versions only).
    default   value used when absent (tagged fields, encoding a dict that lacks it).
    flexible  versions in which the field uses compact encodings; default: the
              message's flexible versions ('none' keeps the classic encoding, as the
              request header's client_id does).
    """

    __slots__ = ("name", "key", "type", "versions", "nullable", "tag", "default", "flexible")

    def __init__(self, name: str, type: Any, versions: str = "0+", *, nullable: str | None = None,
                 tag: int | None = None, default: Any = MISSING, flexible: str | None = None):
        if isinstance(type, str) and type.startswith("[]"):
            type = A(type[2:])
        self.name = name
        self.key = snake(name)
        self.type = type
        self.versions = parse_versions(versions)
        self.nullable = parse_versions(nullable)
        self.tag = tag
        self.default = default
        self.flexible = flexible


def _default_for(t: KType, explicit: Any) -> Any:
    if explicit is not MISSING:
        return explicit
    if isinstance(t, NullableStruct):   # Kafka: no "default": "null" means an empty struct
        t = t.struct
    if isinstance(t, KStruct):
        return {f.key: f.default for f in t.fields + t.tagged}
    return t.default


class MessageSpec:
    """A request, a response or a data structure (header, consumer-protocol payload)."""

    def __init__(self, name: str, fields: Iterable[F], valid: str, flexible: str | None,
                 api_key: int | None = None):
        self.name = name
        self.fields = tuple(fields)
        self.valid = parse_versions(valid)
        self.flexible = parse_versions(flexible)
        self.api_key = api_key
        self._structs: dict[int, KStruct] = {}
        self._codecs: dict[int, Codec] = {}
        self._lock = threading.Lock()

    def __repr__(self):
        return f"MessageSpec({self.name}, v{self.valid[0]}-{self.valid[1]})"

    @property
    def versions(self) -> range:
        return range(self.valid[0], self.valid[1] + 1)

    def is_flexible(self, version: int) -> bool:
        return _in(self.flexible, version)

    def supports(self, version: int) -> bool:
        return _in(self.valid, version)

    # ---- struct derivation -------------------------------------------------
    def struct(self, version: int) -> KStruct:
        s = self._structs.get(version)
        if s is None:
            if not self.supports(version):
                raise UnsupportedVersionError(self.name, version, None,
                                              f"supported versions are {self.valid[0]}-{self.valid[1]}")
            s = self._build_struct(self.name, self.fields, version, self.is_flexible(version))
            s.version = version
            self._structs[version] = s
        return s

    def _build_struct(self, name: str, fields, version: int, flexible: bool) -> KStruct:
        out = []
        for f in fields:
            if not _in(f.versions, version):
                continue
            if f.tag is not None and not flexible:
                continue
            compact = flexible if f.flexible is None else _in(parse_versions(f.flexible), version)
            nullable = _in(f.nullable, version)
            t = self._resolve(f.type, f.name, version, flexible, compact, nullable, f.tag is not None)
            out.append(KField(f.key, t, _default_for(t, f.default), f.tag))
        return KStruct(name, out, flexible)

    def _resolve(self, t, name: str, version: int, flexible: bool, compact: bool, nullable: bool,
                 tagged: bool = False) -> KType:
        if isinstance(t, str):
            if t in _SIZED:
                return _SIZED[t](compact=compact, nullable=nullable)
            if nullable:
                raise ValueError(f"{self.name}.{name}: {t} cannot be nullable")
            return _PRIMITIVES[t]
        if isinstance(t, A):
            elem = self._resolve(t.elem, name, version, flexible, compact, False)
            return Array(elem, compact=compact, nullable=nullable)
        if isinstance(t, S):
            struct = self._build_struct(f"{self.name}.{name}", t.fields, version, flexible)
            return NullableStruct(struct, tagged) if nullable else struct
        raise TypeError(f"{self.name}.{name}: unknown type {t!r}")

    # ---- compiled codecs -------------------------------------------------------
    def codec(self, version: int) -> "Codec":
        c = self._codecs.get(version)
        if c is None:
            with self._lock:
                c = self._codecs.get(version)
                if c is None:
                    c = self._codecs[version] = Codec(self, version, self.struct(version))
        return c

    def decode(self, data, version: int, pos: int = 0) -> dict:
        return self.codec(version).decode(data, pos)

    def encode(self, obj: dict, version: int) -> bytes:
        return self.codec(version).encode(obj)


class Codec:
    """The compiled decoder and encoder of one message version.

    ``struct`` is the construct (interpreted ``parse``/``build`` work on it) and
    ``compiled`` what ``struct.compile()`` made of it; ``decode_from`` and
    ``encode_into`` are the flat functions our emitters generated inside it.
    """

    __slots__ = ("spec", "version", "struct", "compiled", "decode_from", "_encode", "name")

    def __init__(self, spec: MessageSpec, version: int, struct: KStruct):
        self.spec = spec
        self.version = version
        self.struct = struct
        self.name = spec.name
        self.compiled = struct.compile()
        dec, enc = struct.emitted
        ns = self.compiled.module.__dict__
        self.decode_from = ns[dec]      # (buf, pos) -> (obj, pos)
        self._encode = ns[enc]          # obj -> bytearray

    def decode(self, data, pos: int = 0, *, allow_trailing: bool = False) -> dict:
        """Decode one message from ``data[pos:]``; trailing bytes are an error unless allowed."""
        if not isinstance(data, bytes):
            data = bytes(data)
        obj, end = self.decode_from(data, pos)
        if end != len(data) and not allow_trailing:
            raise DecodeError(self.name, self.version, end, f"{len(data) - end} trailing bytes")
        return obj

    def encode(self, obj: dict) -> bytes:
        return bytes(self._encode(obj))

    def encode_into(self, obj: dict) -> bytearray:
        return self._encode(obj)


@dataclass
class Api:
    """A Kafka API: its key, its name and the request and response declarations."""

    key: int
    name: str
    request: MessageSpec
    response: MessageSpec

    @property
    def versions(self) -> range:
        return self.request.versions


def api(key: int, name: str, *, valid: str, flexible: str | None,
        request: Iterable[F], response: Iterable[F]) -> Api:
    """An API as a message module declares it: its key, its name as Kafka's message schemas spell
    it ("JoinGroup", its messages being JoinGroupRequest and JoinGroupResponse) and its fields.
    :mod:`~groupcoord.protocol.messages` finds it, :class:`~groupcoord.protocol.api_keys.ApiKey`
    names it (``ApiKey.JOIN_GROUP``)."""
    key = int(key)      # plain ints at run time: an IntEnum key is slower in every dict
    return Api(key, name,
               MessageSpec(f"{name}Request", request, valid, flexible, key),
               MessageSpec(f"{name}Response", response, valid, flexible, key))
