"""Kafka's varints, the one implementation the message codec and the record batches share:
unsigned varints (protobuf's base-128, at most 5 bytes for 32 bits, 10 for 64) and their zig-zag
signed forms (Kafka's ByteUtils readVarint/readVarlong and writeUnsignedVarint)."""
from __future__ import annotations


class VarintError(ValueError):
    """A varint that is cut short, too long or too large; ``pos`` is where it starts."""

    def __init__(self, reason: str, pos: int):
        super().__init__(reason)
        self.pos = pos


def zigzag(value: int, bits: int = 64) -> int:
    """A signed value as the unsigned one Kafka writes: 0, -1, 1, -2 ... -> 0, 1, 2, 3 ..."""
    return ((value << 1) ^ (value >> (bits - 1))) & ((1 << bits) - 1)


def unzigzag(value: int) -> int:
    """The inverse of :func:`zigzag`."""
    return (value >> 1) ^ -(value & 1)


def write_uvarint(out: bytearray, value: int) -> None:
    """Append the unsigned varint of ``value`` (>= 0) to ``out``."""
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def uvarint_bytes(value: int) -> bytes:
    """The unsigned varint of ``value`` (>= 0)."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    write_uvarint(out, value)
    return bytes(out)


def read_uvarint(buf, pos: int, bits: int = 32, end: int | None = None, what: str = "varint") -> tuple[int, int]:
    """The unsigned varint of at most ``bits`` bits at ``buf[pos:end]``: (value, the position after
    it). Raises :class:`VarintError` naming ``what``."""
    if end is None:
        end = len(buf)
    max_shift = 7 * ((bits + 6) // 7)
    start, value, shift = pos, 0, 0
    while True:
        if pos >= end:
            raise VarintError(f"truncated {what}", start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value >> bits:
                raise VarintError(f"{what} does not fit in {bits} bits", start)
            return value, pos
        shift += 7
        if shift >= max_shift:
            raise VarintError(f"{what} longer than {max_shift // 7} bytes", start)
