"""Conversions between our message dicts and kafka-python 3.x's protocol objects.

Used by the oracle tests and by bench/codec.py.
"""
from __future__ import annotations

import importlib
import pkgutil
import uuid

import kafka.protocol
from hypothesis import reject
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.schemas.fields.codecs.types import BitField

from groupcoord.protocol.types import Array, KStruct, NullableStruct, Uuid, ZERO_UUID


def their_classes() -> dict[str, type]:
    for mod in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if ".old" in mod.name or mod.name.endswith("generate_stubs"):
            continue
        importlib.import_module(mod.name)
    found = {}
    stack = list(ApiMessage.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None and getattr(cls, "_json", None):
            found.setdefault(cls.name, cls)
    return found


def _is_bitfield(field) -> bool:
    return getattr(field, "_type", None) is BitField


def _to_bits(value: int):
    bits = {b for b in range(32) if (value & 0xFFFFFFFF) >> b & 1}
    return None if bits == {31} else bits


# kafka-python renames a few fields (json_patch); Kafka's names are ours
ALIASES = {
    "cluster_authorized_operations": "authorized_operations",
    "topic_authorized_operations": "authorized_operations",
}


def to_theirs(cls, obj: dict, struct: KStruct, version=None):
    """Our dict -> a kafka-python object of the same struct."""
    kwargs = {}
    for sub in struct.fields + struct.tagged:
        name = ALIASES.get(sub.key, sub.key)
        field = cls._struct.fields[name]
        value = obj[sub.key]
        if sub.tag is not None and value == sub.default:
            continue  # tagged fields at their default are not written
        if field.is_struct_array() and value is not None:
            value = [to_theirs(field.data_class, x, sub.type.elem) for x in value]
        elif field.is_struct() and value is not None:
            st = sub.type.struct if isinstance(sub.type, NullableStruct) else sub.type
            value = to_theirs(field.data_class, value, st)
        elif _is_bitfield(field):
            if value == 0:
                reject()  # kafka-python writes an empty operation set as INT32_MIN
            value = _to_bits(value)
        kwargs[name] = value
    return cls(version=version, **kwargs) if version is not None else cls(**kwargs)


def from_theirs(their, t):
    """A kafka-python value -> our representation of type t."""
    if isinstance(t, NullableStruct):
        return None if their is None else from_theirs(their, t.struct)
    if isinstance(t, KStruct):
        if their is None:
            return {f.key: f.default for f in t.fields + t.tagged}
        out = {}
        fields = their._struct.fields
        for f in t.fields + t.tagged:
            name = ALIASES.get(f.key, f.key)
            value = getattr(their, name)
            if _is_bitfield(fields[name]):
                value = -2147483648 if value is None else BitField.to_32_bit_field(value)
                value = value - (1 << 32) if value >= 1 << 31 else value
            out[f.key] = from_theirs(value, f.type)
        return out
    if isinstance(t, Array):
        return None if their is None else [from_theirs(x, t.elem) for x in their]
    if isinstance(t, Uuid):
        if their is None:
            return ZERO_UUID
        return their if isinstance(their, uuid.UUID) else uuid.UUID(bytes=bytes(their))
    if isinstance(their, (bytearray, memoryview)):
        return bytes(their)
    return their


def strip_unknown(value):
    if isinstance(value, dict):
        return {k: strip_unknown(v) for k, v in value.items() if k != "_unknown_tags"}
    if isinstance(value, list):
        return [strip_unknown(v) for v in value]
    return value
