"""The Python writer: byte-identical to the C++ writer, and what it writes the C++ side reads."""

import json

import numpy as np
import pandas as pd
import pytest
from conftest import copy_trace, dump_text

import uvmsim
from uvmsim import AccessKind, Advice, HostEvent, HostEventType, Processor

BASE = 0x7F0000000000
U32 = 0xFFFFFFFF


@pytest.mark.parametrize("group", [None, 5])
@pytest.mark.parametrize("name", ["mvt", "bfs", "stream", "touch", "kmeans"])
def test_rewriting_a_cpp_trace_gives_the_same_bytes(traces, tmp_path, name, group, monkeypatch):
    if group:  # encode in groups of a few records (whole threadblocks)
        monkeypatch.setattr(uvmsim.records, "_GROUP_RECORDS", group)
    path, chunk = traces[name]
    out = tmp_path / "copy.uvt"
    copy_trace(path, out, chunk_raw_bytes=chunk)
    assert out.read_bytes() == path.read_bytes()


def test_rewriting_an_unfolded_trace_unfolded_gives_the_same_bytes(traces, tmp_path):
    path, chunk = traces["random"]
    out = tmp_path / "copy.uvt"
    copy_trace(path, out, chunk_raw_bytes=chunk, fold_repeats=False)
    assert out.read_bytes() == path.read_bytes()


def handmade_metadata():
    return uvmsim.Metadata(
        workload="handmade",
        params={"n": 3, "name": "x"},
        captured_gpu="NVIDIA Test GPU",
        extra={"note": "ünïcode"},
        allocations=[
            uvmsim.Allocation(0, "a", BASE, 2 << 20),
            uvmsim.Allocation(1, "dev", BASE + (4 << 20), 4096, managed=False),
            uvmsim.Allocation(2, "pinned", BASE + (8 << 20), 8192, managed=False,
                              host_pinned=True),
        ],
        kernels=[
            uvmsim.Kernel(0, "k0", grid=(2, 1, 1), block=(64, 1, 1), regs=32, smem=1024),
            uvmsim.Kernel(5, "k5", grid=(1, 1, 1), block=(33, 1, 1)),
        ],
    )


def write_handmade(path, **options):
    """Every host event type and the corner cases of the record encoding."""
    with uvmsim.TraceWriter(path, handmade_metadata(), **options) as w:
        w.host_event(HostEvent(HostEventType.CpuAccess, va=BASE, size=2 << 20,
                               kind=AccessKind.Write))
        w.host_event(HostEvent(HostEventType.MemAdvise, va=BASE, size=4096,
                               advice=Advice.SetReadMostly, device=Processor.Gpu))
        w.host_event(HostEvent(HostEventType.MemPrefetch, va=BASE, size=1 << 20,
                               device=Processor.Gpu))
        assert w.begin_launch(0, iteration=3) == 0
        # Threadblock 0, warp 1 first: warps may come in any order, each in program order.
        w.write_blocks({
            "tb": [0, 0, 0, 0, 0, 0, 0],
            "warp": [1, 1, 1, 1, 1, 1, 0],
            "kind": [1, 2, 2, 3, 0, 1, 1],
            "va": [BASE, BASE + 8, BASE + 12, BASE + 0x5000, BASE + 0x2003, 2**64 - 1,
                   BASE + 0x1000],
            "bytes": [4, 4, 4, 8, 128, U32, 4],
            "ref_id": [0, 0, 0, 7, 7, U32, 0],
            "gap": [0, 0, 0, 100, 0, U32, 0],
            "repeat": [1, 1, 1, 1, 5, U32, 1],
        })
        w.end_launch()  # threadblock 1 is empty
        w.host_event(HostEvent(HostEventType.Synchronize))
        w.host_event(HostEvent(HostEventType.MemPrefetch, va=BASE, size=8192,
                               device=Processor.Cpu))
        assert w.begin_launch(5) == 1
        w.begin_block(2)
        w.access(1, BASE + (4 << 20), kind=AccessKind.Write, bytes=16, ref_id=9, gap=3)
        w.access(1, BASE + (8 << 20) - 4, kind=AccessKind.Read, ref_id=10)
        w.end_block()
        w.host_event(HostEvent(HostEventType.MemAdvise, va=BASE + 4096, size=4096,
                               advice=Advice.UnsetAccessedBy, device=Processor.Cpu))
        w.host_event(HostEvent(HostEventType.Synchronize))


HANDMADE_DUMP = """\
# host events (9)
[0] CpuAccess write va=0x7f0000000000 size=2097152
[1] MemAdvise SetReadMostly va=0x7f0000000000 size=4096 device=gpu
[2] MemPrefetch va=0x7f0000000000 size=1048576 to=gpu
[3] KernelLaunch launch=0 kernel=0 (k0) iteration=3
[4] Synchronize
[5] MemPrefetch va=0x7f0000000000 size=8192 to=cpu
[6] KernelLaunch launch=1 kernel=5 (k5) iteration=-1
[7] MemAdvise UnsetAccessedBy va=0x7f0000001000 size=4096 device=cpu
[8] Synchronize
# launch 0: kernel 0 (k0), 2 threadblocks, 6 records
tb 0 warp 0: read va=0x7f0000001000 bytes=4 ref=0 gap=0 repeat=1
tb 0 warp 1: read va=0x7f0000000000 bytes=4 ref=0 gap=0 repeat=1
tb 0 warp 1: write va=0x7f0000000008 bytes=4 ref=0 gap=0 repeat=2
tb 0 warp 1: atomic va=0x7f0000005000 bytes=8 ref=7 gap=100 repeat=1
tb 0 warp 1: prefetch va=0x7f0000002003 bytes=128 ref=7 gap=0 repeat=5
tb 0 warp 1: read va=0xffffffffffffffff bytes=4294967295 ref=4294967295 gap=4294967295 \
repeat=4294967295
# launch 1: kernel 5 (k5), 1 threadblocks, 2 records
tb 0 warp 1: write va=0x7f0000400000 bytes=16 ref=9 gap=3 repeat=1
tb 0 warp 1: read va=0x7f00007ffffc bytes=4 ref=10 gap=0 repeat=1
"""


def test_a_python_trace_reads_identically_in_cpp_and_python(cli, tmp_path):
    path = tmp_path / "handmade.uvt"
    write_handmade(path)
    assert cli("trace", "dump", path, "--limit", "0") == HANDMADE_DUMP
    with uvmsim.Trace(path) as t:
        assert dump_text(t) == HANDMADE_DUMP
        info = t.info()
    assert json.loads(cli("trace", "info", path, "--json")) == info
    assert info["captured_gpu"] == "NVIDIA Test GPU" and info["extra"] == {"note": "ünïcode"}
    assert info["host_events"] == {"total": 9, "KernelLaunch": 2, "MemPrefetch": 2,
                                   "MemAdvise": 2, "Synchronize": 2, "CpuAccess": 1,
                                   "MemFree": 0, "SetDevice": 0}
    assert info["format_version"] == 1  # nothing needs version 2
    # launch 0: warp 0's read; warp 1's read, two folded writes, atomic, 5 prefetches, U32 reads
    accesses = 1 + 1 + 2 + 1 + 5 + U32
    assert [(l["records"], l["accesses"]) for l in info["launches"]] == [(6, accesses), (2, 2)]
    assert info["allocations"][2]["host_pinned"] is True


def test_mem_free_makes_version_two_and_the_simulator_frees(cli, tmp_path):
    meta = uvmsim.Metadata(workload="pyfree",
                           allocations=[uvmsim.Allocation(0, "a", BASE, 2 << 20),
                                        uvmsim.Allocation(1, "b", BASE + (4 << 20), 2 << 20)],
                           kernels=[uvmsim.Kernel(0, "touch", grid=(16, 1, 1), block=(128, 1, 1))])
    path = tmp_path / "free.uvt"
    with uvmsim.TraceWriter(path, meta) as w:
        w.begin_launch(0)
        w.write_blocks(page_touch(16, 4, 8))  # all of a, on the GPU
        w.host_event(HostEvent(HostEventType.MemFree, va=BASE))
    assert cli("trace", "dump", path, "--host-only").splitlines()[-1] == \
        "[1] MemFree va=0x7f0000000000"
    with uvmsim.Trace(path) as t:
        assert t.version == 2
        assert [e.type for e in t.host_events()][-1] == HostEventType.MemFree
        info = t.info()
    assert json.loads(cli("trace", "info", path, "--json")) == info
    assert info["host_events"]["MemFree"] == 1
    stats_path = tmp_path / "stats.json"
    cli("run", "--gpu", "gtx1080ti", "--trace", path, "--stats-out", stats_path, "--quiet")
    stats = json.loads(stats_path.read_text())
    assert stats["driver"]["frees"] == 1
    assert stats["driver"]["freed_gpu_pages"] == 512
    assert stats["dtoh_bytes"] == 0


def touch_metadata(workload):
    """One 2 MB allocation and a 16 x 128-thread kernel (page_touch's shape)."""
    return uvmsim.Metadata(workload=workload,
                           allocations=[uvmsim.Allocation(0, "a", BASE, 2 << 20)],
                           kernels=[uvmsim.Kernel(0, "touch", grid=(16, 1, 1), block=(128, 1, 1))])


def test_set_device_and_gpu_ordinals_make_version_three(cli, tmp_path):
    meta = touch_metadata("pydevices")
    path = tmp_path / "devices.uvt"
    with uvmsim.TraceWriter(path, meta) as w:
        w.host_event(HostEvent(HostEventType.SetDevice, device=uvmsim.gpu(2)))
        w.begin_launch(0)
        w.write_blocks(page_touch(16, 4, 8))
        w.host_event(HostEvent(HostEventType.MemPrefetch, va=BASE, size=4096,
                               device=uvmsim.gpu(15)))
        w.host_event(HostEvent(HostEventType.MemAdvise, va=BASE, size=4096,
                               advice=uvmsim.Advice.SetAccessedBy, device=uvmsim.Processor.Cpu))
        with pytest.raises(ValueError, match="SetDevice to the CPU"):
            w.host_event(HostEvent(HostEventType.SetDevice, device=uvmsim.Processor.Cpu))
        with pytest.raises(ValueError, match="out-of-range enum value"):
            w.host_event(HostEvent(HostEventType.MemPrefetch, va=BASE, size=1, device=16))
    assert cli("trace", "dump", path, "--host-only").splitlines()[1:] == [
        "[0] SetDevice gpu=2", "[1] KernelLaunch launch=0 kernel=0 (touch) iteration=-1",
        "[2] MemPrefetch va=0x7f0000000000 size=4096 to=gpu15",
        "[3] MemAdvise SetAccessedBy va=0x7f0000000000 size=4096 device=cpu"]
    with uvmsim.Trace(path) as t:
        assert t.version == 3
        assert dump_text(t) == cli("trace", "dump", path, "--limit", "0")
        info = t.info()
        assert repr(list(t.host_events())[2]) == \
            "HostEvent(MemPrefetch, va=0x7f0000000000, size=4096, device=Gpu15)"
    assert json.loads(cli("trace", "info", path, "--json")) == info
    assert info["host_events"]["SetDevice"] == 1 and info["launches"][0]["device"] == 2
    # A one-GPU machine (system.gpus=1, the default) refuses it in one line.
    code, msg = cli.error("run", "--gpu", "gtx1080ti", "--trace", path, "--quiet")
    assert code == 1
    assert msg == (f"{path}: host event KernelLaunch: launch 0 runs on GPU 2 (SetDevice), but "
                   "the machine has 1 GPU (system.gpus=1)")


def test_folding_can_be_switched_off(cli, tmp_path):
    path = tmp_path / "unfolded.uvt"
    write_handmade(path, fold_repeats=False)
    lines = cli("trace", "dump", path, "--launch", "0", "--limit", "0").splitlines()
    assert lines[3:5] == ["tb 0 warp 1: write va=0x7f0000000008 bytes=4 ref=0 gap=0 repeat=1",
                          "tb 0 warp 1: write va=0x7f000000000c bytes=4 ref=0 gap=0 repeat=1"]


def test_small_chunks_split_launches_and_host_events(cli, tmp_path):
    big, small = tmp_path / "big.uvt", tmp_path / "small.uvt"
    write_handmade(big)
    write_handmade(small, chunk_raw_bytes=8)
    info = json.loads(cli("trace", "info", small, "--json"))
    # A chunk closes once it holds 8 bytes: after each event with an address (more than 8
    # bytes each), a launch (4 bytes) and a synchronisation (1 byte) share a chunk with the
    # next event; every threadblock closes its own.
    assert info["chunks"] == {"host": 6, "blocks": 3}
    with uvmsim.Trace(small) as s, uvmsim.Trace(big) as b:
        assert dump_text(s) == dump_text(b)
        assert [len(a) for a in s.records(0)] == [6, 0]


def page_touch(tbs, warps, pages_per_warp):
    """Each warp reads its own pages, one record per 4 KiB page, 4 accesses each."""
    tb, warp, page = np.meshgrid(np.arange(tbs), np.arange(warps), np.arange(pages_per_warp),
                                 indexing="ij")
    index = (tb * warps + warp) * pages_per_warp + page
    return {"tb": tb.ravel(), "warp": warp.ravel(), "va": BASE + 4096 * index.ravel(),
            "ref_id": np.zeros(index.size, dtype=np.uint32), "repeat": np.full(index.size, 4)}


def test_uvmsim_runs_a_python_trace(cli, tmp_path):
    meta = touch_metadata("pytouch")
    path = tmp_path / "touch.uvt"
    with uvmsim.TraceWriter(path, meta) as w:
        w.host_event(HostEvent(HostEventType.CpuAccess, va=BASE, size=2 << 20,
                               kind=AccessKind.Write))
        w.begin_launch(0)
        w.write_blocks(page_touch(16, 4, 8))  # 512 pages = the whole 2 MiB allocation
        # the launch is complete: no end_launch() needed
        w.host_event(HostEvent(HostEventType.Synchronize))
    stats_path = tmp_path / "stats.json"
    cli("run", "--gpu", "gtx1080ti", "--trace", path, "--stats-out", stats_path, "--quiet")
    stats = json.loads(stats_path.read_text())
    assert stats["records"] == 512
    assert stats["accesses"] == 2048
    assert stats["kernels"][0]["threadblocks"] == 16
    # Every page was written by the CPU, then read by the GPU once: it crosses the link once.
    assert stats["htod_bytes"] == 2 << 20
    assert stats["dtoh_bytes"] == 0


def test_batches_in_any_form_and_order_write_the_same_bytes(tmp_path):
    meta = uvmsim.Metadata(workload="w", allocations=[uvmsim.Allocation(0, "a", BASE, 8 << 20)],
                           kernels=[uvmsim.Kernel(0, "k", grid=(6, 1, 1), block=(96, 1, 1))])
    rec = page_touch(6, 3, 5)
    rec["gap"] = np.arange(90) % 7
    rec["kind"] = np.arange(90) % 4

    def write(name, fill):
        path = tmp_path / name
        with uvmsim.TraceWriter(path, meta) as w:
            w.begin_launch(0)
            fill(w)
        return path.read_bytes()

    expected = write("dict.uvt", lambda w: w.write_blocks(rec))
    frame = pd.DataFrame(rec)
    shuffled = frame.sort_values(["warp", "tb"], kind="stable")  # warps interleaved differently
    assert write("frame.uvt", lambda w: w.write_blocks(shuffled)) == expected

    def in_pieces(w):  # two batches, the first ending with an empty threadblock range
        w.write_blocks(frame[frame.tb < 2], upto=2)
        w.write_blocks(frame[frame.tb >= 2])

    assert write("pieces.uvt", in_pieces) == expected

    def one_by_one(w):
        for t in range(6):
            w.begin_block(3)
            for r in frame[frame.tb == t].itertuples():
                w.access(r.warp, r.va, kind=r.kind, gap=r.gap, repeat=r.repeat)
            w.end_block()

    assert write("scalar.uvt", one_by_one) == expected
    structured = np.zeros(len(frame), dtype=uvmsim.RECORD_DTYPE)
    for c in frame.columns:
        structured[c] = frame[c]
    structured["bytes"] = 4
    assert write("structured.uvt", lambda w: w.write_blocks(structured)) == expected


def test_repeats_that_overflow_32_bits_start_a_new_record(cli, tmp_path):
    meta = uvmsim.Metadata(workload="w", allocations=[uvmsim.Allocation(0, "a", BASE, 4096)],
                           kernels=[uvmsim.Kernel(0, "k", grid=(1, 1, 1), block=(32, 1, 1))])
    path = tmp_path / "rep.uvt"
    with uvmsim.TraceWriter(path, meta) as w:
        w.begin_launch(0)
        w.write_blocks({"tb": [0, 0, 0], "warp": [0, 0, 0], "va": [BASE, BASE + 4, BASE + 8],
                        "repeat": [U32 - 1, 1, 1]})
    lines = cli("trace", "dump", path, "--launch", "0").splitlines()[1:3]
    assert lines == [f"tb 0 warp 0: read va=0x7f0000000000 bytes=4 ref=0 gap=0 repeat={U32}",
                     "tb 0 warp 0: read va=0x7f0000000008 bytes=4 ref=0 gap=0 repeat=1"]


@pytest.mark.parametrize("call, message", [
    (lambda w: w.host_event(HostEvent(HostEventType.Synchronize)), "while launch 0 has only 0"),
    (lambda w: w.write_blocks({"tb": [0], "warp": [2], "va": [BASE]}), "warp 2 of a 2-warp"),
    (lambda w: w.write_blocks({"tb": [0], "warp": [0], "va": [BASE], "repeat": [0]}),
     "repeat 0"),
    (lambda w: w.write_blocks({"tb": [0], "warp": [0], "va": [BASE], "bytes": [0]}),
     "0 bytes"),
    (lambda w: w.write_blocks({"tb": [0], "warp": [0], "va": [-1]}), "'va': value -1"),
    (lambda w: w.write_blocks({"tb": [0], "warp": [0], "va": [BASE], "kind": [4]}),
     "'kind': value 4 out of range 0..3"),
    (lambda w: w.write_blocks({"tb": [0], "warp": [0], "va": [0.5]}), "non-integer"),
    (lambda w: w.write_blocks({"tb": [2], "warp": [0], "va": [BASE]}), "up to threadblock 3"),
    (lambda w: w.write_blocks({"tb": [0], "warp": [0]}), "without a 'va' column"),
    (lambda w: w.begin_launch(0), "begin_launch while launch 0"),
    (lambda w: w.access(0, BASE), "access outside a threadblock"),
    (lambda w: w.begin_block(3), "begin_block with 3 warps"),
    (lambda w: w.finish(), "finish while launch 0"),
])
def test_misuse_is_a_value_error_and_leaves_no_valid_file(cli, tmp_path, call, message):
    path = tmp_path / "bad.uvt"
    with pytest.raises(ValueError, match=message):
        with uvmsim.TraceWriter(path, handmade_metadata()) as w:
            w.begin_launch(0)
            call(w)
    code, err = cli.error("trace", "info", path)
    assert code == 1
    assert "truncated" in err
    with pytest.raises(uvmsim.TraceError) as e:
        uvmsim.Trace(path)
    assert str(e.value) == err


def test_writer_rejects_unknown_kernels_and_bad_host_events(tmp_path):
    w = uvmsim.TraceWriter(tmp_path / "x.uvt", handmade_metadata())
    with pytest.raises(ValueError, match="unknown kernel id 3"):
        w.begin_launch(3)
    with pytest.raises(ValueError, match="use begin_launch"):
        w.host_event(HostEvent(HostEventType.KernelLaunch))
    with pytest.raises(ValueError, match="out-of-range enum"):
        w.host_event(HostEvent(HostEventType.MemAdvise, advice=9))
    with pytest.raises(ValueError, match="size -1 is not"):
        w.host_event(HostEvent(HostEventType.CpuAccess, size=-1))
    w.finish()
    with pytest.raises(ValueError, match="after finish"):
        w.begin_launch(0)


@pytest.mark.parametrize("change, message", [
    (lambda m: m.allocations.append(uvmsim.Allocation(7, "b", BASE + 4096, 10)),
     "metadata.allocations[3].base: range overlaps allocation 0 'a'"),
    (lambda m: m.allocations.append(uvmsim.Allocation(0, "c", 1, 10)),
     "metadata.allocations[3].id: duplicate allocation id 0"),
    (lambda m: setattr(m.allocations[0], "size", 0), "metadata.allocations[0].size: must be"),
    (lambda m: setattr(m.allocations[0], "host_pinned", True),
     "metadata.allocations[0].host_pinned: requires managed = false"),
    (lambda m: setattr(m.kernels[0], "block", (64, 32, 1)),
     "metadata.kernels[0].block: more than 1024 threads per block"),
    (lambda m: setattr(m.kernels[1], "grid", (1, 70000, 1)),
     "metadata.kernels[1].grid: exceeds CUDA's grid limits"),
    (lambda m: setattr(m.kernels[1], "grid", (0, 1, 1)),
     r"metadata.kernels\[1\].grid\[0\]: must be in 1..4294967295"),
    (lambda m: setattr(m.kernels[1], "regs", 2**32), "metadata.kernels[1].regs: value 4294967296"),
    (lambda m: setattr(m, "workload", 3), "metadata.workload: expected a string"),
])
def test_invalid_metadata_is_refused_before_anything_is_written(tmp_path, change, message):
    meta = handmade_metadata()
    change(meta)
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")
                       if "\\" not in message else message):
        uvmsim.TraceWriter(tmp_path / "m.uvt", meta)
    assert not (tmp_path / "m.uvt").exists()


def test_random_records_round_trip_through_both_readers(cli, tmp_path):
    """Random records over the whole range of every field (64-bit VAs, so deltas wrap around),
    written unfolded: the Python reader returns them unchanged and uvmsim dumps the same."""
    rng = np.random.default_rng(5)
    n = 3000
    meta = uvmsim.Metadata(workload="random", allocations=[uvmsim.Allocation(0, "a", BASE, 4096)],
                           kernels=[uvmsim.Kernel(0, "k", grid=(7, 1, 1), block=(100, 1, 1))])
    edges = np.array([0, 1, 4095, 4096, 2**63 - 1, 2**63, 2**64 - 4096, 2**64 - 1], dtype=np.uint64)
    va = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    va[::3] = BASE + 4096 * rng.integers(-5, 5, n // 3 + 1, dtype=np.int64)[: len(va[::3])]
    va[::7] = edges[rng.integers(0, len(edges), len(va[::7]))]

    def field(high):
        v = rng.integers(0, high, n, dtype=np.uint64)
        v[::11] = high  # the largest value
        return v

    rec = np.zeros(n, dtype=uvmsim.RECORD_DTYPE)
    rec["tb"] = np.sort(rng.integers(0, 7, n))
    rec["warp"] = rng.integers(0, 4, n)
    rec["kind"] = rng.integers(0, 4, n)
    rec["va"] = va
    rec["bytes"] = np.maximum(field(U32), 1)
    rec["ref_id"] = np.where(rng.random(n) < 0.5, 3, field(U32))
    rec["gap"] = np.where(rng.random(n) < 0.5, 0, field(U32))
    rec["repeat"] = np.where(rng.random(n) < 0.5, 1, np.maximum(field(U32), 1))
    path = tmp_path / "random.uvt"
    with uvmsim.TraceWriter(path, meta, fold_repeats=False, chunk_raw_bytes=4096) as w:
        w.begin_launch(0)
        w.write_blocks(rec)
    expected = rec[np.lexsort((rec["warp"], rec["tb"]))]
    with uvmsim.Trace(path) as t:
        assert len(t.launch_chunks(0)) > 1
        back = t.all_records(0)
        assert np.array_equal(back, expected)
        assert dump_text(t) == cli("trace", "dump", path, "--limit", "0")


def test_numpy_integers_in_metadata_are_plain_json(tmp_path, cli):
    meta = uvmsim.Metadata(workload="np", params={"n": 3},
                           allocations=[uvmsim.Allocation(np.uint32(0), "a", np.uint64(BASE),
                                                          np.int64(4096))],
                           kernels=[uvmsim.Kernel(0, "k", grid=tuple(np.array([2, 1, 1])),
                                                  block=(np.int32(64), 1, 1))])
    with uvmsim.TraceWriter(tmp_path / "np.uvt", meta) as w:
        w.begin_launch(0)
        w.end_launch()
    info = json.loads(cli("trace", "info", tmp_path / "np.uvt", "--json"))
    assert info["allocations"][0]["base"] == BASE and info["kernels"][0]["grid"] == [2, 1, 1]
    meta.params = {"n": np.int64(3)}
    with pytest.raises(ValueError, match="metadata is not JSON-serialisable"):
        uvmsim.TraceWriter(tmp_path / "np2.uvt", meta)
