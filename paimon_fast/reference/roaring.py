"""Pure-Python twin of ``_kernels/roaring.pyx``: Java's portable 32-bit roaring
serialization (after ``runOptimize()``), written plainly."""

from __future__ import annotations

import struct


def _runs(lows):
    runs = []
    for v in lows:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return runs


def serialize(values) -> bytes:
    """Bytes of the bitmap holding the given uint32 values (any order, duplicates ok)."""
    vals = sorted(set(int(v) for v in values))
    containers = []  # (key, card, kind, payload)
    i = 0
    while i < len(vals):
        key = vals[i] >> 16
        j = i
        while j < len(vals) and vals[j] >> 16 == key:
            j += 1
        lows = [v & 0xFFFF for v in vals[i:j]]
        card = len(lows)
        runs = _runs(lows)
        current = 8192 if card > 4096 else 2 * card
        if 2 + 4 * len(runs) < current:
            payload = struct.pack("<H", len(runs)) + b"".join(struct.pack("<HH", a, b - a) for a, b in runs)
            kind = "run"
        elif card > 4096:
            words = bytearray(8192)
            for v in lows:
                words[v >> 3] |= 1 << (v & 7)
            payload, kind = bytes(words), "bitmap"
        else:
            payload, kind = b"".join(struct.pack("<H", v) for v in lows), "array"
        containers.append((key, card, kind, payload))
        i = j
    size = len(containers)
    has_run = any(c[2] == "run" for c in containers)
    out = bytearray()
    if has_run:
        out += struct.pack("<I", 12347 | ((size - 1) << 16))
        flags = bytearray((size + 7) // 8)
        for n, c in enumerate(containers):
            if c[2] == "run":
                flags[n >> 3] |= 1 << (n & 7)
        out += flags
    else:
        out += struct.pack("<II", 12346, size)
    for key, card, _, _ in containers:
        out += struct.pack("<HH", key, card - 1)
    if not has_run or size >= 4:
        pos = len(out) + 4 * size
        for c in containers:
            out += struct.pack("<I", pos)
            pos += len(c[3])
    for c in containers:
        out += c[3]
    return bytes(out)


def deserialize(data: bytes, offset: int = 0, with_size: bool = False):
    """Sorted list of the values in the portable bitmap at ``offset`` (no validation
    beyond struct's); with ``with_size``, ``(values, serialized size)``."""
    (cookie,) = struct.unpack_from("<I", data, offset)
    if cookie & 0xFFFF == 12347:
        size = (cookie >> 16) + 1
        flags = data[offset + 4 : offset + 4 + (size + 7) // 8]
        p = offset + 4 + (size + 7) // 8
        has_run = True
    else:
        (size,) = struct.unpack_from("<I", data, offset + 4)
        flags, p, has_run = b"", offset + 8, False
    desc = [struct.unpack_from("<HH", data, p + 4 * n) for n in range(size)]
    p += 4 * size
    if not has_run or size >= 4:
        p += 4 * size
    out = []
    for n, (key, card1) in enumerate(desc):
        card = card1 + 1
        if has_run and flags[n >> 3] >> (n & 7) & 1:
            (nr,) = struct.unpack_from("<H", data, p)
            p += 2
            for r in range(nr):
                s, ln = struct.unpack_from("<HH", data, p + 4 * r)
                out.extend((key << 16) | v for v in range(s, s + ln + 1))
            p += 4 * nr
        elif card > 4096:
            words = data[p : p + 8192]
            out.extend((key << 16) | b for b in range(65536) if words[b >> 3] >> (b & 7) & 1)
            p += 8192
        else:
            out.extend((key << 16) | v for v in struct.unpack_from(f"<{card}H", data, p))
            p += 2 * card
    return (out, p - offset) if with_size else out
