"""The Python reader agrees with the C++ one on traces the C++ generators write."""

import json

import numpy as np
import pytest
from conftest import dump_text

import uvmsim
from uvmsim.records import decode_warp, parse_block_chunk

WORKLOADS = ["mvt", "bfs", "stream", "random", "touch"]


def test_crc32_is_the_ieee_crc():
    assert uvmsim.crc32(b"123456789") == 0xCBF43926
    assert uvmsim.crc32(b"") == 0


@pytest.mark.parametrize("name", WORKLOADS)
def test_info_equals_trace_info_json(cli, traces, name):
    path, _ = traces[name]
    expected = json.loads(cli("trace", "info", path, "--json"))
    with uvmsim.Trace(path) as t:
        assert t.info() == expected


@pytest.mark.parametrize("name", WORKLOADS)
def test_every_host_event_and_record_equals_trace_dump(cli, traces, name):
    path, _ = traces[name]
    with uvmsim.Trace(path) as t:
        assert dump_text(t) == cli("trace", "dump", path, "--limit", "0")


def test_metadata_allocations_and_kernels(traces):
    with uvmsim.Trace(traces["mvt"][0]) as t:
        assert t.metadata.workload == "mvt"
        assert [k.name for k in t.kernels] == ["mvt_kernel1", "mvt_kernel2"]
        assert all(isinstance(a, uvmsim.Allocation) for a in t.allocations)
        assert t.metadata.hints["source"] == "static"
        assert t.version == 1  # no MemFree: the lowest version that holds it
        assert t.metadata.managed_footprint() == sum(a.size for a in t.allocations)


def test_records_come_one_array_per_chunk_and_are_read_lazily(traces, monkeypatch):
    path, _ = traces["bfs"]
    with uvmsim.Trace(path) as t:
        launch = max(t.launches, key=lambda l: len(t.launch_chunks(l.launch_index)))
        chunk_ids = t.launch_chunks(launch.launch_index)
        assert len(chunk_ids) >= 3
        loads = []
        real = uvmsim.Trace.load_chunk
        monkeypatch.setattr(uvmsim.Trace, "load_chunk",
                            lambda self, i: loads.append(i) or real(self, i))
        it = t.records(launch.launch_index)
        first = next(it)
        assert loads == chunk_ids[:1]  # nothing read ahead
        arrays = [first, *it]
        assert loads == chunk_ids
        assert len(arrays) == len(chunk_ids)
        for ci, a in zip(chunk_ids, arrays):
            c = t.chunks[ci]
            assert a.dtype == uvmsim.RECORD_DTYPE
            assert a["tb"].min() >= c.first and a["tb"].max() < c.first + c.count
            assert np.all(np.diff(a["tb"].astype(np.int64)) >= 0)
        total = np.concatenate(arrays)
        assert len(total) == launch.records
        assert int(total["repeat"].sum()) == launch.accesses
        assert np.array_equal(total, t.all_records(launch.launch_index))


@pytest.mark.parametrize("group", [None, 3])
@pytest.mark.parametrize("name", ["mvt", "bfs", "random"])
def test_vectorised_decoder_equals_the_reference_decoder(traces, name, group, monkeypatch):
    """decode_warp transcribes the C++ WarpStream::next; the fast path must agree with it."""
    if group:  # decode in groups of a few records: warps straddle the group boundaries
        monkeypatch.setattr(uvmsim.records, "_GROUP_RECORDS", group)
    path, _ = traces[name]
    with uvmsim.Trace(path) as t:
        for l in t.launches[:3]:
            k = t.metadata.kernel(l.kernel_id)
            for ci, fast in zip(t.launch_chunks(l.launch_index), t.records(l.launch_index)):
                c = t.chunks[ci]
                raw = t.load_chunk(ci)
                w = parse_block_chunk(raw, c.first, c.count, k.warps_per_block, t.name, ci)
                slow = []
                for tb, wi, n, b, ln, base in zip(w.tb.tolist(), w.index.tolist(),
                                                  w.records.tolist(), w.begin.tolist(),
                                                  w.length.tolist(), w.va_base.tolist()):
                    for kind, va, nb, ref, gap, rep in decode_warp(raw, b, b + ln, n, base, t.name):
                        slow.append((tb, wi, kind, va, nb, ref, gap, rep))
                assert fast.tolist() == slow


def test_host_events_are_typed(traces):
    with uvmsim.Trace(traces["stream"][0]) as t:
        events = list(t.host_events())
    assert len(events) == t.host_event_count
    assert events[0].type == uvmsim.HostEventType.CpuAccess
    assert events[0].kind == uvmsim.AccessKind.Write
    launches = [e for e in events if e.type == uvmsim.HostEventType.KernelLaunch]
    assert [e.launch_index for e in launches] == list(range(len(t.launches)))


def test_missing_launch_is_an_index_error(traces):
    with uvmsim.Trace(traces["touch"][0]) as t:
        with pytest.raises(IndexError, match="launch 7 does not exist"):
            next(t.records(7))
