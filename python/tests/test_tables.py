"""load_sweep and load_events: the simulator's CSV tables as pandas DataFrames."""

import json

import numpy as np
import pytest

import uvmsim


@pytest.fixture(scope="module")
def sweep(cli, tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep")
    spec = d / "tiny.json"
    spec.write_text(json.dumps({
        "workloads": [{"name": "regular", "generator": "regular", "footprint": "4M",
                       "params": {"init": "cpu"}}],
        "prefetch": ["tree", "none"],
        "oversub": [0, 50],
    }))
    cli("sweep", spec, "--out", d / "out", "--jobs", "1", "--progress", "none")
    return d / "out"


def test_results_csv_as_a_dataframe(sweep):
    df = uvmsim.load_sweep(sweep)
    assert len(df) == 4
    assert list(df.columns[:3]) == ["id", "status", "label"]
    assert (df.status == "ok").all()
    assert df.prefetch.tolist() == ["tree", "tree", "none", "none"]
    assert df.oversub.tolist() == [0, 50, 0, 50]
    assert df.sim_time_ns.dtype == np.int64
    assert df.id.map(type).eq(str).all()
    meta = df.attrs["sweep"]
    assert meta["name"] == "tiny" and meta["varying"] == ["prefetch", "oversub"]
    # Each row's numbers are its point's statistics.
    for row in df.itertuples():
        point = json.loads((sweep / "points" / f"{row.id}.json").read_text())
        assert row.sim_time_ns == point["stats"]["sim_time_ns"]
        assert row.gpu_faults == point["stats"]["gpu_faults"]
    tree = df[df.prefetch == "tree"]
    assert (tree.runtime_vs_baseline == 1.0).all()
    none = df[df.prefetch == "none"].reset_index()
    assert none.runtime_vs_baseline.tolist() == pytest.approx(
        (none.sim_time_ns / tree.sim_time_ns.reset_index(drop=True)).tolist())


def test_names_that_look_missing_stay_text(tmp_path):
    (tmp_path / "results.csv").write_text(
        "id,status,label,workload,prefetch,oversub,sim_time_ns,error\n"
        "0123,ok,NA none,NA,none,,5,\n"
        "00ff,failed,null,null,None,25,,boom\n")
    df = uvmsim.load_sweep(tmp_path)
    assert df.id.tolist() == ["0123", "00ff"]
    assert df.workload.tolist() == ["NA", "null"]
    assert df.prefetch.tolist() == ["none", "None"]
    assert np.isnan(df.oversub[0]) and df.oversub[1] == 25
    assert np.isnan(df.sim_time_ns[1])
    assert df.attrs["sweep"] == {}


def test_missing_or_broken_sweep_directories(tmp_path):
    with pytest.raises(uvmsim.UvmsimError, match=f"{tmp_path}/results.csv: cannot open"):
        uvmsim.load_sweep(tmp_path)
    (tmp_path / "results.csv").write_text("id,status\n1,ok\n")
    (tmp_path / "sweep.json").write_text("{")
    with pytest.raises(uvmsim.UvmsimError, match="sweep.json: invalid JSON"):
        uvmsim.load_sweep(tmp_path)


HEADER = "time_ns,event,batch,va,bytes,direction,cause,pages,duration_ns\n"


def test_events_types(tmp_path):
    p = tmp_path / "e.csv"
    p.write_text(HEADER + "10.250,batch,0,0x0,8192,,,2,1500.125\n"
                 "11.000,migration,-1,0xffffffffffffffff,4096,htod,user_prefetch,1,2.000\n")
    ev = uvmsim.load_events(p)
    assert ev.time_ns.tolist() == [10.25, 11.0]
    assert ev.batch.tolist() == [0, -1]
    assert ev.va.tolist() == [0, 2**64 - 1]
    assert ev.direction.tolist() == ["", "htod"]
    assert ev.cause.tolist() == ["", "user_prefetch"]
    assert ev.duration_ns.tolist() == [1500.125, 2.0]


@pytest.mark.parametrize("text, message", [
    ("time_ns,event\n1,batch\n", "header: expected 'time_ns,event,batch"),
    ("", "header: expected"),
    (HEADER + "1.0,batch,0,zz,1,,,1,1\n", "va: not a hex address: 'zz'"),
    (HEADER + "1.0,batch,x,0x0,1,,,1,1\n", "e.csv: "),
])
def test_bad_events_files(tmp_path, text, message):
    p = tmp_path / "e.csv"
    p.write_text(text)
    with pytest.raises(uvmsim.UvmsimError, match=message) as e:
        uvmsim.load_events(p)
    assert "\n" not in str(e.value)


def test_missing_events_file(tmp_path):
    with pytest.raises(uvmsim.UvmsimError, match="nope.csv: cannot open: No such file"):
        uvmsim.load_events(tmp_path / "nope.csv")


def test_policy_counters_live_in_their_own_file_and_are_joined_back(sweep):
    # results.csv: core columns only; the policies' reports are in policy_counters.csv.
    header = (sweep / "results.csv").read_text().splitlines()[0].split(",")
    assert not [c for c in header if c.startswith("policies.")]
    # The core metrics lead, in a fixed order, after id/status/label and the axes.
    at = header.index("sim_time_ns")
    assert header[at:at + 10] == ["sim_time_ns", "kernel_time_ns", "gpu_faults", "fault_batches",
                                  "evictions", "htod_bytes", "dtoh_bytes", "remote_bytes",
                                  "memory.oversubscription_pct", "prefetch_use.coverage"]
    counters = (sweep / "policy_counters.csv").read_text().splitlines()
    assert counters[0].startswith("id,label,policies.")
    assert len(counters) == 5
    df = uvmsim.load_sweep(sweep)
    assert df["policies.eviction.name"].tolist() == ["driver"] * 4
    assert "policies.eviction.name" not in uvmsim.load_sweep(sweep, policy_counters=False)


def test_a_sweep_written_before_the_split_loads_the_same(tmp_path):
    # An older results.csv holds policies.* itself and has no policy_counters.csv.
    (tmp_path / "results.csv").write_text(
        "id,status,label,workload,sim_time_ns,policies.eviction.name,error\n"
        "01,ok,a,a,5,lru,\n")
    df = uvmsim.load_sweep(tmp_path)
    assert df["policies.eviction.name"].tolist() == ["lru"]
    (tmp_path / "policy_counters.csv").write_text("label\nx\n")
    with pytest.raises(uvmsim.UvmsimError, match="policy_counters.csv: no 'id' column"):
        uvmsim.load_sweep(tmp_path)
