"""The checksum of .uvt headers, indexes and chunks, in one place.

The format uses the IEEE 802.3 / zlib CRC-32 (docs/trace-format.md, "Conventions"), which is what
`zlib.crc32` computes. Should the format switch to another checksum, this is the only function to
change on the Python side.
"""

import zlib


def crc32(data):
    """CRC-32 (reflected polynomial 0xEDB88320, init and final XOR 0xFFFFFFFF) of a bytes-like."""
    return zlib.crc32(data) & 0xFFFFFFFF
