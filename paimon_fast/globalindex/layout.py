"""The bitmap global index file's fixed numbers: its footer (magic, version, length, struct),
the bytes read at open, the size up to which a bitmap gets the structural check, and the
option names and defaults of its writer and reader (see :mod:`.format` for the layout)."""

from __future__ import annotations

import struct

MAGIC = 0x42474958
VERSION = 1
FOOTER_LENGTH = 48
TAIL_READ = 16384  # bytes read at open: footer and what Java writes before it
SMALL_BITMAP = 4096  # bitmaps up to this size get our structural check before pyroaring's
FOOTER_STRUCT = struct.Struct(">qiqiqiiii")

OPT_BLOCK_SIZE = "bitmap-index.dictionary-block-size"
OPT_COMPRESSION = "bitmap-index.compression"
OPT_LEVEL = "bitmap-index.compression-level"
OPT_FALLBACK = "bitmap-index.fallback-scan-max-size"
DEFAULT_BLOCK_SIZE = "16 kb"
DEFAULT_FALLBACK = "256 mb"

EMPTY64 = b"\x00" * 8
_ANY_LENGTH = (0, 0x7FFFFFFF)
