"""Writing .uvt traces from Python: `TraceWriter(path, metadata)`.

Follows the C++ TraceWriter (traces/trace_writer.cpp) rule for rule — program order, whole
launches, chunks closed at `chunk_raw_bytes` and at the end of every launch, repeats folded — so
the same input gives the same bytes. Misuse (wrong call order, out-of-range values) raises
ValueError, as std::logic_error does in C++: the file is then left without its footer and any
reader reports it as truncated.
"""

import os

import numpy as np
import zstandard

from . import records
from .checksum import crc32
from .codec import (
    CHUNK_BLOCKS,
    CHUNK_HOST,
    DEVICE_VERSION,
    FOOTER_MAGIC,
    HEADER_MAGIC,
    MEM_FREE_VERSION,
    MIN_FORMAT_VERSION,
    U32_MAX,
    U64_MAX,
    AccessKind,
    Advice,
    HostEvent,
    HostEventType,
    Processor,
    device_value,
    encode_host_event,
    put_u32,
    put_u64,
)
from .errors import TraceError
from .metadata import Metadata
from .records import RECORD_DTYPE, encode_threadblocks, fold_repeats

# ZSTD_minCLevel() (-ZSTD_TARGETLENGTH_MAX); python-zstandard exports only the maximum.
_ZSTD_MIN_LEVEL = -(1 << 17)

# Columns of a record batch: (name, required, default, upper bound).
_COLUMNS = [
    ("tb", True, None, U64_MAX),
    ("warp", True, None, U32_MAX),
    ("va", True, None, U64_MAX),
    ("kind", False, int(AccessKind.Read), 3),
    ("bytes", False, 4, U32_MAX),
    ("ref_id", False, 0, U32_MAX),
    ("gap", False, 0, U32_MAX),
    ("repeat", False, 1, U32_MAX),
]


def _misuse(msg):
    raise ValueError("TraceWriter: " + msg)


def _column(name, values, upper):
    """One record column as an integer array, every value checked to lie in 0..upper."""
    # A plain sequence goes through Python ints: numpy would turn [1, 2**64 - 1] into floats.
    a = np.asarray(values) if hasattr(values, "dtype") else np.array(list(values), dtype=object)
    if a.ndim != 1:
        _misuse(f"column '{name}' is not one-dimensional")
    if a.dtype.kind not in "iuO" or (a.dtype.kind == "O" and not all(
            isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in a.tolist())):
        _misuse(f"column '{name}' holds non-integer values")
    if len(a):
        lo, hi = int(a.min()), int(a.max())
        if lo < 0 or hi > upper:
            _misuse(f"column '{name}': value {lo if lo < 0 else hi} out of range 0..{upper}")
    return a.astype(np.uint64) if a.dtype.kind == "O" else a


class TraceWriter:
    """Writes a .uvt trace.

    In program order: host_event() for everything but kernel launches; begin_launch() for a
    launch, then its threadblocks 0 .. grid-1 — record batches with write_blocks() (numpy),
    and/or one at a time with begin_block() / access() / end_block() — then end_launch() (which
    writes any remaining threadblocks as empty). finish() (or leaving a `with` block without an
    exception) writes the index and footer.
    """

    def __init__(self, path, metadata, chunk_raw_bytes=1 << 20, zstd_level=3, fold_repeats=True):
        self.path = os.fspath(path)
        if not isinstance(metadata, Metadata):
            _misuse("metadata must be a uvmsim.Metadata")
        if not _ZSTD_MIN_LEVEL <= zstd_level <= zstandard.MAX_COMPRESSION_LEVEL:
            _misuse(f"zstd level {zstd_level} out of range")
        # Validate the metadata as the reader will, so that this writer cannot produce a file
        # a reader rejects.
        try:
            Metadata.from_json(metadata.to_json(), self.path)
        except TraceError as e:
            _misuse(f"invalid metadata: {e}")
        self._kernels = {k.id: k for k in metadata.kernels}
        self._chunk_raw_bytes = max(1, int(chunk_raw_bytes))
        self._fold = fold_repeats
        self._cctx = zstandard.ZstdCompressor(level=zstd_level, write_checksum=True,
                                              write_content_size=True)
        self._chunks = []
        self._launches = []  # [launch, kernel, threadblocks, records, accesses]
        self._finished = False
        self._host_buf = bytearray()
        self._host_total = 0
        self._host_first = 0
        self._in_launch = False
        self._block_buf = bytearray()
        self._block_first = 0
        self._next_tb = 0
        self._tb_total = 0
        self._warps = 0
        self._block = None  # per-warp record lists of the threadblock begun with begin_block

        try:
            text = metadata.to_bytes()
        except (TypeError, ValueError) as e:
            _misuse(f"metadata is not JSON-serialisable: {e}")
        # The lowest version that can hold the trace: version 1 until a MemFree event needs 2;
        # finish() then rewrites the version and the header CRC (as the C++ writer does).
        self._version = MIN_FORMAT_VERSION
        header = bytearray(HEADER_MAGIC)
        put_u32(header, self._version)
        put_u32(header, 0)  # flags
        put_u64(header, len(text))
        header += text
        put_u32(header, crc32(header))
        self._header = header
        try:
            self._file = open(self.path, "wb")
        except OSError as e:
            raise TraceError(self.path, "open", f"cannot create file: {e.strerror}") from None
        self._offset = 0
        self._write(header)

    # ---- context manager --------------------------------------------------------------------

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.finish()
        else:
            self._file.close()  # no footer: the partial file reads as truncated

    # ---- output -----------------------------------------------------------------------------

    def _write(self, data):
        try:
            self._file.write(data)
        except OSError as e:
            raise TraceError(self.path, "write", f"cannot write: {e.strerror}") from None
        self._offset += len(data)

    def _write_chunk(self, type_, launch, first, count, raw):
        compressed = self._cctx.compress(bytes(raw))
        self._chunks.append((type_, launch, first, count, self._offset, len(compressed), len(raw),
                             crc32(compressed)))
        self._write(compressed)

    def _flush_host(self):
        if self._host_buf:
            self._write_chunk(CHUNK_HOST, 0, self._host_first, self._host_total - self._host_first,
                              self._host_buf)
            self._host_first = self._host_total
            self._host_buf = bytearray()

    def _flush_blocks(self):
        if self._block_buf:
            self._write_chunk(CHUNK_BLOCKS, len(self._launches) - 1, self._block_first,
                              self._next_tb - self._block_first, self._block_buf)
            self._block_first = self._next_tb
            self._block_buf = bytearray()

    def _add_host(self, ev):
        if ev.type == HostEventType.MemFree:
            self._version = max(self._version, MEM_FREE_VERSION)
        if ev.type == HostEventType.SetDevice or (
                ev.type in (HostEventType.MemPrefetch, HostEventType.MemAdvise)
                and ev.device not in (Processor.Cpu, Processor.Gpu)):
            self._version = max(self._version, DEVICE_VERSION)
        encode_host_event(ev, self._host_buf)
        self._host_total += 1
        if len(self._host_buf) >= self._chunk_raw_bytes:
            self._flush_host()

    def _require(self, what, in_launch=False):
        if self._finished:
            _misuse(f"{what} after finish")
        if self._block is not None:
            _misuse(f"{what} inside a threadblock (missing end_block)")
        if in_launch and not self._in_launch:
            _misuse(f"{what} outside a launch")
        if not in_launch and self._in_launch:
            _misuse(f"{what} while launch {len(self._launches) - 1} has only {self._next_tb} of "
                    f"its {self._tb_total} threadblocks written (end_launch() writes the rest "
                    "empty)")

    # ---- host events and launches -------------------------------------------------------------

    def host_event(self, ev):
        """Appends a host event (any type but KernelLaunch: use begin_launch)."""
        self._require("host_event")
        if not isinstance(ev, HostEvent):
            _misuse("host_event takes a uvmsim.HostEvent")
        if ev.type == HostEventType.KernelLaunch:
            _misuse("use begin_launch for kernel launches")
        try:
            ev = HostEvent(type=HostEventType(ev.type), va=ev.va, size=ev.size,
                           device=device_value(ev.device), advice=Advice(ev.advice),
                           kind=AccessKind(ev.kind))
        except ValueError:
            _misuse("host event with an out-of-range enum value")
        if ev.type == HostEventType.SetDevice and ev.device == Processor.Cpu:
            _misuse("SetDevice to the CPU (kernels run on a GPU)")
        for name in ("va", "size"):
            v = getattr(ev, name)
            if not isinstance(v, (int, np.integer)) or not 0 <= v <= U64_MAX:
                _misuse(f"host event {name} {v!r} is not a 64-bit unsigned integer")
        self._add_host(ev)

    def begin_launch(self, kernel_id, iteration=-1):
        """Appends a KernelLaunch host event; returns its launch index."""
        self._require("begin_launch")
        k = self._kernels.get(kernel_id)
        if k is None:
            _misuse(f"begin_launch of unknown kernel id {kernel_id}")
        if not -(1 << 31) <= iteration < (1 << 31):
            _misuse(f"iteration {iteration} does not fit in 32 bits")
        index = len(self._launches)
        self._add_host(HostEvent(type=HostEventType.KernelLaunch, kernel_id=kernel_id,
                                 launch_index=index, iteration=iteration))
        self._launches.append([index, kernel_id, 0, 0, 0])
        self._in_launch = True
        self._warps = k.warps_per_block
        self._tb_total = k.threadblocks
        self._next_tb = 0
        self._block_first = 0
        return index

    def end_launch(self):
        """Writes the current launch's remaining threadblocks (empty) and closes the launch."""
        if not self._in_launch and self._launches and self._block is None:
            return  # its last threadblock closed it already
        self._require("end_launch", in_launch=True)
        if self._next_tb < self._tb_total:
            self._write_batch(np.zeros(0, dtype=RECORD_DTYPE), self._tb_total)

    # ---- threadblocks -----------------------------------------------------------------------

    def write_blocks(self, records, upto=None):
        """Writes the threadblocks from the next unwritten one up to `upto` (exclusive; default:
        the last threadblock in `records`, inclusive); those without records are empty.

        `records`: a RECORD_DTYPE array (e.g. what Trace.records yields), or any mapping of
        column name -> array (a dict, a pandas DataFrame) with the columns tb, warp, va and
        optionally kind (default Read), bytes (4), ref_id (0), gap (0), repeat (1). A warp's
        records are in program order; warps and threadblocks may come in any order.
        """
        self._require("write_blocks", in_launch=True)
        rec = self._to_records(records)
        if upto is None:
            upto = int(rec["tb"].max()) + 1 if len(rec) else self._next_tb
        if not self._next_tb <= upto <= self._tb_total:
            _misuse(f"write_blocks up to threadblock {upto}: the next is {self._next_tb} and the "
                    f"launch has {self._tb_total}")
        if len(rec):
            lo, hi = int(rec["tb"].min()), int(rec["tb"].max())
            if lo < self._next_tb or hi >= upto:
                _misuse(f"records of threadblocks {lo}..{hi} outside {self._next_tb}..{upto - 1} "
                        "(threadblocks are written once, in order)")
            w = int(rec["warp"].max())
            if w >= self._warps:
                _misuse(f"access by warp {w} of a {self._warps}-warp threadblock")
        self._write_batch(rec, upto)

    def begin_block(self, num_warps=None):
        """Begins the next threadblock (num_warps, if given, must be the kernel's)."""
        self._require("begin_block", in_launch=True)
        if num_warps is not None and num_warps != self._warps:
            _misuse(f"begin_block with {num_warps} warps; the kernel's block has {self._warps}")
        if self._next_tb == self._tb_total:
            _misuse("begin_block after the launch's last threadblock")
        self._block = []

    def access(self, warp, va, kind=AccessKind.Read, bytes=4, ref_id=0, gap=0, repeat=1):
        """Appends one record of `warp` to the threadblock begun with begin_block."""
        if self._block is None:
            _misuse("access outside a threadblock")
        if not 0 <= warp < self._warps:
            _misuse(f"access by warp {warp} of a {self._warps}-warp threadblock")
        self._block.append((self._next_tb, warp, kind, va, bytes, ref_id, gap, repeat))

    def end_block(self):
        if self._block is None:
            _misuse("end_block without begin_block")
        rows = self._block
        self._block = None
        cols = list(zip(*rows)) if rows else [()] * 8
        names = ["tb", "warp", "kind", "va", "bytes", "ref_id", "gap", "repeat"]
        rec = self._to_records({n: np.array(c, dtype=object) for n, c in zip(names, cols)})
        self._write_batch(rec, self._next_tb + 1)

    # ---- internals --------------------------------------------------------------------------

    def _to_records(self, records):
        """Checks and converts a record batch to RECORD_DTYPE, stably sorted by (tb, warp)."""
        names = getattr(getattr(records, "dtype", None), "names", None)
        present = set(names) if names else set(records.keys())
        n = None
        out = None
        for name, required, default, upper in _COLUMNS:
            if name not in present:
                if required:
                    _misuse(f"records without a '{name}' column")
                continue
            a = _column(name, records[name], upper)
            if out is None:
                n = len(a)
                out = np.zeros(n, dtype=RECORD_DTYPE)
                for c, _, d, _ in _COLUMNS:
                    if d is not None:
                        out[c] = d
            elif len(a) != n:
                _misuse(f"column '{name}' has {len(a)} rows, the others {n}")
            out[name] = a
        if len(out):
            if (out["repeat"] == 0).any():
                _misuse("access with repeat 0")
            if (out["bytes"] == 0).any():
                _misuse("access of 0 bytes")
            # Stable lexicographic sort by (tb, warp): each warp keeps its program order.
            order = np.argsort(out["warp"], kind="stable")
            order = order[np.argsort(out["tb"][order], kind="stable")]
            out = out[order]
        return out

    def _write_batch(self, rec, upto):
        """Encodes threadblocks next_tb .. upto-1 from `rec` (checked, sorted) into chunks."""
        first = self._next_tb
        count = upto - first
        launch = self._launches[-1]
        launch[4] += int(rec["repeat"].sum(dtype=np.uint64))
        if self._fold:
            rec = fold_repeats(rec)
        launch[3] += len(rec)

        # Encode groups of whole threadblocks of about records._GROUP_RECORDS records each, so
        # numpy's temporaries stay in the CPU caches.
        group = records._GROUP_RECORDS
        tb_end = np.searchsorted(rec["tb"], np.arange(first + 1, upto + 1, dtype=np.uint64))
        lo = 0
        while lo < count:
            hi = int(np.searchsorted(tb_end, (tb_end[lo - 1] if lo else 0) + group, side="right"))
            hi = min(max(hi, lo + 1), count)
            part = rec[(tb_end[lo - 1] if lo else 0):tb_end[hi - 1]]
            self._add_blocks(*encode_threadblocks(part, first + lo, hi - lo, self._warps))
            lo = hi
        launch[2] += count
        if self._next_tb == self._tb_total:
            # The launch is complete: its last chunk is written now so chunks never mix launches.
            self._flush_blocks()
            self._in_launch = False

    def _add_blocks(self, data, sizes):
        """Appends encoded threadblocks (their bytes and sizes); a chunk closes after the
        threadblock that brings it to chunk_raw_bytes."""
        held = len(self._block_buf)
        start = end = 0
        for size in sizes:
            end += size
            held += size
            self._next_tb += 1
            if held >= self._chunk_raw_bytes:
                self._block_buf += data[start:end]
                self._flush_blocks()
                start = end
                held = 0
        self._block_buf += data[start:end]

    # ---- finishing --------------------------------------------------------------------------

    def finish(self):
        """Writes the index and footer and closes the file. Idempotent."""
        if self._finished:
            return
        self._require("finish")
        self._flush_host()
        index = bytearray()
        put_u64(index, self._host_total)
        put_u64(index, len(self._chunks))
        for t, launch, first, count, offset, comp, raw, crc in self._chunks:
            index.append(t)
            put_u32(index, launch)
            for v in (first, count, offset, comp, raw):
                put_u64(index, v)
            put_u32(index, crc)
        put_u64(index, len(self._launches))
        for li, kernel, tbs, records, accesses in self._launches:
            put_u32(index, li)
            put_u32(index, kernel)
            put_u64(index, tbs)
            put_u64(index, records)
            put_u64(index, accesses)
        index_offset = self._offset
        self._write(index)
        footer = bytearray()
        put_u64(footer, index_offset)
        put_u64(footer, len(index))
        put_u32(footer, crc32(index))
        footer += FOOTER_MAGIC
        self._write(footer)
        if self._version != MIN_FORMAT_VERSION:
            header = self._header[:-4]
            header[8:12] = self._version.to_bytes(4, "little")
            put_u32(header, crc32(header))
            try:
                self._file.seek(0)
                self._file.write(header)
            except OSError as e:
                raise TraceError(self.path, "write", f"cannot write: {e.strerror}") from None
        try:
            self._file.close()
        except OSError as e:
            raise TraceError(self.path, "write", f"cannot close file: {e.strerror}") from None
        self._finished = True
