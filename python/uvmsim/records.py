"""Access records as numpy arrays: decoding a Blocks chunk and encoding threadblocks.

Record layout (docs/trace-format.md, "Access record"): a flags byte, then varints — zigzag VA
delta always, ref id, bytes, gap and repeat-1 when their flag bits say so. Decoding one record at
a time in Python would cost microseconds per record, so both directions work on whole chunks
with numpy:

* Decoding tabulates, for every byte, where a record starting there would end (after the k-th
  varint terminator following its flags byte, k = 1 + the number of optional-field bits); a
  tight Python loop then follows that table from each warp's first record (one list append per
  record), and numpy decodes every varint at once and carries the omitted fields forward with
  running maxima.
* Encoding computes every record's flags and varints at once and scatters their bytes.
* Both work on groups of about _GROUP_RECORDS records: numpy's temporaries then stay in the CPU
  caches, which more than doubles the speed on large chunks.

When the vectorised checks find a problem, the offending warp is decoded again by `decode_warp`,
a direct transcription of the C++ `WarpStream::next`, which raises the C++ reader's error for
the first bad record. It is also the reference the tests compare the fast path with.
"""

import numpy as np

from .codec import (
    HAS_BYTES,
    HAS_GAP,
    HAS_REF,
    HAS_REPEAT,
    KIND_MASK,
    PAGE_SHIFT,
    U32_MAX,
    U64_MAX,
    VA_PAGES,
    ByteReader,
    get_varint,
    unzigzag,
)
from .errors import TraceError

#: One access record; rows are in threadblock, warp, program order (as `uvmsim trace dump`).
RECORD_DTYPE = np.dtype(
    [
        ("tb", "<u8"),
        ("warp", "<u4"),
        ("kind", "u1"),
        ("va", "<u8"),
        ("bytes", "<u4"),
        ("ref_id", "<u4"),
        ("gap", "<u4"),
        ("repeat", "<u4"),
    ]
)

# Number of varints after a flags byte: the VA delta plus one per optional-field bit (4..7).
_VARINTS_AFTER_FLAGS = np.array([1 + bin(f >> 4).count("1") for f in range(256)], dtype=np.int64)
_U64 = np.uint64
# Records decoded per numpy pass (see decode_block_chunk).
_GROUP_RECORDS = 1 << 14


def decode_warp(data, begin, end, records, va_base, where):
    """Decodes one warp's records from data[begin:end] exactly as the C++ WarpStream::next does,
    raising its error for the first malformed record. Returns a list of
    (kind, va, bytes, ref_id, gap, repeat) tuples."""
    out = []
    prev_va, prev_ref, prev_bytes = va_base, 0, 4
    p = begin

    def fail(i, what, value=None):
        msg = f"record {i} of {records}: {what}"
        if value is not None:
            msg += f" {value}"
        raise TraceError(where, "access record", msg)

    for i in range(records):
        if p == end:
            fail(i, "runs past the end of the warp's data")
        flags = data[p]
        p += 1
        kind = flags & KIND_MASK
        if kind > 3:
            fail(i, "unknown access kind", kind)

        def read(what, limit=U64_MAX):
            nonlocal p
            r = get_varint(data, p, end)
            if r is None or r[0] > limit:
                fail(i, what)
            v, p = r
            return v

        delta = unzigzag(read("malformed VA delta (varint runs past the end of the warp's data "
                              "or overflows)")) & U64_MAX
        if flags & VA_PAGES:
            delta = (delta << PAGE_SHIFT) & U64_MAX
        va = (prev_va + delta) & U64_MAX
        ref = read("malformed ref id", U32_MAX) if flags & HAS_REF else prev_ref
        nbytes = read("malformed byte count", U32_MAX) if flags & HAS_BYTES else prev_bytes
        if nbytes == 0:
            fail(i, "access of 0 bytes")
        gap = read("malformed gap", U32_MAX) if flags & HAS_GAP else 0
        repeat = 1
        if flags & HAS_REPEAT:
            extra = read("malformed repeat count", U32_MAX)
            if extra == U32_MAX:
                fail(i, "repeat count overflows")
            repeat = extra + 1
        out.append((kind, va, nbytes, ref, gap, repeat))
        prev_va, prev_ref, prev_bytes = va, ref, nbytes
        if i == records - 1 and p != end:
            fail(records, "trailing bytes after the warp's last record")
    return out


class Warps:
    """The warps of a decoded Blocks chunk, one entry per warp in chunk order (numpy arrays)."""

    def __init__(self, tb, index, records, begin, length, va_base):
        self.tb = tb  # threadblock id
        self.index = index  # warp index within its threadblock
        self.records = records
        self.begin = begin  # offset of the warp's record bytes in the chunk
        self.length = length  # bytes of records
        self.va_base = va_base  # the threadblock's VA base
        self.starts = []  # record starts, when parse_block_chunk walked the records
        self.bad_warp = None  # the first warp whose records do not tile its bytes


def parse_block_chunk(raw, first, count, warps_per_block, where, chunk_index, next_start=None):
    """Splits a decoded Blocks chunk into warps, checking its structure as the C++
    parse_block_chunk does (threadblock ids, warp counts, per-warp lengths, no trailing bytes).
    Returns Warps.

    With `next_start` (a table from _next_record_table), also walks each warp's records in the
    same pass: Warps.starts lists where each record begins, for every warp before the first whose
    records do not tile its bytes exactly (Warps.bad_warp; None if there is none)."""
    r = ByteReader(raw, 0, len(raw), where, "chunk", chunk_index)
    data = raw
    end = len(raw)
    bases = []
    records = []
    begins = []
    lengths = []
    starts = []
    append = starts.append
    nxt = next_start
    bad_warp = None
    p = 0
    for i in range(count):
        r.pos = p
        expect = first + i
        tb = r.varint()
        if tb != expect:
            r.fail(f"threadblock id {tb} where {expect} was expected")
        warps = r.varint32("warp count")
        if warps != warps_per_block:
            r.fail(f"threadblock {tb} has {warps} warps, the kernel's block has {warps_per_block}")
        bases.append(r.varint())
        p = r.pos
        for wi in range(warps):
            # Fast path: a one-byte record count and a one- or two-byte length.
            if p + 3 <= end and data[p] < 0x80:
                n = data[p]
                b = data[p + 1]
                if b < 0x80:
                    length = b
                    p += 2
                elif data[p + 2] < 0x80:
                    length = (b & 0x7F) | (data[p + 2] << 7)
                    p += 3
                else:
                    r.pos = p + 1
                    length = r.varint()
                    p = r.pos
            else:
                r.pos = p
                n = r.varint32("record count")
                length = r.varint()
                p = r.pos
            if length // 2 < n:
                r.pos = p
                r.fail(f"threadblock {tb} warp {wi} claims {n} records in {length} bytes")
            if length > end - p:
                r.pos = p
                r.skip(length)  # raises
            # Walk the records (a warp without records is never decoded, as in C++). The table
            # only moves forward, so ending exactly at the warp's end means every record lay
            # inside it.
            if n and nxt is not None and bad_warp is None:
                q = p
                for _ in range(n):
                    append(q)
                    q = nxt[q]
                if q != p + length:
                    bad_warp = len(records)
                    del starts[-n:]
            records.append(n)
            begins.append(p)
            lengths.append(length)
            p += length
    if p != end:
        r.pos = p
        r.fail(f"{r.remaining()} trailing bytes after the last threadblock")
    W = warps_per_block
    w = Warps(
        tb=np.repeat(np.arange(first, first + count, dtype=np.uint64), W),
        index=np.tile(np.arange(W, dtype=np.uint32), count),
        records=np.array(records, dtype=np.int64),
        begin=np.array(begins, dtype=np.int64),
        length=np.array(lengths, dtype=np.int64),
        va_base=np.repeat(np.array(bases, dtype=np.uint64), W),
    )
    w.starts = starts
    w.bad_warp = bad_warp
    return w


def _next_record_table(data):
    """next_start[p]: where a record whose flags byte is at p ends — after the k-th varint
    terminator following p, k = 1 + its optional-field bits — or n + 1 past the data; entries n
    and n + 1 hold n + 1, so a walk that overruns stays in the table."""
    n = len(data)
    term = data < 0x80
    term_pos = np.flatnonzero(term)
    last = np.cumsum(term) + _VARINTS_AFTER_FLAGS[data] - 1  # index of its last terminator
    next_start = np.full(n + 2, n + 1, dtype=np.int64)
    ok = last < len(term_pos)
    next_start[:n][ok] = term_pos[last[ok]] + 1
    return next_start


def decode_block_chunk(raw, first, count, warps_per_block, where, chunk_index):
    """All records of a decoded Blocks chunk as one RECORD_DTYPE array, in threadblock, warp,
    program order. Raises TraceError with the C++ reader's message on any malformation."""
    data = np.frombuffer(raw, dtype=np.uint8)
    # A memoryview indexes a little slower than a list but costs nothing to make.
    w = parse_block_chunk(raw, first, count, warps_per_block, where, chunk_index,
                          next_start=memoryview(_next_record_table(data)))
    if not w.records.any():
        return np.zeros(0, dtype=RECORD_DTYPE)
    bad_warp = w.bad_warp
    starts = w.starts
    good_warps = len(w.records) if bad_warp is None else bad_warp

    # Decode in groups of warps of about _GROUP_RECORDS records: numpy's temporaries then stay in
    # the CPU caches whatever the chunk's size.
    starts = np.array(starts, dtype=np.int64)
    ends = np.cumsum(w.records[:good_warps])
    result = np.empty(len(starts), dtype=RECORD_DTYPE)
    first_bad = None
    lo = rec_lo = 0
    while lo < good_warps:
        hi = int(np.searchsorted(ends, rec_lo + _GROUP_RECORDS, side="right"))
        hi = min(max(hi, lo + 1), good_warps)
        rec_hi = int(ends[hi - 1])
        part, bad = _decode_values(data, starts[rec_lo:rec_hi], w, lo, hi)
        if bad is not None:
            first_bad = rec_lo + bad
            break
        result[rec_lo:rec_hi] = part
        lo, rec_lo = hi, rec_hi
    if first_bad is None and bad_warp is None:
        return result
    # Re-decode the first offending warp with the reference decoder: it raises the exact error.
    if first_bad is not None:
        bad_warp = int(np.searchsorted(np.cumsum(w.records[:good_warps]), first_bad,
                                       side="right"))
    b = int(w.begin[bad_warp])
    decode_warp(raw, b, b + int(w.length[bad_warp]), int(w.records[bad_warp]),
                int(w.va_base[bad_warp]), where)
    raise AssertionError("uvmsim: the fast record decoder and the reference decoder disagree")


def _decode_values(data, starts, w, lo, hi):
    """Decodes the records of warps lo .. hi-1, which start at `starts` in the chunk `data` and
    tile each warp's bytes exactly. Returns the RECORD_DTYPE array and the index of the first
    malformed record among them (None if all are valid)."""
    N = len(starts)
    out = np.zeros(N, dtype=RECORD_DTYPE)
    if N == 0:
        return out, None
    nrec = w.records[lo:hi]
    # The warps' span of the chunk, and in it the varint bytes: inside the bodies of warps with
    # records, and not a flags byte.
    b0 = int(w.begin[lo])
    span = data[b0:int(w.begin[hi - 1] + w.length[hi - 1])]
    starts = starts - b0
    flags = span[starts]
    has = nrec > 0
    edge = np.zeros(len(span) + 1, dtype=np.int8)
    edge[w.begin[lo:hi][has] - b0] = 1
    edge[(w.begin + w.length)[lo:hi][has] - b0] = -1
    inside = np.cumsum(edge[:-1], dtype=np.int8).astype(bool)
    inside[starts] = False
    vb = span[inside]
    ends = np.flatnonzero(vb < 0x80)
    vstart = np.empty(len(ends), dtype=np.int64)
    vstart[0] = 0
    vstart[1:] = ends[:-1] + 1
    vlen = ends + 1 - vstart
    # Byte j of every varint longer than j; most varints are one or two bytes, so the later
    # passes touch few of them.
    vals = (vb[vstart] & 0x7F).astype(_U64)
    longer = np.flatnonzero(vlen > 1)
    j = 1
    while len(longer) and j < 10:
        vals[longer] |= (vb[vstart[longer] + j] & 0x7F).astype(_U64) << _U64(7 * j)
        j += 1
        longer = longer[vlen[longer] > j]
    # Longer than 10 bytes, or a 10th byte that overflows 64 bits.
    vbad = (vlen > 10) | ((vlen == 10) & (vb[np.minimum(vstart + 9, len(vb) - 1)] > 1))

    k = _VARINTS_AFTER_FLAGS[flags]
    first_varint = np.cumsum(k) - k
    has_ref = (flags & HAS_REF) != 0
    has_bytes = (flags & HAS_BYTES) != 0
    has_gap = (flags & HAS_GAP) != 0
    has_rep = (flags & HAS_REPEAT) != 0
    i_ref = first_varint + 1
    i_bytes = i_ref + has_ref
    i_gap = i_bytes + has_bytes
    i_rep = i_gap + has_gap
    M = len(vals) - 1

    def field(present, index):
        i = np.minimum(index, M)
        return np.where(present, vals[i], _U64(0)), present & (vbad[i] | (vals[i] > U32_MAX))

    va_raw = vals[first_varint]
    ref_v, ref_bad = field(has_ref, i_ref)
    bytes_v, bytes_bad = field(has_bytes, i_bytes)
    gap_v, gap_bad = field(has_gap, i_gap)
    rep_v, rep_bad = field(has_rep, i_rep)

    # Omitted ref ids and byte counts repeat the warp's previous record's (initially 0 and 4).
    warp_first = np.zeros(N, dtype=bool)
    firsts = (np.cumsum(nrec) - nrec)[nrec > 0]
    warp_first[firsts] = True
    idx = np.arange(N)
    src = np.maximum.accumulate(np.where(has_ref | warp_first, idx, 0))
    ref = np.where(has_ref[src], ref_v[src], _U64(0))
    src = np.maximum.accumulate(np.where(has_bytes | warp_first, idx, 0))
    nbytes = np.where(has_bytes[src], bytes_v[src], _U64(4))

    bad = (
        ((flags & KIND_MASK) > 3)
        | vbad[first_varint]
        | ref_bad
        | bytes_bad
        | (nbytes == 0)
        | gap_bad
        | rep_bad
        | (has_rep & (rep_v == U32_MAX))
    )
    if bad.any():
        return out, int(np.argmax(bad))

    # VA: the warp's base plus the running sum of its deltas, modulo 2^64.
    delta = (va_raw >> _U64(1)) ^ (_U64(0) - (va_raw & _U64(1)))
    delta = np.where((flags & VA_PAGES) != 0, delta << _U64(PAGE_SHIFT), delta)
    csum = np.cumsum(delta, dtype=_U64)
    before = np.zeros(hi - lo, dtype=_U64)
    ends_w = np.cumsum(nrec)
    nonfirst = ends_w - nrec > 0
    before[nonfirst] = csum[(ends_w - nrec)[nonfirst] - 1]
    out["va"] = csum + np.repeat(w.va_base[lo:hi] - before, nrec)
    out["tb"] = np.repeat(w.tb[lo:hi], nrec)
    out["warp"] = np.repeat(w.index[lo:hi], nrec)
    out["kind"] = flags & KIND_MASK
    out["bytes"] = nbytes
    out["ref_id"] = ref
    out["gap"] = gap_v
    out["repeat"] = np.where(has_rep, rep_v + _U64(1), _U64(1))
    return out, None


# ---- encoding -----------------------------------------------------------------------------------

_VARINT_LIMITS = [_U64(1) << _U64(7 * i) for i in range(1, 10)]


def _varint_lengths(v):
    n = np.ones(v.shape, dtype=np.int64)
    for lim in _VARINT_LIMITS:
        n += v >= lim
    return n


def fold_repeats(rec):
    """Merges each record into its warp's previous one when both are in the same 4 KiB page with
    the same kind, bytes, ref id and gap, adding the repeat counts (the C++ writer's folding).
    `rec` is sorted by (tb, warp); returns a new array."""
    if len(rec) < 2:
        return rec.copy()
    a, b = rec[:-1], rec[1:]
    merge = np.zeros(len(rec), dtype=bool)
    merge[1:] = (
        (a["tb"] == b["tb"])
        & (a["warp"] == b["warp"])
        & ((a["va"] >> _U64(PAGE_SHIFT)) == (b["va"] >> _U64(PAGE_SHIFT)))
        & (a["kind"] == b["kind"])
        & (a["bytes"] == b["bytes"])
        & (a["ref_id"] == b["ref_id"])
        & (a["gap"] == b["gap"])
    )
    if not merge.any():
        return rec.copy()
    keep = np.flatnonzero(~merge)
    sums = np.add.reduceat(rec["repeat"].astype(_U64), keep)
    if (sums <= U32_MAX).all():
        out = rec[keep]
        out["repeat"] = sums
        return out
    # A run's repeats overflow 32 bits: fold greedily record by record, as the C++ writer does.
    rows = []
    for i, r in enumerate(rec):
        if merge[i] and rows[-1]["repeat"] <= U32_MAX - r["repeat"]:
            rows[-1]["repeat"] += r["repeat"]
        else:
            rows.append(r.copy())
    return np.array(rows, dtype=RECORD_DTYPE)


def encode_records(rec, warp_first, base):
    """Encodes records sorted by (tb, warp) in program order. `warp_first` marks each warp's first
    record and `base` (per record) its threadblock's VA base. Returns (bytes as uint8 array,
    encoded length of each record)."""
    N = len(rec)
    va = rec["va"]
    ref = rec["ref_id"].astype(_U64)
    nbytes = rec["bytes"].astype(_U64)
    prev_va = np.empty(N, dtype=_U64)
    prev_va[1:] = va[:-1]
    prev_va[warp_first] = base[warp_first]
    prev_ref = np.empty(N, dtype=_U64)
    prev_ref[1:] = ref[:-1]
    prev_ref[warp_first] = 0
    prev_bytes = np.empty(N, dtype=_U64)
    prev_bytes[1:] = nbytes[:-1]
    prev_bytes[warp_first] = 4

    delta = va - prev_va  # modulo 2^64
    pages = (delta & _U64(0xFFF)) == 0
    sdelta = delta.view(np.int64)
    field = np.where(pages, sdelta >> 12, sdelta)  # arithmetic shift, as the C++ encoder
    zz = (field.view(_U64) << _U64(1)) ^ (field >> 63).view(_U64)

    V = np.empty((N, 5), dtype=_U64)
    V[:, 0] = zz
    V[:, 1] = ref
    V[:, 2] = nbytes
    V[:, 3] = rec["gap"]
    V[:, 4] = rec["repeat"].astype(_U64) - _U64(1)
    P = np.empty((N, 5), dtype=bool)
    P[:, 0] = True
    P[:, 1] = ref != prev_ref
    P[:, 2] = nbytes != prev_bytes
    P[:, 3] = rec["gap"] != 0
    P[:, 4] = rec["repeat"] != 1
    flags = (
        rec["kind"].astype(np.uint8)
        | (pages.astype(np.uint8) << 3)
        | (P[:, 1].astype(np.uint8) << 4)
        | (P[:, 2].astype(np.uint8) << 5)
        | (P[:, 3].astype(np.uint8) << 6)
        | (P[:, 4].astype(np.uint8) << 7)
    )
    L = _varint_lengths(V) * P
    reclen = 1 + L.sum(axis=1)
    rec_off = np.cumsum(reclen) - reclen
    out = np.empty(int(reclen.sum()), dtype=np.uint8)
    out[rec_off] = flags
    _put_varints(out, rec_off[:, None] + 1 + np.cumsum(L, axis=1) - L, V, L)
    return out, reclen


def _put_varints(out, offset, value, length):
    """Writes varint `value` of `length` bytes (0: none) at `offset`, element-wise."""
    for j in range(10):
        m = length > j
        if not m.any():
            break
        v = (value[m] >> _U64(7 * j)) & _U64(0x7F)
        cont = np.where(length[m] > j + 1, _U64(0x80), _U64(0))
        out[offset[m] + j] = (v | cont).astype(np.uint8)


def encode_threadblocks(rec, first_tb, count, warps_per_block):
    """Encodes threadblocks first_tb .. first_tb+count-1 of `rec` (sorted by (tb, warp), already
    folded) as a Blocks chunk encodes them (docs/trace-format.md, "Blocks chunk"). Returns the
    bytes and each threadblock's encoded size, in order."""
    N = len(rec)
    W = warps_per_block
    S = count * W
    # Records per (threadblock, warp) slot.
    slot = (rec["tb"] - _U64(first_tb)).astype(np.int64) * W + rec["warp"]
    per_slot = np.bincount(slot, minlength=S) if N else np.zeros(S, dtype=np.int64)
    slot_first = np.cumsum(per_slot) - per_slot  # index of each slot's first record
    warp_first = np.zeros(N, dtype=bool)
    warp_first[slot_first[per_slot > 0]] = True
    # A threadblock's VA base is the first VA of its first non-empty warp.
    tb_rows = per_slot.reshape(count, W).sum(axis=1)
    base_tb = np.zeros(count, dtype=_U64)
    nonempty = tb_rows > 0
    base_tb[nonempty] = rec["va"][(np.cumsum(tb_rows) - tb_rows)[nonempty]]
    if N:
        body, reclen = encode_records(rec, warp_first, np.repeat(base_tb, tb_rows))
        rec_end = np.cumsum(reclen)
        slot_end = np.cumsum(per_slot)
        body_end = np.where(slot_end > 0, rec_end[np.maximum(slot_end - 1, 0)], 0)
        body_len = np.diff(body_end, prepend=0)
    else:
        body = np.zeros(0, dtype=np.uint8)
        body_len = np.zeros(S, dtype=np.int64)

    # Headers: (tb id, warps, VA base) per threadblock, (records, bytes) per warp.
    H = np.empty((count, 3), dtype=_U64)
    H[:, 0] = np.arange(first_tb, first_tb + count, dtype=_U64)
    H[:, 1] = W
    H[:, 2] = base_tb
    HL = _varint_lengths(H)
    WH = np.empty((S, 2), dtype=_U64)
    WH[:, 0] = per_slot
    WH[:, 1] = body_len
    WL = _varint_lengths(WH)
    hlen = HL.sum(axis=1)
    item = (WL.sum(axis=1) + body_len).reshape(count, W)  # a warp's header and records
    size = hlen + item.sum(axis=1)
    tb_off = np.cumsum(size) - size
    warp_off = (tb_off + hlen)[:, None] + np.cumsum(item, axis=1) - item
    warp_off = warp_off.ravel()

    out = np.empty(int(size.sum()), dtype=np.uint8)
    _put_varints(out, tb_off[:, None] + np.cumsum(HL, axis=1) - HL, H, HL)
    _put_varints(out, warp_off[:, None] + np.cumsum(WL, axis=1) - WL, WH, WL)
    body_off = warp_off + WL.sum(axis=1)
    if len(body):
        out[np.repeat(body_off - (np.cumsum(body_len) - body_len), body_len)
            + np.arange(len(body))] = body
    return out.tobytes(), size.tolist()
