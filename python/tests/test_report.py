"""The sweep report's figures (scripts/uvmsim_report.py, behind `uvmsim report`): what each
figure drew is checked in figures.json, the manifest the script writes beside the PNG/SVG files,
against hand-made results tables whose every value is known; then a real sweep end to end."""

import csv
import json
import re
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR

SCRIPT = SOURCE_DIR / "scripts" / "uvmsim_report.py"
COLUMNS = ["id", "status", "label", "workload", "gpu", "policy", "eviction", "prefetch",
           "placement", "oversub", "seed", "sim_time_ns", "gpu_faults", "evictions",
           "runtime_vs_baseline", "memory.oversubscription_pct", "remote_bytes_by_kind.read",
           "remote_bytes_by_kind.write", "htod_bytes_by_cause.demand",
           "prefetch_use.prefetch.useful", "prefetch_use.prefetch.useless",
           "prefetch_use.prefetch.unresolved", "error"]


def report(src, out):
    p = subprocess.run([sys.executable, str(SCRIPT), str(src), str(out)], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    return json.loads((out / "figures.json").read_text())


def write_sweep(d, rows, meta, columns=COLUMNS):
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for i, r in enumerate(rows):
            w.writerow(dict({"id": "%04x" % i, "status": "ok", "gpu": "gtx1080ti",
                             "eviction": "driver", "prefetch": "tree", "error": ""}, **r))
    (d / "sweep.json").write_text(json.dumps(meta))


def point(policy, placement, oversub, seed, t, achieved, faults=100, remote=0, useful=0,
          useless=0, unresolved=0, workload="w"):
    return {"label": "%s %s %s %s" % (workload, policy, oversub, seed), "workload": workload,
            "policy": policy, "placement": placement, "oversub": oversub, "seed": seed,
            "sim_time_ns": t, "gpu_faults": faults, "evictions": 0 if oversub == 0 else 3,
            "runtime_vs_baseline": "", "memory.oversubscription_pct": achieved,
            "remote_bytes_by_kind.read": remote, "remote_bytes_by_kind.write": remote // 2,
            "htod_bytes_by_cause.demand": 1 << 20, "prefetch_use.prefetch.useful": useful,
            "prefetch_use.prefetch.useless": useless,
            "prefetch_use.prefetch.unresolved": unresolved}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("synthetic")
    rows = []
    # lru (random seeds matter): 3 seeds; host (placement scheme): remote traffic, 0 faults.
    for seed, t in ((1, 100.0), (2, 130.0), (3, 160.0)):
        rows.append(point("lru", "driver", 0, seed, t, 0.0, useful=10, useless=2, unresolved=4))
        rows.append(point("lru", "driver", 50, seed, 2 * t, 66.7, useful=6, useless=6))
        rows.append(point("host", "host", 0, seed, 500.0, 0.0, faults=0, remote=4 << 20))
        rows.append(point("host", "host", 50, seed, 500.0, 100.0, faults=0, remote=4 << 20))
    # 11 more policies: the palette must stay distinct beyond 10 series.
    for k in range(11):
        rows.append(point("p%02d" % k, "driver", 0, 1, 100.0 + k, 0.0, faults=10 ** (k % 5)))
        rows.append(point("p%02d" % k, "driver", 50, 1, 200.0 + k, 66.7, faults=10 ** (k % 5)))
    meta = {"name": "synthetic", "axes": ["workload", "gpu", "policy", "eviction", "prefetch",
                                          "placement", "oversub", "seed"],
            "varying": ["policy", "oversub", "seed"]}
    write_sweep(tmp_path / "sweep", rows, meta)
    return report(tmp_path / "sweep", tmp_path / "rep"), tmp_path / "rep"


def bars_of(fig, level, series):
    panel = [p for p in fig["panels"] if p["level"] == level][0]
    return [b for b in panel["bars"] if b["series"] == series]


def test_seed_spread_is_drawn_as_min_max_whiskers_and_bands(synthetic):
    m, out = synthetic
    assert m["seed_axes"] == ["seed"]
    faults = m["figures"]["page_faults"]
    lru = bars_of(faults, "0", "lru")[0]
    assert (lru["n"], lru["value"]) == (3, 100.0)
    rt = m["figures"]["runtime_vs_oversub"]
    line = [x for x in rt["lines"] if x["series"] == "lru"][0]
    # mean over the three seeds in ms, with the min-max band
    assert line["y"] == pytest.approx([130e-6, 260e-6])
    assert line["min"] == pytest.approx([100e-6, 200e-6])
    assert line["max"] == pytest.approx([160e-6, 320e-6])
    assert "minimum to maximum" in rt["caption"]
    # ... and under the figure itself, so a copied PNG/SVG keeps the meaning of its whiskers.
    assert "minimum to maximum" in rt["footnote"]
    assert "minimum to maximum" in (out / "runtime_vs_oversub.svg").read_text()
    for name in ("page_faults", "runtime_vs_oversub", "link_traffic", "prefetch_use"):
        png = (out / (name + ".png")).read_bytes()
        assert png[1:4] == b"PNG" and len(png) > 5000, name
        assert "<svg" in (out / (name + ".svg")).read_text()


def test_achieved_oversubscription_labels_panels_and_is_the_x_axis(synthetic):
    m, _ = synthetic
    panel = [p for p in m["figures"]["page_faults"]["panels"] if p["level"] == "50"][0]
    assert panel["achieved"] == [66.7, 100.0]
    assert panel["title"] == "50 % oversubscription\n(achieved 66.7-100.0 %)"
    rt = m["figures"]["runtime_vs_oversub"]
    assert rt["x"] == "achieved oversubscription (%)"
    assert [x for x in rt["lines"] if x["series"] == "host"][0]["x_achieved"] == [0.0, 100.0]


def test_remote_traffic_is_a_layer_of_the_link_figure(synthetic):
    m, _ = synthetic
    layers = m["figures"]["link_traffic"]["layers"]
    assert layers == ["HtoD demand", "remote (zero-copy) read", "remote (zero-copy) write"]
    host = [t for t in m["figures"]["link_traffic"]["totals"]
            if t["series"] == "host" and t["level"] == "0"][0]
    assert host["n"] == 3 and host["mib"] == pytest.approx(1 + 4 + 2)  # demand + read + write
    assert host["min"] == host["max"] == pytest.approx(7)


def test_placement_schemes_are_marked_and_the_palette_stays_distinct(synthetic):
    m, _ = synthetic
    assert m["placement_series"] == ["host"]
    series = m["figures"]["page_faults"]["series"]
    assert len(series) == 13
    # Eviction / prefetch policies first, then the placement scheme, hatched and labelled.
    assert series[-1]["name"] == "host" and series[-1]["placement"]
    assert series[-1]["label"] == "host  [placement]" and "///" in series[-1]["hatch"]
    assert not any(s["placement"] or "///" in s["hatch"] for s in series[:-1])
    styles = {(s["colour"], s["hatch"]) for s in series}
    assert len(styles) == 13
    assert "Hatched bars / dashed lines: placement schemes" in m["figures"]["page_faults"]["caption"]


def test_zeros_are_marked_on_log_axes(synthetic):
    m, _ = synthetic
    faults = m["figures"]["page_faults"]
    assert faults["log"]  # 0 .. 10^4 faults
    # host has 0 faults at both levels: a "0" is written where its bars would be.
    assert faults["zero_marks"] == 2


def test_prefetch_outcomes_and_accuracy(synthetic):
    m, _ = synthetic
    cells = m["figures"]["prefetch_use"]["cells"]
    lru0 = [c for c in cells if c["series"] == "lru" and c["level"] == "0"][0]
    assert (lru0["useful"], lru0["useless"], lru0["unresolved"]) == (10, 2, 4)
    assert lru0["accuracy"] == pytest.approx(10 / 12)
    host = [c for c in cells if c["series"] == "host" and c["level"] == "0"][0]
    assert host["accuracy"] is None


def test_one_gpu_tables_get_no_per_gpu_figures(synthetic):
    m, out = synthetic
    for name in ("gpu_traffic", "link_directions"):
        assert name not in m["figures"]
        assert not (out / (name + ".png")).exists()


MiB = 1 << 20


def node_point(workload, prefetch, oversub, gpus, peer=None):
    """A row of a sweep on a node: `gpus` is one (htod, dtoh, staged, remote) per GPU, in MiB;
    `peer` one (copy out, copy in) per GPU (its peer_link columns) or None (no peer access)."""
    r = {"label": "%s %s %s" % (workload, prefetch, oversub), "workload": workload,
         "policy": "", "placement": "driver", "prefetch": prefetch, "oversub": oversub,
         "seed": 1, "sim_time_ns": 1e6, "gpu_faults": 10, "evictions": 0,
         "memory.oversubscription_pct": oversub, "htod_bytes_by_cause.demand": 1 << 20}
    for g, (htod, dtoh, staged, remote) in enumerate(gpus):
        r.update({"gpu%d.host_link.htod_bytes" % g: htod * MiB,
                  "gpu%d.host_link.dtoh_bytes" % g: dtoh * MiB,
                  "gpu%d.host_link.peer_staged_bytes" % g: staged * MiB,
                  "gpu%d.host_link.remote_bytes" % g: remote * MiB})
    for g, (tx, rx) in enumerate(peer or []):
        r.update({"gpu%d.peer_link.copy_out_bytes" % g: tx * MiB,
                  "gpu%d.peer_link.copy_in_bytes" % g: rx * MiB})
    return r


def node_sweep(tmp_path, peer):
    per_gpu = ["gpu%d.host_link.%s" % (g, c) for g in range(3)
               for c in ("htod_bytes", "dtoh_bytes", "peer_staged_bytes", "remote_bytes")]
    if peer:
        per_gpu += ["gpu%d.peer_link.copy_%s_bytes" % (g, d) for g in range(3) for d in ("out", "in")]
    rows = [node_point("shuffle", "tree", 0, [(6, 6, 6, 0), (4, 2, 2, 0), (2, 0, 0, 1)],
                       [(3, 1), (1, 2), (0, 1)] if peer else None),
            node_point("shuffle", "none", 0, [(8, 6, 4, 0), (4, 2, 2, 0), (2, 0, 0, 0)],
                       [(5, 1), (1, 2), (0, 3)] if peer else None),
            # A one-GPU program on the node: GPUs 1 and 2 carry nothing.
            node_point("solo", "tree", 0, [(4, 1, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0)],
                       [(0, 0)] * 3 if peer else None),
            node_point("solo", "none", 0, [(4, 3, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0)],
                       [(0, 0)] * 3 if peer else None)]
    meta = {"name": "node", "axes": ["workload", "gpu", "prefetch", "oversub", "seed"],
            "varying": ["workload", "prefetch"]}
    write_sweep(tmp_path / "sweep", rows, meta, COLUMNS[:-1] + per_gpu + ["error"])
    return report(tmp_path / "sweep", tmp_path / "rep"), tmp_path / "rep"


def bar(fig, workload, series, group):
    found = [b for b in fig["bars"] if (b["workload"], b["series"], b["group"]) ==
             (workload, series, group)]
    assert len(found) == 1, (workload, series, group)
    return found[0]


def test_per_gpu_traffic_of_a_node_without_peer_access(tmp_path):
    m, out = node_sweep(tmp_path, peer=False)
    g = m["figures"]["gpu_traffic"]
    assert g["groups"] == ["0", "1", "2"]
    # Layers zero in the whole sweep (here the peer links) are left out.
    assert g["layers"] == ["HtoD (host to GPU)", "DtoH (eviction, CPU access, ...)",
                           "DtoH staged for another GPU", "zero-copy (remote) over the host link"]
    assert len(g["bars"]) == 2 * 2 * 3  # workloads x series x GPUs
    b = bar(g, "shuffle", "none", "0")
    assert (b["HtoD (host to GPU)"], b["DtoH (eviction, CPU access, ...)"],
            b["DtoH staged for another GPU"]) == (8 * MiB, 2 * MiB, 4 * MiB)
    assert bar(g, "shuffle", "tree", "2")["zero-copy (remote) over the host link"] == MiB
    solo = bar(g, "solo", "tree", "1")
    assert solo["HtoD (host to GPU)"] == solo["DtoH staged for another GPU"] == 0
    d = m["figures"]["link_directions"]
    assert d["kind"] == "mirrored" and d["groups"] == ["h0", "h1", "h2"]  # no peer links
    b = bar(d, "solo", "none", "h0")
    assert (b["into the GPU (HtoD / peer rx)"], b["out of the GPU (DtoH / peer tx)"]) == (
        4 * MiB, 3 * MiB)
    for name in ("gpu_traffic", "link_directions"):
        assert (out / (name + ".png")).read_bytes()[1:4] == b"PNG"
        assert "<svg" in (out / (name + ".svg")).read_text()
    assert "gpu_traffic.png" in (out / "index.html").read_text()


def test_peer_link_columns_are_drawn_when_the_table_has_them(tmp_path):
    m, _ = node_sweep(tmp_path, peer=True)
    g = m["figures"]["gpu_traffic"]
    assert g["layers"][-2:] == ["peer link out (tx)", "peer link in (rx)"]
    b = bar(g, "shuffle", "none", "0")
    assert (b["peer link out (tx)"], b["peer link in (rx)"]) == (5 * MiB, MiB)
    d = m["figures"]["link_directions"]
    assert d["groups"] == ["h0", "h1", "h2", "p0", "p1", "p2"]
    b = bar(d, "shuffle", "none", "p2")
    assert (b["into the GPU (HtoD / peer rx)"], b["out of the GPU (DtoH / peer tx)"]) == (
        3 * MiB, 0)
    b = bar(d, "shuffle", "tree", "h1")
    assert (b["into the GPU (HtoD / peer rx)"], b["out of the GPU (DtoH / peer tx)"]) == (
        4 * MiB, 2 * MiB)


def test_a_node_with_peer_access_beside_one_without_and_a_preset_file(tmp_path):
    # Two GPU sections: a preset name whose points have no peer-link values, and a preset given
    # as a JSON file (a path) whose points have them. Figures are named after each preset (the
    # file's name), and only the node with peer access gets peer-link bars.
    per_gpu = ["gpu%d.host_link.%s" % (g, c) for g in range(2)
               for c in ("htod_bytes", "dtoh_bytes", "peer_staged_bytes", "remote_bytes")]
    per_gpu += ["gpu%d.peer_link.copy_%s_bytes" % (g, d) for g in range(2) for d in ("out", "in")]
    rows = []
    for gpu, peer in (("x2-nopeer", None), ("/presets/x2 peer.json", [(2, 1), (1, 2)])):
        for pf in ("tree", "none"):
            r = node_point("shuffle", pf, 0, [(4, 4, 4 if peer is None else 0, 0)] * 2, peer)
            rows.append(dict(r, gpu=gpu))
    meta = {"name": "nodes", "axes": ["workload", "gpu", "prefetch", "oversub", "seed"],
            "varying": ["gpu", "prefetch"]}
    write_sweep(tmp_path / "sweep", rows, meta, COLUMNS[:-1] + per_gpu + ["error"])
    m = report(tmp_path / "sweep", tmp_path / "rep")
    assert m["figures"]["link_directions_x2-nopeer"]["groups"] == ["h0", "h1"]
    peer = m["figures"]["link_directions_x2_peer"]
    assert peer["groups"] == ["h0", "h1", "p0", "p1"]
    b = bar(peer, "shuffle", "tree", "p1")
    assert (b["into the GPU (HtoD / peer rx)"], b["out of the GPU (DtoH / peer tx)"]) == (
        2 * MiB, MiB)
    assert "DtoH staged for another GPU" not in m["figures"]["gpu_traffic_x2_peer"]["layers"]
    for name in ("gpu_traffic_x2-nopeer", "link_directions_x2_peer", "page_faults_x2_peer"):
        assert (tmp_path / "rep" / (name + ".png")).read_bytes()[1:4] == b"PNG"


def test_timeline_of_an_events_csv(tmp_path):
    ev = tmp_path / "e.csv"
    ev.write_text(
        "time_ns,event,batch,va,bytes,direction,cause,pages,duration_ns\n"
        "0.000,zero_fill,0,0x1000,8192,,,2,0\n"
        "10.000,migration,0,0x3000,4096,htod,demand,1,5.000\n"
        "12.000,migration,0,0x4000,61440,htod,prefetch,15,9.000\n"
        "20.000,batch,0,0x0,65536,,,3,20.000\n"
        "49.000,migration,-1,0x3000,65536,dtoh,eviction,16,30.000\n"
        "50.000,eviction,-1,0x0,65536,dtoh,eviction,18,0.000\n"
        "90.000,batch,1,0x0,0,,,5,10.000\n")
    m = report(ev, tmp_path / "t")
    t = m["figures"]["timeline"]
    assert t["fault_entries"] == 8
    assert t["htod_mib_by_cause"] == {"demand": 4096 / 2**20, "prefetch": 61440 / 2**20}
    assert t["evictions"] == 1
    assert t["dtoh_mib"] == 65536 / 2**20  # the copy-back once, not again for the eviction row
    assert t["max_resident_mib"] == pytest.approx(18 * 4096 / 2**20)
    assert t["final_resident_mib"] == 0
    cdf = m["figures"]["batch_time_cdf"]
    assert (cdf["batches"], cdf["min_us"], cdf["max_us"]) == (2, 0.01, 0.02)
    for name in ("timeline", "batch_time_cdf"):
        assert (tmp_path / "t" / (name + ".png")).read_bytes()[1:4] == b"PNG"


def test_bad_events_csv_is_a_one_line_error(tmp_path):
    ev = tmp_path / "e.csv"
    ev.write_text("time_ns,event\n1,batch\n")
    p = subprocess.run([sys.executable, str(SCRIPT), str(ev), str(tmp_path / "t")],
                       capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stderr.startswith("uvmsim report: error: %s: not a uvmsim events CSV" % ev)
    ev.write_text("time_ns,event,batch,va,bytes,direction,cause,pages,duration_ns\n"
                  "x,batch,0,0x0,0,,,1,1\n")
    p = subprocess.run([sys.executable, str(SCRIPT), str(ev), str(tmp_path / "t")],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "%s:2: malformed row" % ev in p.stderr


def test_a_real_sweep_with_seeds_input_seeds_and_a_placement_scheme(cli, binary, tmp_path):
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps({
        "name": "seeds",
        "workloads": [{"name": "random", "generator": "random", "footprint": "6M",
                       "params": {"init": "cpu"}}],
        "policies": [{"name": "uvm", "preset": "uvm"}, {"name": "rand", "eviction": "random"},
                     {"name": "host", "placement": "host"}],
        "oversub": [0, 50], "seeds": [1, 2], "input_seeds": [7, 8]}))
    p = subprocess.run([binary, "sweep", str(spec), "--out", str(tmp_path / "o"), "--jobs", "1",
                        "--progress", "none"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # uvm and host draw no random numbers: their seed points repeat one run, and the sweep says so.
    assert re.search(r"note: \d+ group\(s\) of points gave identical statistics for all 2 "
                     r"seeds \(the policy draws no random numbers\), e.g. 'random policy=uvm "
                     r"oversub=0 input_seed=7'", p.stderr), p.stderr
    header = (tmp_path / "o" / "results.csv").read_text().splitlines()[0].split(",")
    assert header[header.index("oversub") + 1:header.index("oversub") + 3] == ["seed",
                                                                               "input_seed"]
    out = cli("report", tmp_path / "o")
    assert "figures.json" in out
    m = json.loads((tmp_path / "o" / "report" / "figures.json").read_text())
    assert m["seed_axes"] == ["seed", "input_seed"]
    assert m["placement_series"] == ["host"]
    bars = [b for p in m["figures"]["page_faults"]["panels"] for b in p["bars"]]
    assert {b["n"] for b in bars} == {4}  # 2 seeds x 2 input seeds per bar
    # The two inputs differ (in access order, not in the pages touched: same fault counts), so
    # even the deterministic driver policy has a spread in runtime.
    uvm = [x for x in m["figures"]["runtime_vs_oversub"]["lines"] if x["series"] == "uvm"][0]
    assert all(lo < hi for lo, hi in zip(uvm["min"], uvm["max"]))
    layers = m["figures"]["link_traffic"]["layers"]
    assert "remote (zero-copy) read" in layers
    panel50 = [p for p in m["figures"]["page_faults"]["panels"] if p["level"] == "50"][0]
    assert panel50["achieved"] == [50.0, 50.0]  # 3 chunks -> 2: exactly 50 %


def test_report_of_a_runs_events_csv(cli, binary, tmp_path):
    t = tmp_path / "t.uvt"
    cli("gen", "random", "--footprint", "6M", "-o", t)
    cli("run", "--gpu", "gtx1080ti", "--trace", t, "--oversub", "50", "--events-out",
        tmp_path / "e.csv", "--stats-out", tmp_path / "s.json", "-q")
    cli("report", tmp_path / "e.csv")
    m = json.loads((tmp_path / "e-report" / "figures.json").read_text())
    stats = json.loads((tmp_path / "s.json").read_text())
    tl = m["figures"]["timeline"]
    assert tl["evictions"] == stats["evictions"]
    assert sum(tl["htod_mib_by_cause"].values()) * 2**20 == pytest.approx(stats["htod_bytes"])
    assert tl["dtoh_mib"] * 2**20 == pytest.approx(stats["dtoh_bytes"])
    # Pages in minus pages out never drops below zero and ends at most at the GPU's capacity.
    # At the end every copy has started: pages in minus pages out is what stays resident.
    assert 0 <= tl["final_resident_mib"] <= stats["memory"]["capacity_bytes"] / 2**20
    assert m["figures"]["batch_time_cdf"]["batches"] == stats["fault_batches"]
