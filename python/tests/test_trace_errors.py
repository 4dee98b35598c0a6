"""Corrupt, truncated and malformed traces: the Python reader rejects exactly what the C++ reader
rejects, with the same one-line message, and never fails any other way."""

import re
import hashlib
import random
import subprocess

import pytest
import zstandard
from conftest import dump_text

import uvmsim
from uvmsim.codec import (
    FOOTER_BYTES,
    HEADER_FIXED_BYTES,
    get_u32,
    get_u64,
    put_u32,
    put_u64,
    put_varint,
)

BASE = 0x7F0000000000


@pytest.fixture(params=["default-groups", "groups-of-2"])
def decode_groups(request, monkeypatch):
    """Runs a test with the decoder's default record groups and with groups of two records (so
    warps and faults fall on group boundaries)."""
    if request.param == "groups-of-2":
        monkeypatch.setattr(uvmsim.records, "_GROUP_RECORDS", 2)


def read_everything(path):
    """Python's verdict on a file: None if it reads completely, else the error message."""
    try:
        with uvmsim.Trace(path) as t:
            dump_text(t)
            t.info()
        return None
    except uvmsim.TraceError as e:
        return str(e)


_CPP_VERDICTS = {}  # file content -> verdict with "{path}" for the file name


def cpp_verdict(cli, path):
    """The C++ reader's verdict (trace dump reads every host event and record). Verdicts are
    remembered by file content, so a test run twice (decode_groups) asks uvmsim once."""
    key = hashlib.sha256(path.read_bytes()).digest() if path.is_file() else None
    if key in _CPP_VERDICTS:
        v = _CPP_VERDICTS[key]
        return None if v is None else v.replace("{path}", str(path))
    p = subprocess.run([cli.binary, "trace", "dump", str(path), "--limit", "0"],
                       capture_output=True, text=True)
    if p.returncode == 0:
        verdict = None
    else:
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("uvmsim trace: error: "), p.stderr
        verdict = lines[0][len("uvmsim trace: error: "):]
    if key is not None:
        _CPP_VERDICTS[key] = None if verdict is None else verdict.replace(str(path), "{path}")
    return verdict


def assert_same_verdict(cli, path, expected=None):
    py = read_everything(path)
    assert py == cpp_verdict(cli, path)
    if expected is not None:
        assert py == f"{path}: {expected}"
    return py


def small_trace(path, warps=1, chunk_raw_bytes=1 << 20):
    """A valid trace: 2 host events around one launch of 3 threadblocks of `warps` warps."""
    meta = uvmsim.Metadata(
        workload="small",
        allocations=[uvmsim.Allocation(0, "a", BASE, 1 << 20)],
        kernels=[uvmsim.Kernel(0, "k", grid=(3, 1, 1), block=(32 * warps, 1, 1))])
    with uvmsim.TraceWriter(path, meta, chunk_raw_bytes=chunk_raw_bytes) as w:
        w.host_event(uvmsim.HostEvent(uvmsim.HostEventType.CpuAccess, va=BASE, size=1 << 20,
                                      kind=uvmsim.AccessKind.Write))
        w.begin_launch(0)
        n = 3 * warps * 4
        w.write_blocks({"tb": [i // (warps * 4) for i in range(n)],
                        "warp": [(i // 4) % warps for i in range(n)],
                        "va": [BASE + 4096 * i for i in range(n)],
                        "gap": [i % 3 for i in range(n)]})
        w.host_event(uvmsim.HostEvent(uvmsim.HostEventType.Synchronize))
    return path.read_bytes()


def rebuild(path, data, chunk_raws, index_fn=None):
    """Writes `data` (a valid trace) to `path` with chunk i's raw bytes replaced by chunk_raws[i]
    (when given), recompressed, and the index fixed up — or the index bytes passed through
    index_fn(bytearray) — so that every CRC is valid and only the intended fault remains."""
    src = path.with_suffix(".src.uvt")
    src.write_bytes(data)
    with uvmsim.Trace(src) as t:
        chunks, launches, host_total = t.chunks, t.launches, t.host_event_count
        first_chunk = chunks[0].offset
    out = bytearray(data[:first_chunk])
    entries = []
    cctx = zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=True)
    for i, c in enumerate(chunks):
        comp = data[c.offset:c.offset + c.compressed_bytes]
        raw_size = c.raw_bytes
        if i in chunk_raws:
            raw = chunk_raws[i]
            comp = cctx.compress(raw) if not callable(raw) else raw()
            raw_size = len(raw) if not callable(raw) else raw_size
        entries.append((c.type, c.launch_index, c.first, c.count, len(out), len(comp), raw_size,
                        uvmsim.crc32(comp)))
        out += comp
    index = bytearray()
    put_u64(index, host_total)
    put_u64(index, len(entries))
    for t_, li, first, count, off, comp, raw, crc in entries:
        index.append(t_)
        put_u32(index, li)
        for v in (first, count, off, comp, raw):
            put_u64(index, v)
        put_u32(index, crc)
    put_u64(index, len(launches))
    for l in launches:
        put_u32(index, l.launch_index)
        put_u32(index, l.kernel_id)
        put_u64(index, l.threadblocks)
        put_u64(index, l.records)
        put_u64(index, l.accesses)
    if index_fn:
        index_fn(index)
    index_offset = len(out)
    out += index
    put_u64(out, index_offset)
    put_u64(out, len(index))
    put_u32(out, uvmsim.crc32(index))
    out += b"UVTEND01"
    path.write_bytes(out)
    return path


def block(tb, warps):
    """Raw Blocks-chunk bytes of one threadblock; warps: list of (records, record bytes)."""
    out = bytearray()
    put_varint(out, tb)
    put_varint(out, len(warps))
    put_varint(out, BASE)
    for n, body in warps:
        put_varint(out, n)
        put_varint(out, len(body))
        out += bytes(body)
    return bytes(out)


OK = (1, [0x01, 0x00])  # one read at the threadblock's base
MAX_VARINT = [0xFF] * 9 + [0x01]


@pytest.mark.parametrize("warp0, warp1, expected", [
    ((1, [0x06, 0x00]), OK, "access record: record 0 of 1: unknown access kind 6"),
    ((1, [0x21, 0x00, 0x00]), OK, "access record: record 0 of 1: access of 0 bytes"),
    ((1, [0x01, 0x80, 0x80]), OK,
     "access record: record 0 of 1: malformed VA delta (varint runs past the end of the warp's "
     "data or overflows)"),
    ((1, [0x01] + [0x80] * 10 + [0x00]), OK, "access record: record 0 of 1: malformed VA delta "
     "(varint runs past the end of the warp's data or overflows)"),
    ((1, [0x01] + [0xFF] * 9 + [0x02]), OK, "access record: record 0 of 1: malformed VA delta "
     "(varint runs past the end of the warp's data or overflows)"),
    ((1, [0x11, 0x00, 0x80, 0x80, 0x80, 0x80, 0x10]), OK,
     "access record: record 0 of 1: malformed ref id"),
    ((1, [0x21, 0x00, 0x80, 0x80, 0x80, 0x80, 0x10]), OK,
     "access record: record 0 of 1: malformed byte count"),
    ((1, [0x41, 0x00, 0x80, 0x80, 0x80, 0x80, 0x10]), OK,
     "access record: record 0 of 1: malformed gap"),
    ((1, [0x81, 0x00, 0x80, 0x80, 0x80, 0x80, 0x10]), OK,
     "access record: record 0 of 1: malformed repeat count"),
    ((1, [0x81, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]), OK,
     "access record: record 0 of 1: repeat count overflows"),
    ((1, [0x01, 0x00, 0x01, 0x00]), OK,
     "access record: record 1 of 1: trailing bytes after the warp's last record"),
    ((2, [0x01, 0x80, 0x80, 0x00]), OK,
     "access record: record 1 of 2: runs past the end of the warp's data"),
    # The first bad warp is reported, whatever the kind of fault of a later one.
    (OK, (1, [0x07, 0x00]), "access record: record 0 of 1: unknown access kind 7"),
    ((1, [0x05, 0x00]), (2, [0x01, 0x80, 0x80, 0x00]),
     "access record: record 0 of 1: unknown access kind 5"),
    ((1, [0x01, 0x00, 0x01, 0x00]), (1, [0x06, 0x00]),
     "access record: record 1 of 1: trailing bytes after the warp's last record"),
    # Valid: the largest varint, and an empty warp whose bytes nobody reads.
    ((1, [0x01] + MAX_VARINT), OK, None),
    ((1, [0x09] + MAX_VARINT + [0xF9, 0x05]), (0, [0x33, 0x44, 0x55]), None),
    ((3, [0x89, 0x01, 0x02, 0x70, 0x7F, 0x2B, 0x40, 0x05, 0x01, 0x00]), OK, None),
])
def test_malformed_records(cli, tmp_path, warp0, warp1, expected, decode_groups):
    data = small_trace(tmp_path / "v.uvt", warps=2)
    with uvmsim.Trace(tmp_path / "v.uvt") as t:
        ci = t.launch_chunks(0)[0]
        c = t.chunks[ci]
    raw = block(0, [warp0, warp1]) + b"".join(block(i, [OK, OK]) for i in (1, 2))
    assert c.count == 3
    path = rebuild(tmp_path / "bad.uvt", data, {ci: raw})
    assert_same_verdict(cli, path, expected)


@pytest.mark.parametrize("raw, expected", [
    (block(1, [OK]) + block(1, [OK]) + block(2, [OK]),
     "chunk 0: threadblock id 1 where 0 was expected"),
    (block(0, [OK, OK]) + block(1, [OK]) + block(2, [OK]),
     "chunk 0: threadblock 0 has 2 warps, the kernel's block has 1"),
    (block(0, [OK]) + block(1, [OK]) + block(2, [OK]) + b"\x00",
     "chunk 0: 1 trailing bytes after the last threadblock"),
    (block(0, [(5, [0x01, 0x00])]) + block(1, [OK]) + block(2, [OK]),
     "chunk 0: threadblock 0 warp 0 claims 5 records in 2 bytes"),
    (block(0, [OK]) + block(1, [OK]) + block(2, [OK])[:-1],
     "chunk 0: length 2 at byte 37 runs past the end of the data"),
    (block(0, [OK]) + block(1, [OK]) + bytes([2, 1, 0x80]),
     "chunk 0: malformed varint at byte 28 (runs past the end of the data or exceeds 64 bits)"),
])
def test_malformed_block_chunks(cli, tmp_path, raw, expected):
    data = small_trace(tmp_path / "v.uvt")
    path = rebuild(tmp_path / "bad.uvt", data, {0: raw})
    assert_same_verdict(cli, path, expected)


def host(*events):
    return bytes(b for e in events for b in e)


CPU_WRITE = [4, 0x80, 0x80, 0x80, 0x80, 0x80, 0xFE, 0x0F, 0x80, 0x80, 0x40, 2]
LAUNCH = [0, 0, 0, 1]


@pytest.mark.parametrize("raw, expected", [
    (host([9], LAUNCH, [3]), "chunk 1: unknown host event type 9"),
    # The file under test is version 1: a MemFree (type 5) needs version 2.
    (host([5, 0], LAUNCH, [3]),
     "chunk 1: unknown host event type 5 in a version 1 trace (MemFree needs version 2)"),
    # ... and a GPU other than 0, or a SetDevice (type 6), version 3.
    (host([1, 0, 0, 7], LAUNCH, [3]),
     "chunk 1: unknown processor id 7 in a version 1 trace (GPU 7 needs version 3)"),
    (host([6, 1], LAUNCH, [3]),
     "chunk 1: unknown host event type 6 in a version 1 trace (SetDevice needs version 3)"),
    (host([7], LAUNCH, [3]), "chunk 1: unknown host event type 7"),
    (host([1, 0, 0, 16], LAUNCH, [3]),
     "chunk 1: unknown processor id 16 (0xFF is the CPU, 0 ... 15 a GPU)"),
    (host([2, 0, 0, 6, 0], LAUNCH, [3]), "chunk 1: unknown advice 6"),
    (host([4, 0, 0, 4], LAUNCH, [3]), "chunk 1: unknown access kind 4"),
    (host(CPU_WRITE, [0, 0, 1, 1], [3]), "chunk 1: kernel launch numbered 1, expected 0"),
    (host(CPU_WRITE, [0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x10], [3]),
     "chunk 1: iteration 2147483648 (must be -1, no loop, or 0..2147483647)"),
    (host(CPU_WRITE, [0, 0, 0, 9], [3]),
     "chunk 1: iteration -5 (must be -1, no loop, or 0..2147483647)"),
    (host([1, 0x80, 0xE0] + [0xFF] * 7 + [0x01, 0x80, 0x40, 0], LAUNCH, [3]),
     "chunk 1: MemPrefetch of 8192 bytes at 18446744073709547520 wraps around the 64-bit "
     "address space"),
    (host(CPU_WRITE, [0, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 1], [3]),
     "chunk 1: kernel id 4294967296 at byte 1 does not fit in 32 bits"),
    (host(CPU_WRITE, LAUNCH, [3], [3]), "chunk 1: 1 trailing bytes after the last event"),
    (host(CPU_WRITE, [3], [3]), "host events: 0 kernel launches, the index has 1"),
    (host(CPU_WRITE, LAUNCH, [1, 0, 0]), "chunk 1: unexpected end of data at byte 3"),
])
def test_malformed_host_chunks(cli, tmp_path, raw, expected):
    data = small_trace(tmp_path / "v.uvt")
    path = rebuild(tmp_path / "bad.uvt", data, {1: raw})
    assert_same_verdict(cli, path, expected)


def test_kernel_id_disagreeing_with_the_index(cli, tmp_path):
    meta = uvmsim.Metadata(workload="two", allocations=[uvmsim.Allocation(0, "a", BASE, 4096)],
                           kernels=[uvmsim.Kernel(0, "k", block=(32, 1, 1)),
                                    uvmsim.Kernel(1, "j", block=(32, 1, 1))])
    good = tmp_path / "good.uvt"
    with uvmsim.TraceWriter(good, meta) as w:
        w.begin_launch(0)
        w.end_launch()
    path = rebuild(tmp_path / "bad.uvt", good.read_bytes(), {1: bytes([0, 1, 0, 1])})
    assert_same_verdict(cli, path, "chunk 1: launch 0 of kernel 1 but the index says kernel 0")


def frame_without(flag):
    c = zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=(flag != "size"))
    return lambda: c.compress(bytes(host(CPU_WRITE, LAUNCH, [3])))


@pytest.mark.parametrize("chunk, expected", [
    (frame_without("size"), "chunk 1: zstd frame declares no uncompressed bytes, the index 17"),
    (lambda: b"not zstd at all", "chunk 1: zstd: not a valid zstd frame"),
    (lambda: zstandard.ZstdCompressor(write_content_size=True).compress(b"abc") * 2,
     "chunk 1: zstd frame declares 3 uncompressed bytes, the index 17"),
])
def test_bad_zstd_frames(cli, tmp_path, chunk, expected):
    data = small_trace(tmp_path / "v.uvt")
    path = rebuild(tmp_path / "bad.uvt", data, {1: chunk})
    assert_same_verdict(cli, path, expected)


def test_a_frame_whose_content_checksum_fails(cli, tmp_path):
    data = small_trace(tmp_path / "v.uvt")
    frame = bytearray(zstandard.ZstdCompressor(level=3, write_checksum=True,
                                               write_content_size=True).compress(
        host(CPU_WRITE, LAUNCH, [3])))
    frame[-1] ^= 0xFF  # the checksum is the frame's last 4 bytes
    path = rebuild(tmp_path / "bad.uvt", data, {1: lambda: bytes(frame)})
    assert_same_verdict(cli, path, "chunk 1: zstd: Restored data doesn't match checksum")


def entry(i, field=0):
    """Offset in the index of chunk entry i's field at byte `field` (u8 type, u32 launch, u64
    first, count, offset, compressed, raw, u32 crc)."""
    return 16 + 49 * i + field


# The first launch entry: u32 launch, u32 kernel, u64 threadblocks, records, accesses.
LAUNCH0 = 16 + 49 * 3 + 8


def u64(v):
    return v.to_bytes(8, "little")


def u32(v):
    return v.to_bytes(4, "little")


@pytest.mark.parametrize("offset, value, expected", [
    (0, u64(7), "index: host chunks hold 3 events, expected 7"),
    (8, u64(9), "index: chunk count exceeds the index size"),
    (entry(0), b"\x05", "index: unknown chunk type 5"),
    (entry(1, 13), u64(0), "index: chunk 1: empty chunk"),
    (entry(1, 37), u64(0), "index: chunk 1: implausible uncompressed size 0"),
    (entry(1, 37), u64(2**33), "index: chunk 1: implausible uncompressed size 8589934592"),
    (entry(1, 21), u64(30),
     "index: chunk 1: byte range out of bounds or overlapping another chunk"),
    (entry(2, 29), u64(2**40), "index: chunk 2: byte range out of bounds or overlapping another "
     "chunk"),
    (entry(1, 1), u32(4), "index: chunk 1: unknown launch 4"),
    (entry(1, 5), u64(1), "index: chunk 1: threadblocks out of order"),
    (entry(1, 13), u64(2), "index: chunk 1: more threadblocks than the launch has"),
    (entry(2, 5), u64(1), "index: chunk 2: host events out of order"),
    (entry(2, 13), u64(4), "index: chunk 2: more host events than the index total"),
    (LAUNCH0 - 8, u64(5), "index: launch count exceeds the index size"),
    (LAUNCH0, u32(1), "index: launch 0: out of order (numbered 1)"),
    (LAUNCH0 + 4, u32(3), "index: launch 0: unknown kernel id 3"),
    (LAUNCH0 + 8, u64(4), "index: launch 0: 4 threadblocks but kernel 'k' has a grid of 3"),
    (LAUNCH0 + 24, u64(1), "index: launch 0: fewer accesses than records"),
    (LAUNCH0 + 32, b"\x00", "index: 1 trailing bytes"),
    # The per-launch totals must be what the chunks hold (checked as each chunk is read).
    (LAUNCH0 + 16, u64(13) + u64(13), "index: launch 0: the index says 13 records, its chunks "
     "hold 12"),
    (LAUNCH0 + 16, u64(5) + u64(5), "index: launch 0: the index says 5 records, its chunks hold "
     "more"),
    (LAUNCH0 + 24, u64(20), "index: launch 0: the index says 20 accesses, its chunks hold 12"),
])
def test_inconsistent_indexes(cli, tmp_path, offset, value, expected):
    data = small_trace(tmp_path / "v.uvt", chunk_raw_bytes=40)
    with uvmsim.Trace(tmp_path / "v.uvt") as t:
        # In file order: threadblocks 0-1, threadblock 2, then the host events (written at the
        # end, when the host chunk had not reached 40 bytes).
        assert [(c.type, c.first, c.count) for c in t.chunks] == [(1, 0, 2), (1, 2, 1), (0, 0, 3)]

    def edit(ix):
        ix[offset:offset + len(value)] = value

    path = rebuild(tmp_path / "bad.uvt", data, {}, index_fn=edit)
    assert_same_verdict(cli, path, expected)


def test_header_and_footer_faults(cli, tmp_path):
    data = small_trace(tmp_path / "v.uvt")
    meta_len = get_u64(data, 16)
    header_end = HEADER_FIXED_BYTES + meta_len + 4

    def variant(name, mutate, expected):
        b = bytearray(data)
        mutate(b)
        path = tmp_path / f"{name}.uvt"
        path.write_bytes(b)
        assert_same_verdict(cli, path, expected)

    def fix_header_crc(b):
        b[header_end - 4:header_end] = uvmsim.crc32(bytes(b[:header_end - 4])).to_bytes(4, "little")

    variant("magic", lambda b: b.__setitem__(0, ord("X")), "header: bad magic: not a .uvt trace "
            "file")
    variant("version", lambda b: b.__setitem__(8, 4), "header: unsupported format version 4 "
            "(this build of uvmsim supports versions 1 to 3)")
    variant("flags", lambda b: b.__setitem__(12, 4), "header: unknown flags 0x00000004")
    stored = get_u32(data, header_end - 4)
    variant("hcrc", lambda b: b.__setitem__(30, b[30] ^ 1), None)
    assert read_everything(tmp_path / "hcrc.uvt").startswith(
        f"{tmp_path / 'hcrc.uvt'}: header: CRC mismatch (stored 0x{stored:08x}, computed ")
    variant("json", lambda b: (b.__setitem__(24, ord("[")), fix_header_crc(b)),
            "metadata: invalid JSON")
    text = data[24:24 + meta_len]
    at_true = 24 + text.index(b"true")
    variant("nan", lambda b: (b.__setitem__(slice(at_true, at_true + 4), b"NaN "),
                              fix_header_crc(b)), "metadata: invalid JSON")
    # A number beyond a double (1e999...): nlohmann rejects it, Python's float() would give inf.
    big = re.search(rb":(\d{5,})", text)
    at_big = 24 + big.start(1)
    variant("huge", lambda b: (b.__setitem__(slice(at_big, at_big + 5), b"1e999"),
                               fix_header_crc(b)), "metadata: invalid JSON")
    at = 24 + text.index(b'"managed":true') + len(b'"managed":')
    variant("schema", lambda b: (b.__setitem__(slice(at, at + 4), b"1234"), fix_header_crc(b)),
            "metadata.allocations[0].managed: expected true or false")
    variant("metalen", lambda b: b.__setitem__(slice(16, 24), (10**9).to_bytes(8, "little")),
            f"header: truncated file (metadata length 1000000000 but only {len(data)} bytes in "
            "the file)")
    variant("endmagic", lambda b: b.__setitem__(-1, ord("X")),
            "footer: missing end marker (the file is truncated or was not finished)")
    variant("appended", lambda b: b.extend(b"\x00" * 3),
            "footer: missing end marker (the file is truncated or was not finished)")
    variant("ixloc", lambda b: b.__setitem__(slice(-28, -20), (5).to_bytes(8, "little")),
            "footer: index location out of range (the file is truncated or corrupt)")
    index_offset = get_u64(data, len(data) - FOOTER_BYTES)
    variant("ixcrc", lambda b: b.__setitem__(index_offset, b[index_offset] ^ 0x10), None)
    assert "index: CRC mismatch (stored" in read_everything(tmp_path / "ixcrc.uvt")
    variant("chunkcrc", lambda b: b.__setitem__(header_end + 3, b[header_end + 3] ^ 0x40), None)
    assert ": chunk 0: CRC mismatch (stored 0x" in read_everything(tmp_path / "chunkcrc.uvt")


def test_chunk_crc_is_checked_when_zstd_cannot_vouch_for_the_chunk(cli, tmp_path):
    """zstd's content checksum proves a chunk that decompresses cleanly, so a stale CRC in the
    index alone is accepted; a frame without a content checksum is checked against the CRC; and
    a frame zstd rejects reports the CRC mismatch as its cause. Both readers alike."""
    data = small_trace(tmp_path / "v.uvt")
    with uvmsim.Trace(tmp_path / "v.uvt") as t:
        raw0 = t.load_chunk(0)
        crc0 = t.chunks[0].crc
    # Chunk entries follow the index's u64 host-event total and u64 chunk count; the CRC is the
    # last 4 of an entry's 49 bytes.
    stale_crc = lambda index: index.__setitem__(slice(16 + 45, 16 + 49),
                                                (crc0 ^ 1).to_bytes(4, "little"))
    path = rebuild(tmp_path / "stale.uvt", data, {}, index_fn=stale_crc)
    assert assert_same_verdict(cli, path) is None

    plain = zstandard.ZstdCompressor(level=3, write_checksum=False, write_content_size=True)
    frame = plain.compress(raw0)
    assert frame[4] & 0x04 == 0  # no Content_Checksum_flag
    path = rebuild(tmp_path / "plain.uvt", data, {0: lambda: frame})
    assert assert_same_verdict(cli, path) is None
    path = rebuild(tmp_path / "plainstale.uvt", data, {0: lambda: frame}, index_fn=stale_crc)
    assert "chunk 0: CRC mismatch (stored 0x" in assert_same_verdict(cli, path)

    # A frame that zstd rejects (its content checksum flipped) with a stale CRC: the CRC is the
    # cause reported; with a matching CRC, zstd's own message.
    flipped = bytearray(data)
    with uvmsim.Trace(tmp_path / "v.uvt") as t:
        c = t.chunks[0]
    flipped[c.offset + c.compressed_bytes - 1] ^= 0x01
    path = tmp_path / "flipped.uvt"
    path.write_bytes(flipped)
    assert "chunk 0: CRC mismatch (stored 0x" in assert_same_verdict(cli, path)
    bad_frame = bytes(flipped[c.offset:c.offset + c.compressed_bytes])
    path = rebuild(tmp_path / "flipped2.uvt", data, {0: lambda: bad_frame})
    assert assert_same_verdict(cli, path) == f"{path}: chunk 0: zstd: Restored data doesn't " \
                                             "match checksum"


@pytest.mark.parametrize("cut", [0, 3, 8, 23, 24, 100, -29, -28, -1])
def test_truncated_files(cli, tmp_path, cut):
    data = small_trace(tmp_path / "v.uvt")
    path = tmp_path / "cut.uvt"
    path.write_bytes(data[:cut] if cut >= 0 else data[:len(data) + cut])
    assert "truncated" in assert_same_verdict(cli, path) or cut == 0


def test_random_corruption_is_rejected_alike(cli, tmp_path):
    """Random byte flips and truncations of a multi-chunk trace: both readers accept or reject
    each file alike, with the same message; Python raises nothing but TraceError."""
    data = small_trace(tmp_path / "v.uvt", warps=2, chunk_raw_bytes=16)
    rng = random.Random(20240611)
    for i in range(40):
        b = bytearray(data)
        if i % 4 == 3:
            b = b[:rng.randrange(len(b))]
        else:
            for _ in range(rng.choice([1, 1, 2, 8])):
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        path = tmp_path / f"fuzz{i}.uvt"
        path.write_bytes(b)
        assert_same_verdict(cli, path)


def test_open_errors(cli, tmp_path):
    assert_same_verdict(cli, tmp_path, "open: is a directory")
    missing = tmp_path / "missing.uvt"
    assert read_everything(missing) == (f"{missing}: open: cannot open file: No such file or "
                                        "directory")
    empty = tmp_path / "empty.uvt"
    empty.write_bytes(b"")
    assert_same_verdict(cli, empty, "header: truncated file (0 bytes; the header alone takes 24)")


def test_random_chunk_contents_are_judged_alike(cli, tmp_path, decode_groups):
    """Bit flips, truncations and insertions inside decompressed chunks, re-framed with valid
    CRCs, so the faults reach the host-event, threadblock and record decoders: both readers agree
    on every file (accepting some, whose every record must then read identically)."""
    data = small_trace(tmp_path / "v.uvt", warps=2, chunk_raw_bytes=48)
    with uvmsim.Trace(tmp_path / "v.uvt") as t:
        raws = [t.load_chunk(i) for i in range(len(t.chunks))]
    rng = random.Random(7)
    verdicts = set()
    for i in range(60):
        ci = rng.randrange(len(raws))
        raw = bytearray(raws[ci])
        how = i % 3
        if how == 0:
            for _ in range(rng.choice([1, 2, 3])):
                raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        elif how == 1:
            raw = raw[:rng.randrange(1, len(raw))]
        else:
            at = rng.randrange(len(raw))
            raw[at:at] = bytes([rng.randrange(256)])
        path = rebuild(tmp_path / f"fuzz{i}.uvt", data, {ci: bytes(raw)})
        verdict = assert_same_verdict(cli, path)
        if verdict is None:
            with uvmsim.Trace(path) as t:
                assert dump_text(t) == cli("trace", "dump", path, "--limit", "0")
        verdicts.add(None if verdict is None else verdict.split(": ")[1])
    # The faults reached several decoders, and some mutations were still valid traces.
    assert None in verdicts and "access record" in verdicts and len(verdicts) >= 4
