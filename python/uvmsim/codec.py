"""Scalar building blocks of the .uvt encoding: framing constants, varints, zigzag, the enums and
host events, and a bounds-checked byte cursor.

Mirrors traces/trace_codec.{h,cpp}; the byte layout is docs/trace-format.md. Error messages are
the C++ reader's, word for word.
"""

import enum
import struct
from dataclasses import dataclass

from .errors import TraceError

FORMAT_VERSION = 3  # the newest version this module reads and writes
MIN_FORMAT_VERSION = 1  # the oldest version it still reads
MEM_FREE_VERSION = 2  # the first version with MemFree host events
DEVICE_VERSION = 3  # the first version with SetDevice events and GPU ordinals other than 0
MAX_GPUS = 16  # GPU device ordinals 0 ... MAX_GPUS-1
HEADER_MAGIC = b"UVMTRACE"
FOOTER_MAGIC = b"UVTEND01"
HEADER_FIXED_BYTES = 8 + 4 + 4 + 8  # magic, u32 version, u32 flags, u64 metadata length
FOOTER_BYTES = 8 + 8 + 4 + 8  # u64 index offset, u64 index length, u32 index CRC, magic
CHUNK_ENTRY_BYTES = 1 + 4 + 8 * 5 + 4  # 49
LAUNCH_ENTRY_BYTES = 4 + 4 + 8 * 3  # 32
KNOWN_HEADER_FLAGS = 0
MAX_CHUNK_RAW_BYTES = 1 << 32
CHUNK_HOST = 0
CHUNK_BLOCKS = 1

PAGE_SHIFT = 12
U32_MAX = 0xFFFFFFFF
U64_MAX = 0xFFFFFFFFFFFFFFFF

# Access-record flags byte.
KIND_MASK = 0x07
VA_PAGES = 0x08
HAS_REF = 0x10
HAS_BYTES = 0x20
HAS_GAP = 0x40
HAS_REPEAT = 0x80


class AccessKind(enum.IntEnum):
    Prefetch = 0
    Read = 1
    Write = 2
    Atomic = 3


class HostEventType(enum.IntEnum):
    KernelLaunch = 0
    MemPrefetch = 1
    MemAdvise = 2
    Synchronize = 3
    CpuAccess = 4
    MemFree = 5  # cudaFree of an allocation (format version 2)
    SetDevice = 6  # cudaSetDevice: later launches run on GPU `device` (format version 3)


class Advice(enum.IntEnum):
    SetPreferredLocation = 0
    UnsetPreferredLocation = 1
    SetAccessedBy = 2
    UnsetAccessedBy = 3
    SetReadMostly = 4
    UnsetReadMostly = 5


class Processor(enum.IntEnum):
    """The byte a host event stores for a device: the CPU, or GPU 0. GPU N (a CUDA device
    ordinal, 0 ... MAX_GPUS-1) is the plain int N; `gpu(N)` gives it."""

    Gpu = 0x00
    Cpu = 0xFF


def gpu(ordinal):
    """The device value of GPU `ordinal` (Processor.Gpu for 0)."""
    if not isinstance(ordinal, int) or not 0 <= ordinal < MAX_GPUS:
        raise ValueError(f"GPU ordinal {ordinal!r} (0 ... {MAX_GPUS - 1})")
    return Processor.Gpu if ordinal == 0 else ordinal


def device_value(v):
    """A host event's device as the writer stores it: Processor.Cpu, Processor.Gpu or the int
    ordinal of another GPU; ValueError for anything else."""
    if v == Processor.Cpu:
        return Processor.Cpu
    return gpu(int(v)) if isinstance(v, int) else gpu(v)


def _device_name(v):
    if v == Processor.Cpu:
        return "Cpu"
    if v == Processor.Gpu:
        return "Gpu"
    return f"Gpu{v}" if isinstance(v, int) and 0 < v < MAX_GPUS else repr(v)


@dataclass
class HostEvent:
    """One host event in program order. Fields a type does not use keep their defaults."""

    type: HostEventType = HostEventType.Synchronize
    kernel_id: int = 0  # KernelLaunch
    launch_index: int = 0  # KernelLaunch; assigned by the writer
    iteration: int = -1  # KernelLaunch; -1 = not in a host loop
    va: int = 0  # MemPrefetch, MemAdvise, CpuAccess; MemFree: the allocation's base
    size: int = 0
    device: Processor = Processor.Gpu  # prefetch destination / advice target; SetDevice's GPU
    advice: Advice = Advice.SetPreferredLocation  # MemAdvise
    kind: AccessKind = AccessKind.Read  # CpuAccess

    def __repr__(self):
        """Only the fields of the event's type, e.g.
        HostEvent(CpuAccess, va=0x7f0000000000, size=4096, kind=Write)."""
        def name(enum, v):  # a repr must not fail on an out-of-range value
            try:
                return enum(v).name
            except ValueError:
                return repr(v)

        t = self.type
        if t == HostEventType.KernelLaunch:
            fields = (f"kernel_id={self.kernel_id}, launch_index={self.launch_index}, "
                      f"iteration={self.iteration}")
        elif t == HostEventType.Synchronize:
            fields = ""
        elif t == HostEventType.MemFree:
            fields = f"va={self.va:#x}"
        elif t == HostEventType.SetDevice:
            fields = f"device={_device_name(self.device)}"
        else:
            fields = f"va={self.va:#x}, size={self.size}"
            if t == HostEventType.MemPrefetch:
                fields += f", device={_device_name(self.device)}"
            elif t == HostEventType.MemAdvise:
                fields += (f", advice={name(Advice, self.advice)}, "
                           f"device={_device_name(self.device)}")
            else:
                fields += f", kind={name(AccessKind, self.kind)}"
        return f"HostEvent({name(HostEventType, t)}{', ' if fields else ''}{fields})"


_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


def put_u32(out, v):
    out += _U32.pack(v)


def put_u64(out, v):
    out += _U64.pack(v)


def get_u32(data, off):
    return _U32.unpack_from(data, off)[0]


def get_u64(data, off):
    return _U64.unpack_from(data, off)[0]


def put_varint(out, v):
    """Appends unsigned LEB128 of 0 <= v < 2^64 to the bytearray `out`."""
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def zigzag(v):
    """Signed 64-bit -> unsigned: 0, -1, 1, -2 ... -> 0, 1, 2, 3 ..."""
    return ((v << 1) ^ (v >> 63)) & U64_MAX


def unzigzag(u):
    return (u >> 1) ^ -(u & 1)


def get_varint(data, pos, end):
    """Decodes a varint of data[pos:end]. Returns (value, next position), or None when it runs
    past `end` or does not fit in 64 bits (the 10th byte may only be 0 or 1)."""
    v = 0
    shift = 0
    while shift < 64:
        if pos == end:
            return None
        b = data[pos]
        pos += 1
        if shift == 63 and b > 1:
            return None
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v, pos
        shift += 7
    return None


def hex32(v):
    return "0x%08x" % v


class ByteReader:
    """Bounds-checked cursor over data[begin:end]; every failure is a TraceError naming
    "<field>[ <index>]", with byte offsets relative to `begin` (as the C++ ByteReader)."""

    def __init__(self, data, begin, end, where, field, index=None):
        self.data = data
        self.begin = begin
        self.pos = begin
        self.end = end
        self.where = where
        self.field = field if index is None else f"{field} {index}"

    def fail(self, msg):
        raise TraceError(self.where, self.field, msg)

    def at_end(self):
        return self.pos == self.end

    def remaining(self):
        return self.end - self.pos

    def offset(self):
        return self.pos - self.begin

    def u8(self):
        if self.pos == self.end:
            self.fail(f"unexpected end of data at byte {self.offset()}")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def u32(self):
        if self.remaining() < 4:
            self.fail(f"unexpected end of data at byte {self.offset()}")
        v = get_u32(self.data, self.pos)
        self.pos += 4
        return v

    def u64(self):
        if self.remaining() < 8:
            self.fail(f"unexpected end of data at byte {self.offset()}")
        v = get_u64(self.data, self.pos)
        self.pos += 8
        return v

    def varint(self):
        r = get_varint(self.data, self.pos, self.end)
        if r is None:
            self.fail(
                f"malformed varint at byte {self.offset()} "
                "(runs past the end of the data or exceeds 64 bits)"
            )
        v, self.pos = r
        return v

    def varint32(self, what):
        at = self.offset()
        v = self.varint()
        if v > U32_MAX:
            self.fail(f"{what} {v} at byte {at} does not fit in 32 bits")
        return v

    def skip(self, n):
        if n > self.remaining():
            self.fail(f"length {n} at byte {self.offset()} runs past the end of the data")
        self.pos += n


def encode_host_event(ev, out):
    """Appends the encoding of `ev` to the bytearray `out` (values are checked by the writer)."""
    out.append(int(ev.type))
    t = ev.type
    if t == HostEventType.KernelLaunch:
        put_varint(out, ev.kernel_id)
        put_varint(out, ev.launch_index)
        put_varint(out, zigzag(ev.iteration))
    elif t == HostEventType.MemPrefetch:
        put_varint(out, ev.va)
        put_varint(out, ev.size)
        out.append(int(ev.device))
    elif t == HostEventType.MemAdvise:
        put_varint(out, ev.va)
        put_varint(out, ev.size)
        out.append(int(ev.advice))
        out.append(int(ev.device))
    elif t == HostEventType.CpuAccess:
        put_varint(out, ev.va)
        put_varint(out, ev.size)
        out.append(int(ev.kind))
    elif t == HostEventType.MemFree:
        put_varint(out, ev.va)
    elif t == HostEventType.SetDevice:
        out.append(int(ev.device))


def _decode_processor(r, version):
    raw = r.u8()
    if raw == 0xFF:
        return Processor.Cpu
    if raw < MAX_GPUS and (raw == 0 or version >= DEVICE_VERSION):
        return gpu(raw)
    if raw < MAX_GPUS:
        r.fail(f"unknown processor id {raw} in a version {version} trace (GPU {raw} needs "
               f"version {DEVICE_VERSION})")
    r.fail(f"unknown processor id {raw} (0xFF is the CPU, 0 ... {MAX_GPUS - 1} a GPU)")


def _decode_range(r, ev):
    """VA and size of a prefetch, advice or CPU access: a range that wraps around the 64-bit
    address space is corruption (as in the C++ reader)."""
    ev.va = r.varint()
    ev.size = r.varint()
    if ev.size > U64_MAX - ev.va:
        r.fail(f"{ev.type.name} of {ev.size} bytes at {ev.va} wraps around the 64-bit address "
               "space")


def decode_host_event(r, version=FORMAT_VERSION):
    """Decodes and range-checks one host event of a version-`version` trace at the cursor `r`."""
    t = r.u8()
    needs = MEM_FREE_VERSION if t == HostEventType.MemFree else DEVICE_VERSION
    if t > HostEventType.SetDevice or (t >= HostEventType.MemFree and version < needs):
        r.fail(f"unknown host event type {t}" +
               (f" in a version {version} trace ({HostEventType(t).name} needs version {needs})"
                if HostEventType.MemFree <= t <= HostEventType.SetDevice else ""))
    ev = HostEvent(type=HostEventType(t))
    if t == HostEventType.KernelLaunch:
        ev.kernel_id = r.varint32("kernel id")
        ev.launch_index = r.varint32("launch index")
        it = unzigzag(r.varint())
        # -1 is "not in a host loop"; other iterations count from 0 (as in the C++ reader).
        if not -1 <= it < (1 << 31):
            r.fail(f"iteration {it} (must be -1, no loop, or 0..2147483647)")
        ev.iteration = it
    elif t == HostEventType.MemPrefetch:
        _decode_range(r, ev)
        ev.device = _decode_processor(r, version)
    elif t == HostEventType.MemAdvise:
        _decode_range(r, ev)
        advice = r.u8()
        if advice > Advice.UnsetReadMostly:
            r.fail(f"unknown advice {advice}")
        ev.advice = Advice(advice)
        ev.device = _decode_processor(r, version)
    elif t == HostEventType.CpuAccess:
        _decode_range(r, ev)
        kind = r.u8()
        if kind > AccessKind.Atomic:
            r.fail(f"unknown access kind {kind}")
        ev.kind = AccessKind(kind)
    elif t == HostEventType.MemFree:
        ev.va = r.varint()
    elif t == HostEventType.SetDevice:
        ev.device = _decode_processor(r, version)
        if ev.device == Processor.Cpu:
            r.fail("SetDevice names the CPU (a kernel runs on a GPU)")
    return ev
