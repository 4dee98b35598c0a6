"""Reading .uvt traces: `Trace(path)`.

Opening a trace validates header, metadata, footer and index exactly as the C++ TraceReader
(traces/trace_reader.cpp) does; chunks are read, CRC-checked and decompressed only when asked
for, one at a time, so memory is bounded by one chunk whatever the trace's length.
"""

import json
import math
import os
from dataclasses import dataclass

import zstandard

from .checksum import crc32
from .codec import (
    CHUNK_BLOCKS,
    CHUNK_ENTRY_BYTES,
    CHUNK_HOST,
    FOOTER_BYTES,
    FOOTER_MAGIC,
    FORMAT_VERSION,
    HEADER_FIXED_BYTES,
    HEADER_MAGIC,
    KNOWN_HEADER_FLAGS,
    LAUNCH_ENTRY_BYTES,
    MAX_CHUNK_RAW_BYTES,
    MIN_FORMAT_VERSION,
    ByteReader,
    HostEventType,
    decode_host_event,
    get_u32,
    get_u64,
    hex32,
)
from .errors import TraceError
from .metadata import Metadata
from .records import decode_block_chunk


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def _finite_float(text):
    # nlohmann (the C++ reader) rejects a number too large for a double, such as 1e999, where
    # Python's float() would give inf.
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text} is out of range")
    return value


#: Deepest nesting of arrays and objects the C++ reader accepts (core/json_input.h).
MAX_JSON_DEPTH = 128


def _too_deep_at(text):
    """Offset where `text` opens its 129th nested array or object (outside strings), or None."""
    depth = 0
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return i
        elif ch in "]}":
            depth -= 1
    return None


def _frame_has_checksum(frame):
    """Whether a zstd frame's header sets Content_Checksum_flag (RFC 8878 3.1.1.1.1)."""
    return len(frame) >= 5 and get_u32(frame, 0) == 0xFD2FB528 and (frame[4] >> 2) & 1 == 1


def _frame_capacity(frame):
    """The most bytes a zstd frame's blocks can decompress to, read from its frame and block
    headers (RFC 8878, 3.1.1.1-2), or None if they are malformed: the C++ reader checks the
    declared size against it before allocating (trace_reader.cpp, frame_capacity)."""
    n = len(frame)
    if n < 5 or get_u32(frame, 0) != 0xFD2FB528:
        return None
    fhd = frame[4]
    single_segment = (fhd >> 5) & 1
    fcs_flag = fhd >> 6
    header = (5 + (0 if single_segment else 1) + (0, 1, 2, 4)[fhd & 3]
              + (1 if fcs_flag == 0 and single_segment else (0, 2, 4, 8)[fcs_flag]))
    if n < header:
        return None
    pos = header
    total = 0
    while True:
        if n - pos < 3:
            return None
        bh = frame[pos] | frame[pos + 1] << 8 | frame[pos + 2] << 16
        pos += 3
        size = bh >> 3
        stored = size
        kind = (bh >> 1) & 3
        if kind == 0:  # raw
            total += size
        elif kind == 1:  # RLE: one byte, repeated
            total += size
            stored = 1
        elif kind == 2:  # compressed: at most 128 KiB
            total += 128 * 1024
        else:
            return None
        if n - pos < stored:
            return None
        pos += stored
        if bh & 1:
            return total


@dataclass(frozen=True)
class ChunkInfo:
    type: int  # CHUNK_HOST or CHUNK_BLOCKS
    launch_index: int  # Blocks only
    first: int  # first host event or threadblock
    count: int
    offset: int
    compressed_bytes: int
    raw_bytes: int
    crc: int


@dataclass(frozen=True)
class LaunchSummary:
    launch_index: int
    kernel_id: int
    threadblocks: int
    records: int
    accesses: int  # records expanded by their repeat counts


class Trace:
    """An open, validated .uvt trace.

    Attributes: `path`, `version`, `metadata` (Metadata), `chunks` (ChunkInfo list),
    `launches` (LaunchSummary list), `host_event_count`, `file_bytes`. Use as a context manager
    or call close(); iterating host events or records reads the file lazily.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        self.name = str(self.path)
        if os.path.isdir(self.path):
            self._fail("open", "is a directory")
        try:
            self._file = open(self.path, "rb")
        except OSError as e:
            self._fail("open", f"cannot open file: {e.strerror}")
        try:
            self._file.seek(0, os.SEEK_END)
            self.file_bytes = self._file.tell()
            header_end = self._read_header()
            self._read_index(header_end)
        except BaseException:
            self._file.close()
            raise
        self._dctx = zstandard.ZstdDecompressor()

    # ---- lifetime ---------------------------------------------------------------------------

    def close(self):
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return (f"Trace({self.name!r}: {self.metadata.workload}, {len(self.launches)} launches, "
                f"{self.host_event_count} host events)")

    # ---- metadata shortcuts -----------------------------------------------------------------

    @property
    def allocations(self):
        return self.metadata.allocations

    @property
    def kernels(self):
        return self.metadata.kernels

    # ---- opening ----------------------------------------------------------------------------

    def _fail(self, field, msg):
        raise TraceError(self.name, field, msg)

    def _read_at(self, offset, n, field):
        if offset > self.file_bytes or n > self.file_bytes - offset:
            self._fail(field, "truncated file")
        self._file.seek(offset)
        data = self._file.read(n)
        if len(data) != n:
            self._fail(field, f"cannot read {n} bytes at offset {offset} (truncated file?)")
        return data

    def _read_header(self):
        size = self.file_bytes
        if size >= len(HEADER_MAGIC) and self._read_at(0, 8, "header") != HEADER_MAGIC:
            self._fail("header", "bad magic: not a .uvt trace file")
        if size < HEADER_FIXED_BYTES:
            self._fail("header", f"truncated file ({size} bytes; the header alone takes "
                                 f"{HEADER_FIXED_BYTES})")
        fixed = self._read_at(0, HEADER_FIXED_BYTES, "header")
        self.version = get_u32(fixed, 8)
        if not MIN_FORMAT_VERSION <= self.version <= FORMAT_VERSION:
            self._fail("header", f"unsupported format version {self.version} (this build of "
                                 f"uvmsim supports versions {MIN_FORMAT_VERSION} to "
                                 f"{FORMAT_VERSION})")
        flags = get_u32(fixed, 12)
        if flags & ~KNOWN_HEADER_FLAGS:
            self._fail("header", f"unknown flags {hex32(flags)}")
        meta_len = get_u64(fixed, 16)
        min_rest = 4 + FOOTER_BYTES
        if meta_len > size - HEADER_FIXED_BYTES or size - HEADER_FIXED_BYTES - meta_len < min_rest:
            self._fail("header", f"truncated file (metadata length {meta_len} but only {size} "
                                 "bytes in the file)")
        head = self._read_at(0, HEADER_FIXED_BYTES + meta_len + 4, "header")
        stored = get_u32(head, len(head) - 4)
        computed = crc32(memoryview(head)[:-4])
        if stored != computed:
            self._fail("header",
                       f"CRC mismatch (stored {hex32(stored)}, computed {hex32(computed)})")
        try:
            text = head[HEADER_FIXED_BYTES:-4].decode("utf-8")
        except UnicodeDecodeError:
            self._fail("metadata", "invalid JSON")
        # The C++ reader stops at the 129th level of nesting, unless a syntax error comes first.
        deep = _too_deep_at(text)
        try:
            # NaN and Infinity are not JSON (Python's parser accepts them, nlohmann's does not).
            j = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
        except json.JSONDecodeError as e:
            if deep is not None and deep < e.pos:
                self._fail("metadata", f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
            self._fail("metadata", "invalid JSON")
        except (ValueError, RecursionError):
            if deep is not None:
                self._fail("metadata", f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
            self._fail("metadata", "invalid JSON")
        if deep is not None:
            self._fail("metadata", f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
        self.metadata = Metadata.from_json(j, self.name)
        self.metadata_json = j
        return len(head)

    def _read_index(self, header_end):
        size = self.file_bytes
        if size - header_end < FOOTER_BYTES:
            self._fail("footer", "truncated file")
        footer = self._read_at(size - FOOTER_BYTES, FOOTER_BYTES, "footer")
        if footer[20:28] != FOOTER_MAGIC:
            self._fail("footer", "missing end marker (the file is truncated or was not finished)")
        index_offset = get_u64(footer, 0)
        index_len = get_u64(footer, 8)
        index_crc = get_u32(footer, 16)
        index_end = size - FOOTER_BYTES
        if (index_offset < header_end or index_offset > index_end
                or index_len != index_end - index_offset):
            self._fail("footer", "index location out of range (the file is truncated or corrupt)")
        index = self._read_at(index_offset, index_len, "index")
        computed = crc32(index)
        if computed != index_crc:
            self._fail("index",
                       f"CRC mismatch (stored {hex32(index_crc)}, computed {hex32(computed)})")

        r = ByteReader(index, 0, len(index), self.name, "index")
        self.host_event_count = r.u64()
        nchunks = r.u64()
        if nchunks > r.remaining() // CHUNK_ENTRY_BYTES:
            r.fail("chunk count exceeds the index size")
        chunks = []
        for _ in range(nchunks):
            t = r.u8()
            if t > CHUNK_BLOCKS:
                r.fail(f"unknown chunk type {t}")
            chunks.append(ChunkInfo(t, r.u32(), r.u64(), r.u64(), r.u64(), r.u64(), r.u64(),
                                    r.u32()))
        nlaunches = r.u64()
        if nlaunches > r.remaining() // LAUNCH_ENTRY_BYTES:
            r.fail("launch count exceeds the index size")
        launches = [LaunchSummary(r.u32(), r.u32(), r.u64(), r.u64(), r.u64())
                    for _ in range(nlaunches)]
        if not r.at_end():
            r.fail(f"{r.remaining()} trailing bytes")
        self.chunks = chunks
        self.launches = launches
        self._validate_index(header_end, index_offset)

    def _validate_index(self, header_end, index_offset):
        meta = self.metadata
        for i, l in enumerate(self.launches):
            field = f"index: launch {i}"
            if l.launch_index != i:
                self._fail(field, f"out of order (numbered {l.launch_index})")
            k = meta.kernel(l.kernel_id)
            if k is None:
                self._fail(field, f"unknown kernel id {l.kernel_id}")
            if l.threadblocks != k.threadblocks:
                self._fail(field, f"{l.threadblocks} threadblocks but kernel '{k.name}' has a "
                                  f"grid of {k.threadblocks}")
            if l.accesses < l.records:
                self._fail(field, "fewer accesses than records")

        self._host_chunks = []
        self._launch_chunks = [[] for _ in self.launches]
        next_tb = [0] * len(self.launches)
        next_host = 0
        prev_end = header_end
        for i, c in enumerate(self.chunks):
            field = f"index: chunk {i}"
            if c.count == 0:
                self._fail(field, "empty chunk")
            if c.raw_bytes == 0 or c.raw_bytes > MAX_CHUNK_RAW_BYTES:
                self._fail(field, f"implausible uncompressed size {c.raw_bytes}")
            # Chunks lie back to back, in index order, between the header and the index.
            if (c.offset < prev_end or c.compressed_bytes == 0 or c.offset > index_offset
                    or c.compressed_bytes > index_offset - c.offset):
                self._fail(field, "byte range out of bounds or overlapping another chunk")
            prev_end = c.offset + c.compressed_bytes
            if c.type == CHUNK_HOST:
                if c.first != next_host:
                    self._fail(field, "host events out of order")
                if c.count > self.host_event_count - next_host:
                    self._fail(field, "more host events than the index total")
                next_host += c.count
                self._host_chunks.append(i)
            else:
                if c.launch_index >= len(self.launches):
                    self._fail(field, f"unknown launch {c.launch_index}")
                if c.first != next_tb[c.launch_index]:
                    self._fail(field, "threadblocks out of order")
                if c.count > self.launches[c.launch_index].threadblocks - c.first:
                    self._fail(field, "more threadblocks than the launch has")
                next_tb[c.launch_index] += c.count
                self._launch_chunks[c.launch_index].append(i)
        if next_host != self.host_event_count:
            self._fail("index", f"host chunks hold {next_host} events, expected "
                                f"{self.host_event_count}")
        for i, l in enumerate(self.launches):
            if next_tb[i] != l.threadblocks:
                self._fail(f"index: launch {i}",
                           f"chunks hold {next_tb[i]} of its {l.threadblocks} threadblocks")

    # ---- chunks -----------------------------------------------------------------------------

    def launch_chunks(self, launch_index):
        """Indices into `chunks` of a launch's Blocks chunks, in threadblock order."""
        return list(self._launch_chunks[launch_index])

    def load_chunk(self, i):
        """Reads and decompresses chunk i (zstd verifies its content checksum); returns its raw
        bytes. As in the C++ reader, the chunk's CRC-32 is computed only when zstd cannot vouch
        for the chunk (a frame without a content checksum, or any problem with the frame), and a
        CRC mismatch is then the error reported."""
        c = self.chunks[i]
        field = f"chunk {i}"
        compressed = self._read_at(c.offset, c.compressed_bytes, field)

        def check_crc():
            crc = crc32(compressed)
            if crc != c.crc:
                self._fail(field, f"CRC mismatch (stored {hex32(c.crc)}, computed {hex32(crc)})")

        def fail(msg):
            check_crc()
            self._fail(field, msg)

        if not _frame_has_checksum(compressed):
            check_crc()
        try:
            declared = zstandard.frame_content_size(compressed)
        except zstandard.ZstdError:
            fail("zstd: not a valid zstd frame")
        if declared != c.raw_bytes:
            what = "no" if declared == -1 else str(declared)
            fail(f"zstd frame declares {what} uncompressed bytes, the index {c.raw_bytes}")
        capacity = _frame_capacity(compressed)
        if capacity is None:
            fail("zstd: truncated or malformed frame")
        if capacity < c.raw_bytes:
            fail(f"zstd frame declares {c.raw_bytes} uncompressed bytes but its "
                 f"blocks hold at most {capacity}")
        # A decompression object stops after one frame and shows what follows it: a chunk is
        # exactly one frame (the C++ reader fails on a second one for lack of room).
        obj = self._dctx.decompressobj()
        try:
            raw = obj.decompress(compressed)
        except zstandard.ZstdError as e:
            # The library prefixes zstd's own error name ("... error: <name>"); keep the name.
            fail("zstd: " + str(e).rsplit(": ", 1)[-1])
        if not obj.eof or obj.unused_data:
            fail("zstd: Destination buffer is too small")
        if len(raw) != c.raw_bytes:
            fail(f"decompressed to {len(raw)} bytes, expected {c.raw_bytes}")
        return raw

    # ---- host events ------------------------------------------------------------------------

    def host_events(self):
        """Host events in program order (HostEvent objects), decoded one host chunk at a time."""
        next_launch = 0
        for ci in self._host_chunks:
            raw = self.load_chunk(ci)
            off = 0
            for _ in range(self.chunks[ci].count):
                r = ByteReader(raw, off, len(raw), self.name, "chunk", ci)
                ev = decode_host_event(r, self.version)
                if ev.type == HostEventType.KernelLaunch:
                    if ev.launch_index != next_launch or ev.launch_index >= len(self.launches):
                        r.fail(f"kernel launch numbered {ev.launch_index}, expected {next_launch}")
                    expect = self.launches[ev.launch_index].kernel_id
                    if ev.kernel_id != expect:
                        r.fail(f"launch {ev.launch_index} of kernel {ev.kernel_id} but the index "
                               f"says kernel {expect}")
                    next_launch += 1
                off = r.pos
                yield ev
            if off != len(raw):
                self._fail(f"chunk {ci}", f"{len(raw) - off} trailing bytes after the last event")
        if next_launch != len(self.launches):
            self._fail("host events", f"{next_launch} kernel launches, the index has "
                                      f"{len(self.launches)}")

    # ---- access records ---------------------------------------------------------------------

    def records(self, launch_index):
        """A launch's access records, one RECORD_DTYPE numpy array per chunk (whole
        threadblocks, in threadblock, warp, program order). Only one chunk is held at a time."""
        if not 0 <= launch_index < len(self.launches):
            raise IndexError(f"{self.name}: launch {launch_index} does not exist (the trace has "
                             f"{len(self.launches)})")
        launch = self.launches[launch_index]
        k = self.metadata.kernel(launch.kernel_id)
        # The index's per-launch totals must be what the chunks hold, checked as each chunk is
        # decoded (as the C++ LaunchStream does).
        field = f"index: launch {launch_index}"
        seen_records = seen_accesses = 0
        chunk_ids = self._launch_chunks[launch_index]
        for n, ci in enumerate(chunk_ids):
            c = self.chunks[ci]
            raw = self.load_chunk(ci)
            rec = decode_block_chunk(raw, c.first, c.count, k.warps_per_block, self.name, ci)
            records, accesses = len(rec), int(rec["repeat"].sum(dtype="uint64"))
            if records > launch.records - seen_records:
                self._fail(field, f"the index says {launch.records} records, its chunks hold more")
            if accesses > launch.accesses - seen_accesses:
                self._fail(field, f"the index says {launch.accesses} accesses, its chunks hold "
                                  "more")
            seen_records += records
            seen_accesses += accesses
            if n + 1 == len(chunk_ids):
                if seen_records != launch.records:
                    self._fail(field, f"the index says {launch.records} records, its chunks "
                                      f"hold {seen_records}")
                if seen_accesses != launch.accesses:
                    self._fail(field, f"the index says {launch.accesses} accesses, its chunks "
                                      f"hold {seen_accesses}")
            yield rec

    def all_records(self, launch_index):
        """A launch's records as one array (memory grows with the launch; see records())."""
        import numpy as np

        from .records import RECORD_DTYPE

        parts = list(self.records(launch_index))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=RECORD_DTYPE)

    # ---- summary ----------------------------------------------------------------------------

    def info(self):
        """The object `uvmsim trace info FILE --json` prints (docs/trace-format.md)."""
        m = self.metadata
        hints = None
        if m.hints is not None:
            kernels = m.hints.get("kernels", [])
            hints = {
                "source": m.hints.get("source"),
                "version": m.hints.get("version"),
                "kernels": len(kernels),
                "refs": sum(len(k.get("refs", [])) for k in kernels),
                "launches": len(m.hints.get("launches", [])),
            }
        counts = {"total": 0}
        for t in HostEventType:
            counts[t.name] = 0
        iteration = [-1] * len(self.launches)
        device = [0] * len(self.launches)
        current_device = 0  # cudaSetDevice's state: launches before the first run on GPU 0
        for ev in self.host_events():
            counts["total"] += 1
            counts[ev.type.name] += 1
            if ev.type == HostEventType.SetDevice:
                current_device = int(ev.device)
            if ev.type == HostEventType.KernelLaunch:
                iteration[ev.launch_index] = ev.iteration
                device[ev.launch_index] = current_device
        names = {k.id: k.name for k in m.kernels}
        launches = [
            {
                "launch": l.launch_index,
                "kernel_id": l.kernel_id,
                "kernel": names.get(l.kernel_id, "?"),
                "iteration": iteration[l.launch_index],
                "device": device[l.launch_index],
                "threadblocks": l.threadblocks,
                "records": l.records,
                "accesses": l.accesses,
            }
            for l in self.launches
        ]
        compressed = sum(c.compressed_bytes for c in self.chunks)
        raw = sum(c.raw_bytes for c in self.chunks)
        host_chunks = sum(1 for c in self.chunks if c.type == CHUNK_HOST)
        return {
            "file": self.name,
            "format_version": self.version,
            "workload": m.workload,
            "params": m.params,
            "captured_gpu": m.captured_gpu,
            "extra": m.extra,
            "hints": hints,
            "allocations": [
                {
                    "id": a.id,
                    "name": a.name,
                    "base": a.base,
                    "base_hex": "0x%x" % a.base,
                    "size": a.size,
                    "managed": a.managed,
                    "host_pinned": a.host_pinned,
                    "system": a.system,
                }
                for a in m.allocations
            ],
            "kernels": [
                {
                    "id": k.id,
                    "name": k.name,
                    "grid": list(k.grid),
                    "block": list(k.block),
                    "regs": k.regs,
                    "smem": k.smem,
                }
                for k in m.kernels
            ],
            "host_events": counts,
            "launches": launches,
            "totals": {
                "launches": len(self.launches),
                "threadblocks": sum(l.threadblocks for l in self.launches),
                "records": sum(l.records for l in self.launches),
                "accesses": sum(l.accesses for l in self.launches),
            },
            "chunks": {"host": host_chunks, "blocks": len(self.chunks) - host_chunks},
            "bytes": {
                "file": self.file_bytes,
                "compressed": compressed,
                "raw": raw,
                "ratio": 0.0 if compressed == 0 else raw / compressed,
            },
        }


def open_trace(path):
    """Opens and validates a .uvt trace (same as Trace(path))."""
    return Trace(path)
