"""Arrays packed as an .npz archive (what np.savez writes and np.load reads), written directly.

The store packs every batch of records and every summary as an .npz blob. np.savez goes through
zipfile and numpy's file writer one array at a time, about 25 us per array, which is a fixed cost
of every recorded batch paid in the training's thread. `pack` writes the same format itself: a
zip archive whose members `<name>.npy` are stored uncompressed, each an .npy file (format 1.0
header, C order), so np.load, zipfile and every store written before read it unchanged. Arrays
it does not write this way (objects, more than 65,535 members or 2 GiB) go to np.savez.
"""
from __future__ import annotations

import io
import struct
import zlib

import numpy as np

_LOCAL = struct.Struct("<IHHHHHIIIHH")  # local file header, then the name
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")  # central directory entry, then the name
_END = struct.Struct("<IHHHHIIH")  # end of central directory record
_DOS_DATE = (1 << 5) | 1  # 1980-01-01, the earliest date a zip can hold: the blob depends on the arrays alone
_LIMIT = 1 << 31
_MAGIC = b"\x93NUMPY\x01\x00"
_MAGIC_SIZE = len(_MAGIC) + 2  # and the header's length
_UNIX = 3 << 8  # "made by" a unix system: the members' mode (0600) is read from the external attributes


def _npy(array: np.ndarray) -> tuple[bytes, bytes]:
    """An array's .npy header (format 1.0: magic, length, the header dict padded so that the data
    starts at a multiple of 64 bytes) and its data in C order. ValueError: a header too long."""
    text = "{'descr': %r, 'fortran_order': False, 'shape': %r, }" % (
        np.lib.format.dtype_to_descr(array.dtype), array.shape)
    length = len(text) + 1
    length += -(_MAGIC_SIZE + length) % 64
    if length > 0xFFFF:
        raise ValueError("header too long for format 1.0")
    head = _MAGIC + struct.pack("<H", length) + text.encode("latin1") + b" " * (length - len(text) - 1) + b"\n"
    return head, array.tobytes(order="C")


def pack(arrays: dict[str, np.ndarray]) -> bytes:
    """The arrays as the bytes np.savez(buffer, **arrays) would give a reader (see the module)."""
    arrays = {name: np.asarray(value) for name, value in arrays.items()}
    if len(arrays) > 0xFFFF or any(a.dtype.hasobject for a in arrays.values()):
        return _savez(arrays)
    out, central, offset = [], [], 0
    for name, array in arrays.items():
        try:
            head, data = _npy(array)
        except ValueError:  # a header too long for format 1.0 (a structured dtype of many fields)
            return _savez(arrays)
        size = len(head) + len(data)
        crc = zlib.crc32(data, zlib.crc32(head))
        member = f"{name}.npy".encode()
        if offset + size > _LIMIT:
            return _savez(arrays)
        out += [_LOCAL.pack(0x04034B50, 20, 0, 0, 0, _DOS_DATE, crc, size, size, len(member), 0), member, head, data]
        central += [_CENTRAL.pack(0x02014B50, _UNIX | 20, 20, 0, 0, 0, _DOS_DATE, crc, size, size, len(member), 0, 0, 0, 0,
                                  0o600 << 16, offset), member]
        offset += _LOCAL.size + len(member) + size
    directory = b"".join(central)
    out += [directory, _END.pack(0x06054B50, 0, 0, len(arrays), len(arrays), len(directory), offset, 0)]
    return b"".join(out)


def _savez(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()
