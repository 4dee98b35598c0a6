"""uvmsim.run: the simulation's statistics as a dict, its events as a DataFrame."""

import json
import os

import pytest
from conftest import SOURCE_DIR

import uvmsim

SPEED = ("wall_seconds", "accesses_per_second")


def without_speed(stats):
    return {k: v for k, v in stats.items() if k not in SPEED}


def test_run_returns_the_stats_out_json(cli, traces, tmp_path):
    path, _ = traces["bfs"]
    stats = uvmsim.run(path, gpu="gtx1080ti", oversub=50)
    cli("run", "--gpu", "gtx1080ti", "--trace", path, "--oversub", "50", "--stats-out",
        tmp_path / "s.json")
    assert without_speed(stats) == without_speed(json.loads((tmp_path / "s.json").read_text()))
    with uvmsim.Trace(path) as t:
        assert stats["accesses"] == sum(l.accesses for l in t.launches)
        assert stats["records"] == sum(l.records for l in t.launches)
        assert len(stats["kernels"]) == len(t.launches)
    assert stats["memory"]["oversubscription_pct"] >= 50  # capacity is whole 2 MB chunks
    assert stats["evictions"] > 0


def test_options_and_knobs_reach_the_configuration(traces):
    path, _ = traces["stream"]
    stats = uvmsim.run(path, gpu="titanv", hbm="64M", eviction="lru", prefetch="none", seed=7,
                       knobs={"driver.replay_policy": "batch", "thrashing.enable": False,
                              "driver.prefetch_threshold": 75})
    cfg = stats["config"]
    assert cfg["driver"]["replay_policy"] == "batch"
    assert cfg["thrashing"]["enable"] is False
    assert cfg["driver"]["prefetch_threshold"] == 75
    assert cfg["engine"]["eviction"] == "lru" and cfg["engine"]["seed"] == 7
    assert stats["policies"]["eviction"]["name"] == "lru"
    assert stats["memory"]["capacity_bytes"] == 64 << 20


def test_a_preset_given_as_a_dict(traces):
    preset = json.loads((SOURCE_DIR / "configs/gpus/gtx1080ti.json").read_text())
    preset["gpu"]["fault_buffer_entries"] = 1024
    stats = uvmsim.run(traces["touch"][0], gpu=preset)
    assert stats["config"]["gpu"]["fault_buffer_entries"] == 1024
    assert stats["config"]["gpu"]["num_sms"] == preset["gpu"]["num_sms"]


def test_same_inputs_give_identical_stats(traces):
    path, _ = traces["bfs"]
    a = uvmsim.run(path, gpu="gtx1080ti", oversub=50, eviction="random", seed=3)
    b = uvmsim.run(path, gpu="gtx1080ti", oversub=50, eviction="random", seed=3)
    assert a["evictions"] > 0
    assert without_speed(a) == without_speed(b)


def test_the_events_csv_as_a_dataframe(traces, tmp_path):
    path, _ = traces["bfs"]
    events = tmp_path / "events.csv"
    stats = uvmsim.run(path, gpu="gtx1080ti", oversub=50, events_out=events)
    ev = uvmsim.load_events(events)
    assert len(ev) == len(events.read_text().splitlines()) - 1
    assert str(ev.va.dtype) == "uint64" and str(ev.batch.dtype) == "int64"
    assert str(ev.event.dtype) == "category"
    # The identities of docs/stats.md, row by row.
    assert (ev.event == "batch").sum() == stats["fault_batches"]
    assert (ev.event == "eviction").sum() == stats["evictions"]
    moved = ev[ev.event == "migration"].groupby("direction", observed=True).bytes.sum()
    assert moved["htod"] == stats["htod_bytes"] and moved["dtoh"] == stats["dtoh_bytes"]
    demand = ev[(ev.event == "migration") & (ev.cause == "demand")].bytes.sum()
    assert demand == stats["htod_bytes_by_cause"]["demand"]
    first = events.read_text().splitlines()[1].split(",")
    assert ev.va[0] == int(first[3], 16) and ev.time_ns[0] == float(first[0])


# Each of these is a usage error, which every uvmsim command exits with status 2.
@pytest.mark.parametrize("kwargs, message, status", [
    (dict(knobs={"driver.nope": 1}),
     "uvmsim run: error: --set: driver.nope: unknown configuration key (uvmsim run --list-knobs "
     "lists them)", 2),
    (dict(eviction="no-such-policy"), "no-such-policy", 2),
    (dict(oversub=50, hbm="1G"), "uvmsim run: error: --oversub: cannot be combined with --hbm", 2),
])
def test_failures_raise_the_one_line_error(traces, kwargs, message, status):
    with pytest.raises(uvmsim.SimulationError) as e:
        uvmsim.run(traces["touch"][0], gpu="gtx1080ti", **kwargs)
    assert message in str(e.value)
    assert "\n" not in str(e.value)
    assert e.value.returncode == status


def test_a_missing_trace_is_named(tmp_path):
    missing = tmp_path / "nope.uvt"
    with pytest.raises(uvmsim.SimulationError, match=f"{missing}: open: cannot open file"):
        uvmsim.run(missing, gpu="gtx1080ti")


def test_finding_the_binary(monkeypatch, tmp_path, binary):
    assert uvmsim.find_binary("/x/uvmsim") == "/x/uvmsim"
    monkeypatch.setenv("UVMSIM_BIN", "/y/uvmsim")
    assert uvmsim.find_binary() == "/y/uvmsim"
    with pytest.raises(uvmsim.UvmsimError, match="cannot run the uvmsim binary '/y/uvmsim'"):
        uvmsim.run(tmp_path / "t.uvt", gpu="gtx1080ti")
    monkeypatch.setenv("UVMSIM_BIN", binary)
    assert os.access(uvmsim.find_binary(), os.X_OK)
