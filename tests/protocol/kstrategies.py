"""Hypothesis strategies derived from our own version-specific structs."""
from __future__ import annotations

import uuid

from hypothesis import strategies as st

from groupcoord.protocol.types import Array, Bytes, Fixed, KStruct, NullableStruct, String, Uuid

_RANGES = {
    "b": (-(2**7), 2**7 - 1), "h": (-(2**15), 2**15 - 1), "i": (-(2**31), 2**31 - 1),
    "q": (-(2**63), 2**63 - 1), "H": (0, 2**16 - 1), "I": (0, 2**32 - 1),
}

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
small_bytes = st.binary(max_size=24)


def for_type(t, depth: int = 0):
    if isinstance(t, Fixed):
        if t.fmt == "?":
            return st.booleans()
        if t.fmt == "d":
            return st.floats(allow_nan=False)
        lo, hi = _RANGES[t.fmt]
        return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, -1, 0]))
    if isinstance(t, Uuid):
        return st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
    if isinstance(t, String):
        base = text
    elif isinstance(t, Bytes):
        base = small_bytes
    elif isinstance(t, Array):
        base = st.lists(for_type(t.elem, depth + 1), max_size=4 if depth < 2 else 2)
    elif isinstance(t, KStruct):
        return for_struct(t, depth + 1)
    elif isinstance(t, NullableStruct):
        return st.one_of(st.none(), for_struct(t.struct, depth + 1))
    else:
        raise TypeError(t)
    if getattr(t, "nullable", False):
        return st.one_of(st.none(), base)
    return base


def for_struct(s: KStruct, depth: int = 0):
    fields = {f.key: for_type(f.type, depth) for f in s.fields}
    for f in s.tagged:
        # tagged fields: either absent-as-default or an explicit value
        fields[f.key] = st.one_of(st.just(f.default), for_type(f.type, depth))
    return st.fixed_dictionaries(fields)
