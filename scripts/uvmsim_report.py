#!/usr/bin/env python3
"""Paper-style figures and an index.html from a sweep's results (called by `uvmsim report`).

    uvmsim_report.py SWEEP_DIR OUT_DIR

Reads SWEEP_DIR/results.csv and SWEEP_DIR/sweep.json (written by `uvmsim sweep`) and writes, as
PNG and SVG, into OUT_DIR:
  normalized_runtime   runtime vs the baseline policy per workload, grouped bars + geomean
  page_faults          GPU page faults per workload and policy
  evictions            evicted 2 MB chunks (oversubscribed levels only)
  link_traffic         bytes over the host link by cause (HtoD and DtoH), stacked
  gpu_traffic          (several GPUs) each GPU's host-link bytes: HtoD, DtoH, staged, zero-copy
  link_directions      (several GPUs) each host link (and peer link) in both directions
  runtime_vs_oversub   runtime against oversubscription, one line per policy
  prefetch_use         prefetched pages useful / useless / unresolved at the end, per policy
plus index.html showing them and figures.json, a machine-readable account of what each figure
drew (values, spreads over seeds, achieved oversubscription, styles) that the tests inspect.
Points that differ only in a seed axis (`seed`, `input_seed`) are aggregated: bars show the mean
with min-max whiskers, lines a min-max band. Panels and axes give the *achieved*
oversubscription (memory is whole 2 MB chunks), series that are placement schemes (static hints)
are hatched / dashed, and the palette is colour-blind safe (Paul Tol's "muted", then hatches and
dash patterns beyond its 9 colours).

    uvmsim_report.py EVENTS.csv OUT_DIR

With the events CSV of `uvmsim run --events-out` instead, draws the run's timeline (faults,
migrations by cause, evictions and GPU-resident memory over simulated time) and the CDF of
fault-batch service time (timeline.png, batch_time_cdf.png). Uses only the standard library, numpy and matplotlib
(Debian: python3-matplotlib). See docs/sweeps.md, "Reports".

    uvmsim_report.py MRC.csv OUT_DIR

With the capacity-curve CSV of `uvmsim analyze --mrc -o MRC.csv` instead, draws LRU chunk
misses and evictions, and the bytes migrated each way, against GPU memory (top axis: the
oversubscription), marking the suggested levels (mrc.png / mrc.svg, index.html; docs/mrc.md).

    uvmsim_report.py VALIDATION.json OUT_DIR

With the JSON output of `uvmsim validate --json` instead of a sweep directory, draws simulated vs
measured scatter plots (all sources on one log-log plot, then one per source) with the y = x line
and a factor-of-two band, plus index.html (docs/validation.md).
"""

import csv
import html
import json
import math
import os
import sys
import textwrap
from collections import OrderedDict, defaultdict

import matplotlib
import numpy

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

# Axes that are not "policies": bars are grouped by workload, panels are per oversubscription
# level (and per GPU), seeds are averaged. Every other varying axis distinguishes series.
NON_SERIES = {"workload", "gpu", "oversub", "seed", "input_seed"}
SEED_AXES = ("seed", "input_seed")
# Paul Tol's "muted" qualitative scheme: distinguishable under the common colour-vision
# deficiencies. Beyond 9 series the colours repeat with a hatch (bars) / dash pattern (lines).
PALETTE = ["#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255",
           "#AA4499"]
CYCLE_HATCHES = ["", "..", "xx", "oo"]
CYCLE_DASHES = ["-", "-.", (0, (1, 1)), (0, (5, 1, 1, 1, 1, 1))]
# Placement schemes (static hints) against eviction / prefetch policies: hatched bars, dashed
# lines, hollow markers, and "[placement]" in the legend.
PLACEMENT_HATCH = "///"
# Every cause of docs/stats.md (they sum to htod_bytes / dtoh_bytes); causes that are zero in the
# whole sweep are left out of the figure.
HTOD_CAUSES = ["demand", "prefetch", "region_prefetch", "user_prefetch", "access_counter",
               "observation", "placement"]
DTOH_CAUSES = ["eviction", "cpu_fault", "user_prefetch", "observation", "placement",
               "peer_staged"]
# Zero-copy traffic: GPU accesses served over the link without migrating (remote mappings).
REMOTE_KINDS = ["read", "write"]
PREFETCH_CAUSES = ["prefetch", "region_prefetch", "user_prefetch", "placement"]
# Per-GPU columns of a run on several GPUs (results.csv, `gpu<N>.` + the stats' "gpus" entry,
# docs/stats.md): each GPU's host link, both ways, and what of it was staged for another GPU or
# zero-copy.
GPU_HTOD = "host_link.htod_bytes"
GPU_DTOH = "host_link.dtoh_bytes"
GPU_STAGED = "host_link.peer_staged_bytes"
GPU_REMOTE = "host_link.remote_bytes"
# Peer links (a node with peer access): the bytes GPU N sent to other GPUs over its peer links
# (tx) and received from them (rx). THE HOOK for peer-link columns: the first pair whose columns
# the table has is drawn, in the per-GPU and the per-link figures; a pair added here is drawn
# with no other change.
PEER_LINK_COLUMNS = [("peer_link.copy_out_bytes", "peer_link.copy_in_bytes")]
# A GPU's remote (zero-copy) accesses to other GPUs' memory: a layer of the per-GPU figure, not
# of the per-link one (its reads come in, its writes go out; the column does not split them).
PEER_REMOTE = "peer_link.remote_bytes"
# An explosion of the value range switches an axis to log scale.
LOG_RATIO = 30.0


def die(msg):
    print("uvmsim report: error: " + msg, file=sys.stderr)
    sys.exit(1)


def num(s):
    if s is None or s == "":
        return None
    try:
        v = float(s)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def geomean(vals):
    vals = [v for v in vals if v is not None and v > 0]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def mean(vals):
    vals = [v for v in vals if v is not None]
    return sum(vals) / len(vals) if vals else None


def oversub_label(v):
    if v in (None, "", "none"):
        return "preset memory"
    f = float(v)
    return "%g %% oversubscription" % f


def oversub_key(v):
    return -1.0 if v in (None, "", "none") else float(v)


def human_bytes(v, _pos=None):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(v) >= scale:
            return "%g %s" % (round(v / scale, 2), unit)
    return "%g B" % v


def human_count(v, _pos=None):
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= scale:
            return "%g%s" % (round(v / scale, 2), unit)
    return "%g" % v


class Sweep:
    def __init__(self, sweep_dir):
        csv_path = os.path.join(sweep_dir, "results.csv")
        meta_path = os.path.join(sweep_dir, "sweep.json")
        if not os.path.exists(csv_path):
            die(csv_path + ": not found (run `uvmsim sweep SPEC --out " + sweep_dir + "` first)")
        self.meta = {}
        if os.path.exists(meta_path):
            with open(meta_path) as f:
                self.meta = json.load(f)
        with open(csv_path, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames is None or "status" not in reader.fieldnames:
                die(csv_path + ": not a uvmsim results table (no 'status' column)")
            self.rows = list(reader)
            self.fields = list(reader.fieldnames)
        self.ok = [r for r in self.rows if r["status"] == "ok"]
        if not self.ok:
            die(csv_path + ": no finished points to plot")
        axes = self.meta.get("axes") or [
            a for a in ("workload", "gpu", "policy", "eviction", "prefetch", "placement", "oversub", "seed")
            if a in reader.fieldnames]
        # The spec's own varying axes: eviction / prefetch / placement that only change because a
        # "policies" entry or preset chose them are not separate series dimensions.
        declared = self.meta.get("varying")
        self.varying = [a for a in axes if len({r.get(a, "") for r in self.ok}) > 1 and
                        (declared is None or a in declared)]
        self.series_axes = [a for a in self.varying if a not in NON_SERIES]
        self.name = self.meta.get("name", os.path.basename(os.path.abspath(sweep_dir)))
        self.baseline = self.meta.get("baseline_text", "")
        self.workloads = list(OrderedDict.fromkeys(r["workload"] for r in self.ok))
        self.gpus = list(OrderedDict.fromkeys(r.get("gpu", "") for r in self.ok))
        self.levels = sorted(OrderedDict.fromkeys(r.get("oversub", "") for r in self.ok), key=oversub_key)
        series = list(OrderedDict.fromkeys(self.series_name(r) for r in self.ok))
        # A series is a placement scheme when its points use a placement other than the
        # driver's (static hints); they are listed after the eviction / prefetch policies.
        self.placement_series = {s for s in series if any(
            r.get("placement", "driver") not in ("", "driver") for r in self.ok
            if self.series_name(r) == s)}
        self.series = ([s for s in series if s not in self.placement_series] +
                       [s for s in series if s in self.placement_series])
        self.seed_axes = [a for a in SEED_AXES if a in self.varying]
        # Rows by (gpu, level, workload, series): the figures look cells up thousands of times.
        self.cells = defaultdict(list)
        for r in self.ok:
            self.cells[(r.get("gpu", ""), r.get("oversub", ""), r["workload"], self.series_name(r))].append(r)

    def series_name(self, r):
        if not self.series_axes:
            return r.get("policy") or "%s/%s/%s" % (r.get("eviction"), r.get("prefetch"), r.get("placement"))
        return " / ".join(r.get(a, "") for a in self.series_axes)

    def series_title(self):
        """Legend title naming what the series values are ("prefetch / prefetch_threshold")."""
        return " / ".join(a.split(".")[-1] for a in self.series_axes) or "policy"

    def select(self, gpu=None, level=None, workload=None, series=None):
        if None not in (gpu, level, workload, series):
            return self.cells.get((gpu, level, workload, series), [])
        out = []
        for r in self.ok:
            if gpu is not None and r.get("gpu", "") != gpu:
                continue
            if level is not None and r.get("oversub", "") != level:
                continue
            if workload is not None and r["workload"] != workload:
                continue
            if series is not None and self.series_name(r) != series:
                continue
            out.append(r)
        return out

    def value(self, column, agg=mean, **where):
        return agg([num(r.get(column)) for r in self.select(**where)])

    def spread(self, column, agg=mean, **where):
        """(aggregate, min, max, n) of a cell's values over seeds; (None, None, None, 0) if
        empty."""
        vals = [v for v in (num(r.get(column)) for r in self.select(**where)) if v is not None]
        if not vals:
            return None, None, None, 0
        return agg(vals), min(vals), max(vals), len(vals)

    def achieved(self, **where):
        """(min, max) achieved oversubscription (%) of the selected points, or None."""
        vals = [v for v in (num(r.get("memory.oversubscription_pct")) for r in self.select(**where))
                if v is not None]
        return (min(vals), max(vals)) if vals else None

    def level_title(self, level, **where):
        """Panel title: the requested level and, when the 2 MB rounding moved it, what the
        points actually ran at."""
        t = oversub_label(level)
        a = self.achieved(level=level, **where)
        if a is None or level in (None, "", "none"):
            return t
        rng = "%.1f %%" % a[0] if abs(a[1] - a[0]) < 0.05 else "%.1f-%.1f %%" % a
        return t + "\n(achieved %s)" % rng

    def style(self, s):
        """(colour, hatch, line style, hollow marker) of series `s`."""
        i = self.series.index(s)
        colour = PALETTE[i % len(PALETTE)]
        cycle = (i // len(PALETTE)) % len(CYCLE_HATCHES)
        if s in self.placement_series:
            return colour, PLACEMENT_HATCH + CYCLE_HATCHES[cycle], "--", True
        return colour, CYCLE_HATCHES[cycle], CYCLE_DASHES[cycle], False

    def label(self, s):
        return s + ("  [placement]" if s in self.placement_series else "")

    def seed_note(self):
        if not self.seed_axes:
            return ""
        n = max((len(v) for v in self.cells.values()), default=1)
        return (" Each value aggregates %d points differing in %s; whiskers / bands span their "
                "minimum to maximum." % (n, " and ".join(self.seed_axes)))


def colors(n):
    return [PALETTE[i % len(PALETTE)] for i in range(n)]


def use_log(values):
    vals = [v for v in values if v is not None and v > 0]
    return len(vals) > 1 and max(vals) / min(vals) > LOG_RATIO


def plain(v, _pos=None):
    return "%g" % v


def set_log(ax, values, formatter=None):
    """Log scale spanning `values`, ticks at 1, 2 and 5 per decade, labelled in plain numbers."""
    vals = [v for v in values if v is not None and v > 0]
    ax.set_yscale("log")
    ax.set_ylim(min(vals) / 1.6, max(vals) * 1.6)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(formatter or plain))
    ax.yaxis.set_minor_formatter(NullFormatter())


def save(fig, out_dir, name, written):
    for ext in ("png", "svg"):
        path = os.path.join(out_dir, "%s.%s" % (name, ext))
        fig.savefig(path, dpi=130 if ext == "png" else None, bbox_inches="tight")
        written.append(path)
    plt.close(fig)


def grid(n, panel_width=4.5, max_width=17.0):
    """Rows and columns for n panels, keeping the figure within about max_width inches."""
    cols = max(1, min(n, 4, int(max_width // panel_width)))
    return (n + cols - 1) // cols, cols


def mark_zeros(ax, xs, ys, log):
    """A log axis cannot draw 0: write "0" at the bottom of the panel where a value is 0."""
    n = 0
    for x, y in zip(xs, ys):
        if y is not None and y <= 0 and log:
            ax.annotate("0", (x, 0), xycoords=("data", "axes fraction"), ha="center",
                        va="bottom", fontsize=7, color="black", xytext=(0, 2),
                        textcoords="offset points")
            n += 1
    return n


def grouped_bars(sw, gpu, column, ylabel, title, agg, levels, with_geomean, ref_line=None,
                 formatter=None, info=None):
    """One panel per oversubscription level; groups = workloads (+ geomean), bars = series.
    Bars are the aggregate over seeds with min-max whiskers when a cell holds several points."""
    groups = sw.workloads + (["geomean"] if with_geomean and len(sw.workloads) > 1 else [])
    width_per_panel = max(4.5, 0.9 + 0.2 * len(groups) * max(1, len(sw.series)))
    rows, cols = grid(len(levels), width_per_panel)
    fig, axs = plt.subplots(rows, cols, figsize=(width_per_panel * cols, 3.6 * rows), squeeze=False,
                            sharey=True)
    bar_w = 0.8 / max(1, len(sw.series))
    all_vals = []
    drawn = []  # (ax, xs, ys) for the zero marks once the scale is known
    panels = []
    for li, level in enumerate(levels):
        ax = axs[li // cols][li % cols]
        bars = []
        for si, s in enumerate(sw.series):
            colour, hatch, _, _ = sw.style(s)
            ys, los, his, ns = [], [], [], []
            for w in sw.workloads:
                v, lo, hi, n = sw.spread(column, agg=agg, gpu=gpu, level=level, workload=w, series=s)
                ys.append(v), los.append(lo), his.append(hi), ns.append(n)
            if len(groups) > len(sw.workloads):
                ys.append(geomean(ys))
                los.append(None), his.append(None), ns.append(0)
            all_vals.extend(ys)
            all_vals.extend(v for v in los + his if v is not None)
            xs = [g + (si - (len(sw.series) - 1) / 2) * bar_w for g in range(len(groups))]
            ax.bar([x for x, y in zip(xs, ys) if y is not None], [y for y in ys if y is not None],
                   width=bar_w, color=colour, hatch=hatch or None, label=sw.label(s),
                   edgecolor="black", linewidth=0.3)
            # Whiskers over seeds: min to max of the points the bar aggregates.
            ex = [(x, y, lo, hi) for x, y, lo, hi, n in zip(xs, ys, los, his, ns)
                  if y is not None and n > 1]
            if ex:
                ax.errorbar([e[0] for e in ex], [e[1] for e in ex],
                            yerr=[[max(0.0, e[1] - e[2]) for e in ex],
                                  [max(0.0, e[3] - e[1]) for e in ex]],
                            fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
            drawn.append((ax, xs, ys))
            for g, (y, lo, hi, n) in enumerate(zip(ys, los, his, ns)):
                bars.append({"group": groups[g], "series": s, "value": y, "min": lo, "max": hi,
                             "n": n})
            if len(groups) > len(sw.workloads) and ys[-1] is not None:
                # The geomean bars carry their value: it is the number a paper quotes.
                ax.annotate("%.2f" % ys[-1], (xs[-1], ys[-1]), ha="center", va="bottom",
                            fontsize=7, rotation=90 if len(sw.series) > 3 else 0,
                            xytext=(0, 2), textcoords="offset points")
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups, rotation=20 if len(groups) > 4 else 0, ha="right" if len(groups) > 4 else "center")
        if len(groups) > len(sw.workloads):
            ax.axvline(len(sw.workloads) - 0.5, color="grey", linewidth=0.8, linestyle=":")
        ptitle = sw.level_title(level, gpu=gpu)
        ax.set_title(ptitle, fontsize=10)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", linestyle=":", linewidth=0.5)
        ax.set_axisbelow(True)
        if ref_line is not None:
            ax.axhline(ref_line, color="black", linewidth=0.8)
        if formatter:
            ax.yaxis.set_major_formatter(FuncFormatter(formatter))
        panels.append({"level": level, "title": ptitle, "achieved": sw.achieved(level=level, gpu=gpu),
                       "bars": bars})
    log = use_log(all_vals)
    zeros = 0
    for ax, xs, ys in drawn:
        zeros += mark_zeros(ax, xs, ys, log)
    for li in range(len(levels)):
        ax = axs[li // cols][li % cols]
        ax.yaxis.set_tick_params(labelleft=True)
        if log:
            set_log(ax, all_vals, formatter)
        elif ref_line is None:
            ax.set_ylim(bottom=0)
    for li in range(len(levels), rows * cols):
        axs[li // cols][li % cols].axis("off")
    handles, labels = axs[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, title=sw.series_title(), loc="upper center",
               ncol=min(len(labels), 4), bbox_to_anchor=(0.5, 1.0 + 0.06 * math.ceil(len(labels) / 4) / rows),
               frameon=False)
    fig.suptitle(title + ("" if not log else "  (log scale)"), y=1.0 + 0.06 * (1 + math.ceil(len(labels) / 4)) / rows)
    fig.tight_layout()
    if info is not None:
        info.update({"kind": "bars", "column": column, "log": log, "zero_marks": zeros,
                     "series": [series_info(sw, s) for s in sw.series], "panels": panels})
    return fig


def series_info(sw, s):
    colour, hatch, dash, hollow = sw.style(s)
    return {"name": s, "label": sw.label(s), "colour": colour, "hatch": hatch,
            "dash": dash if isinstance(dash, str) else str(dash), "placement": s in sw.placement_series}


def fig_link_traffic(sw, gpu, info=None):
    """Rows = workloads, columns = oversubscription levels, bars = series, stacked by cause:
    copies (HtoD, DtoH) and zero-copy accesses over remote mappings (remote read / write)."""
    causes = ([("htod", c, "htod_bytes_by_cause." + c) for c in HTOD_CAUSES] +
              [("dtoh", c, "dtoh_bytes_by_cause." + c) for c in DTOH_CAUSES] +
              [("remote", k, "remote_bytes_by_kind." + k) for k in REMOTE_KINDS])
    present = []
    for d, c, col in causes:
        if any((num(r.get(col)) or 0) > 0 for r in sw.select(gpu=gpu)):
            present.append((d, c, col))
    if not present:
        return None
    nr, nc = len(sw.workloads), len(sw.levels)
    fig, axs = plt.subplots(nr, nc, figsize=(max(2.6, 0.32 * len(sw.series) + 1.3) * nc, 2.9 * nr),
                            squeeze=False, sharey="row")
    cmaps = {"htod": plt.get_cmap("Blues"), "dtoh": plt.get_cmap("Oranges"),
             "remote": plt.get_cmap("Greys")}
    cause_color = {}
    for i, (d, c, _) in enumerate(present):
        idx = [x for x in present if x[0] == d].index((d, c, _))
        cause_color[(d, c)] = cmaps[d](0.45 + 0.5 * idx / max(1, len([x for x in present if x[0] == d]) - 1 or 1))
    layer_label = {"htod": "HtoD ", "dtoh": "DtoH ", "remote": "remote (zero-copy) "}
    totals = []
    for wi, w in enumerate(sw.workloads):
        for li, level in enumerate(sw.levels):
            ax = axs[wi][li]
            bottom = [0.0] * len(sw.series)
            for d, c, col in present:
                ys = [(sw.value(col, gpu=gpu, level=level, workload=w, series=s) or 0.0) / 2**20
                      for s in sw.series]
                ax.bar(range(len(sw.series)), ys, bottom=bottom, color=cause_color[(d, c)],
                       edgecolor="black", linewidth=0.3, hatch="xx" if d == "remote" else None,
                       label=layer_label[d] + c.replace("_", " "))
                bottom = [b + y for b, y in zip(bottom, ys)]
            # Whiskers on the stack: min-max over seeds of each point's total link bytes.
            for si, s in enumerate(sw.series):
                pts = sw.select(gpu=gpu, level=level, workload=w, series=s)
                tot = [sum(num(r.get(col)) or 0.0 for _, _, col in present) / 2**20 for r in pts]
                if len(tot) > 1:
                    ax.errorbar([si], [bottom[si]], yerr=[[max(0.0, bottom[si] - min(tot))],
                                                          [max(0.0, max(tot) - bottom[si])]],
                                fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
                totals.append({"workload": w, "level": level, "series": s, "mib": bottom[si],
                               "min": min(tot) if tot else None,
                               "max": max(tot) if tot else None, "n": len(tot)})
            ax.set_xticks(range(len(sw.series)))
            ax.set_xticklabels([sw.label(s) for s in sw.series], rotation=45, ha="right", fontsize=8)
            if wi == nr - 1 and li == 0:
                ax.set_xlabel(sw.series_title(), fontsize=8)
            ax.grid(axis="y", linestyle=":", linewidth=0.5)
            ax.set_axisbelow(True)
            if wi == 0:
                ax.set_title(sw.level_title(level, gpu=gpu), fontsize=10)
            if li == 0:
                ax.set_ylabel("%s\nMiB over the link" % w)
    handles, labels = axs[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=min(4, len(labels)), frameon=False,
               bbox_to_anchor=(0.5, 1.0 + 0.04 * math.ceil(len(labels) / 4) / max(1, nr)))
    if info is not None:
        info.update({"kind": "stacked", "layers": [layer_label[d] + c.replace("_", " ")
                                                   for d, c, _ in present], "totals": totals})
    kinds = ["HtoD copies: blue", "DtoH copies: orange"]
    if any(d == "remote" for d, _, _ in present):
        kinds.append("zero-copy remote accesses: grey, hatched")
    fig.suptitle("Host-link traffic by cause (%s)" % ", ".join(kinds),
                 y=1.0 + 0.04 * (1 + math.ceil(len(labels) / 4)) / max(1, nr) + 0.02)
    fig.tight_layout()
    return fig


def fig_runtime_vs_oversub(sw, gpu, normalized, info=None):
    """Runtime against the *achieved* oversubscription of each workload's points (memory is
    whole 2 MB chunks, so it differs from the requested levels); a band spans the seeds."""
    levels = [l for l in sw.levels if l not in ("", "none")]
    if len(levels) < 2:
        return None
    column = "runtime_vs_oversub0" if normalized else "sim_time_ns"
    n = len(sw.workloads)
    rows, cols = grid(n)
    fig, axs = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.4 * rows), squeeze=False)
    markers = "osD^v<>phX*"
    any_log = False
    lines = []
    for wi, w in enumerate(sw.workloads):
        ax = axs[wi // cols][wi % cols]
        panel = []
        for si, s in enumerate(sw.series):
            colour, _, dash, hollow = sw.style(s)
            xs, ys, los, his = [], [], [], []
            for level in levels:
                v, lo, hi, cnt = sw.spread(column, agg=geomean if normalized else mean, gpu=gpu,
                                           level=level, workload=w, series=s)
                a = sw.achieved(gpu=gpu, level=level, workload=w, series=s)
                if v is not None:
                    scale = 1.0 if normalized else 1e-6
                    xs.append((a[0] + a[1]) / 2 if a else float(level))
                    ys.append(v * scale)
                    los.append(lo * scale)
                    his.append(hi * scale)
            panel.extend(ys + los + his)
            ax.plot(xs, ys, marker=markers[si % len(markers)], color=colour, label=sw.label(s),
                    linewidth=1.4, markersize=4, linestyle=dash,
                    markerfacecolor="white" if hollow else colour)
            if any(h > l for l, h in zip(los, his)):
                ax.fill_between(xs, los, his, color=colour, alpha=0.2, linewidth=0)
            lines.append({"workload": w, "series": s, "x_achieved": xs, "y": ys, "min": los,
                          "max": his})
        ax.set_title(w, fontsize=10)
        ax.set_xlabel("achieved oversubscription (%)")
        ax.set_ylabel("runtime relative to 0 % (x)" if normalized else "simulated runtime (ms)")
        ax.grid(linestyle=":", linewidth=0.5)
        # Each workload has its own scale; a panel whose range explodes gets a log axis.
        if use_log(panel):
            set_log(ax, panel)
            any_log = True
        elif not normalized:
            ax.set_ylim(bottom=0)
    for wi in range(n, rows * cols):
        axs[wi // cols][wi % cols].axis("off")
    handles, labels = axs[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, title=sw.series_title(), loc="upper center",
               ncol=min(4, len(labels)), frameon=False,
               bbox_to_anchor=(0.5, 1.0 + 0.07 * math.ceil(len(labels) / 4) / rows))
    what = "Runtime relative to the same policy without oversubscription" if normalized else "Runtime vs oversubscription"
    fig.suptitle(what + (" (log scale where the range explodes)" if any_log else ""), y=1.0 + 0.07 * (1 + math.ceil(len(labels) / 4)) / rows)
    fig.tight_layout()
    if info is not None:
        info.update({"kind": "lines", "column": column, "x": "achieved oversubscription (%)",
                     "series": [series_info(sw, s) for s in sw.series], "lines": lines})
    return fig


def fig_prefetch_use(sw, gpu, info=None):
    """Rows = workloads, columns = levels, bars = series: prefetched pages (every mechanism)
    split into useful / useless / still unresolved at the end, with the accuracy on top."""
    outcomes = [("useful", "#117733"), ("useless", "#CC6677"), ("unresolved", "#DDDDDD")]
    cols_of = {o: ["prefetch_use.%s.%s" % (c, o) for c in PREFETCH_CAUSES] for o, _ in outcomes}

    def total(outcome, **where):
        vals = [sum(num(r.get(c)) or 0 for c in cols_of[outcome]) for r in sw.select(**where)]
        return mean(vals) if vals else None

    if not any(num(r.get(c)) for r in sw.select(gpu=gpu) for cs in cols_of.values() for c in cs):
        return None
    nr, nc = len(sw.workloads), len(sw.levels)
    fig, axs = plt.subplots(nr, nc, figsize=(max(2.6, 0.32 * len(sw.series) + 1.3) * nc, 2.9 * nr),
                            squeeze=False, sharey="row")
    cells = []
    row_top = [0.0] * nr
    for wi, w in enumerate(sw.workloads):
        for li, level in enumerate(sw.levels):
            ax = axs[wi][li]
            bottom = [0.0] * len(sw.series)
            got = {}
            for o, colour in outcomes:
                ys = [total(o, gpu=gpu, level=level, workload=w, series=s) or 0.0 for s in sw.series]
                got[o] = ys
                ax.bar(range(len(sw.series)), ys, bottom=bottom, color=colour, edgecolor="black",
                       linewidth=0.3, label=o)
                bottom = [b + y for b, y in zip(bottom, ys)]
            for si, s in enumerate(sw.series):
                res = got["useful"][si] + got["useless"][si]
                acc = got["useful"][si] / res if res else None
                if bottom[si] > 0:
                    ax.annotate("%.0f%%" % (100 * acc) if acc is not None else "n/a",
                                (si, bottom[si]), ha="center", va="bottom", fontsize=6,
                                xytext=(0, 1), textcoords="offset points")
                cells.append({"workload": w, "level": level, "series": s,
                              "useful": got["useful"][si], "useless": got["useless"][si],
                              "unresolved": got["unresolved"][si], "accuracy": acc})
            ax.set_xticks(range(len(sw.series)))
            ax.set_xticklabels([sw.label(s) for s in sw.series], rotation=45, ha="right", fontsize=8)
            ax.grid(axis="y", linestyle=":", linewidth=0.5)
            ax.set_axisbelow(True)
            ax.yaxis.set_major_formatter(FuncFormatter(human_count))
            row_top[wi] = max(row_top[wi], max(bottom + [1.0]))
            if wi == 0:
                ax.set_title(sw.level_title(level, gpu=gpu), fontsize=10)
            if li == 0:
                ax.set_ylabel("%s\nprefetched 4 KB pages" % w)
    for wi in range(nr):
        axs[wi][0].set_ylim(0, row_top[wi] * 1.15)  # room for the accuracy labels
    handles, labels = axs[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=3, frameon=False,
               bbox_to_anchor=(0.5, 1.0 + 0.04 / max(1, nr)))
    fig.suptitle("Prefetched pages by outcome (accuracy = useful / (useful + useless) on top)",
                 y=1.0 + 0.08 / max(1, nr) + 0.02)
    fig.tight_layout()
    if info is not None:
        info.update({"kind": "stacked", "layers": [o for o, _ in outcomes], "cells": cells})
    return fig


def node_gpus(sw, gpu):
    """The GPU ordinals with per-GPU columns (gpu<N>.host_link.*) in the points of preset `gpu`,
    in order; empty for one-GPU runs."""
    out = []
    for f in sw.fields:
        if f.startswith("gpu") and f.endswith("." + GPU_HTOD) and f[3:-len(GPU_HTOD) - 1].isdigit():
            g = int(f[3:-len(GPU_HTOD) - 1])
            if any(num(r.get(f)) is not None for r in sw.select(gpu=gpu)):
                out.append(g)
    return sorted(out)


def peer_link_columns(sw, g, gpu=None):
    """(tx, rx) columns of GPU g's peer-link bytes (PEER_LINK_COLUMNS, the hook), or None when
    the table has none (no peer access); with `gpu`, also None when no point of that preset
    has values in them (a node without peer access in a sweep that has one with it)."""
    for tx, rx in PEER_LINK_COLUMNS:
        tx, rx = "gpu%d.%s" % (g, tx), "gpu%d.%s" % (g, rx)
        if tx in sw.fields and rx in sw.fields:
            if gpu is not None and not any(num(r.get(tx)) is not None or num(r.get(rx)) is not None
                                           for r in sw.select(gpu=gpu)):
                return None
            return tx, rx
    return None


def per_gpu_panels(sw, gpu, groups, layers, ylabel, title, legend_note, info, mirrored=False):
    """Rows = workloads, columns = oversubscription levels; in each panel one cluster of bars
    per series, one bar per group (a GPU, or a link), stacked by layer. `layers` are (label,
    colour, hatch, sign, value(row, group) -> bytes or None); with `mirrored`, layers of sign -1
    are drawn below zero (traffic out of the GPU) and sign +1 above (into it)."""
    nr, nc = len(sw.workloads), len(sw.levels)
    ns, ng = len(sw.series), len(groups)
    slot = ng + 1  # a gap between the series' clusters
    width = max(3.0, 0.16 * ns * slot + 1.2)
    fig, axs = plt.subplots(nr, nc, figsize=(width * nc, 3.1 * nr), squeeze=False, sharey="row")
    bars = []
    for wi, w in enumerate(sw.workloads):
        row_lo, row_hi = 0.0, 0.0
        for li, level in enumerate(sw.levels):
            ax = axs[wi][li]
            xs = [si * slot + gi for si in range(ns) for gi in range(ng)]
            up, down = [0.0] * len(xs), [0.0] * len(xs)
            cells = [{} for _ in xs]
            for label, colour, hatch, sign, value in layers:
                ys = []
                for si, s in enumerate(sw.series):
                    pts = sw.select(gpu=gpu, level=level, workload=w, series=s)
                    for gi, grp in enumerate(groups):
                        v = mean([value(r, grp) for r in pts])
                        cells[si * ng + gi][label] = v
                        ys.append((v or 0.0) / 2**20)
                base = down if (mirrored and sign < 0) else up
                heights = [-y for y in ys] if (mirrored and sign < 0) else ys
                ax.bar(xs, heights, bottom=base, width=0.85, color=colour, hatch=hatch or None,
                       edgecolor="black", linewidth=0.3, label=label)
                for i, h in enumerate(heights):
                    base[i] += h
            row_lo, row_hi = min([row_lo] + down), max([row_hi] + up)
            for si, s in enumerate(sw.series):
                for gi, grp in enumerate(groups):
                    bars.append(dict({"workload": w, "level": level, "series": s,
                                      "group": grp[0]}, **cells[si * ng + gi]))
            short = max(len(g[0]) for g in groups) <= 2  # GPU numbers, link names
            ax.set_xticks(xs)
            ax.set_xticklabels([grp[0] for _ in sw.series for grp in groups], fontsize=6,
                               rotation=0 if short else 90)
            # The series name under its cluster.
            for si, s in enumerate(sw.series):
                ax.annotate(sw.label(s), (si * slot + (ng - 1) / 2, 0),
                            xycoords=("data", "axes fraction"), xytext=(0, -22 if short else -34),
                            textcoords="offset points", ha="right", va="top", fontsize=7,
                            rotation=30)
            if mirrored:
                ax.axhline(0, color="black", linewidth=0.6)
                ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: "%g" % abs(v)))
            ax.grid(axis="y", linestyle=":", linewidth=0.5)
            ax.set_axisbelow(True)
            if wi == 0:
                ax.set_title(sw.level_title(level, gpu=gpu), fontsize=10)
            if li == 0:
                ax.set_ylabel("%s\n%s" % (w, ylabel))
        if row_hi > row_lo:
            axs[wi][0].set_ylim(row_lo * 1.08, row_hi * 1.08)  # the row shares its y axis
    handles, labels = axs[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=min(4, len(labels)), frameon=False,
               bbox_to_anchor=(0.5, 1.0 + 0.04 * math.ceil(len(labels) / 4) / max(1, nr)))
    fig.suptitle(title + " (" + legend_note + ")",
                 y=1.0 + 0.04 * (1 + math.ceil(len(labels) / 4)) / max(1, nr) + 0.02)
    fig.tight_layout()
    info.update({"kind": "mirrored" if mirrored else "stacked", "groups": [g[0] for g in groups],
                 "layers": [l[0] for l in layers], "bars": bars})
    return fig


def fig_gpu_traffic(sw, gpu, info):
    """Per GPU of the node: its host link's bytes each way, split into the DtoH it staged for
    another GPU and the rest, its zero-copy bytes, and (with peer access) its peer-link bytes;
    rows = workloads, columns = levels, a cluster of GPUs per series."""
    gpus = node_gpus(sw, gpu)
    if len(gpus) < 2:
        return None

    def col(c):
        return lambda r, grp: num(r.get("gpu%d.%s" % (grp[1], c)))

    def dtoh_other(r, grp):
        d, staged = col(GPU_DTOH)(r, grp), col(GPU_STAGED)(r, grp)
        return None if d is None else d - (staged or 0.0)

    def peer(i):
        def get(r, grp):
            c = peer_link_columns(sw, grp[1])
            return num(r.get(c[i])) if c else None
        return get

    layers = [("HtoD (host to GPU)", "#4477AA", "", 1, col(GPU_HTOD)),
              ("DtoH (eviction, CPU access, ...)", "#EE8866", "", 1, dtoh_other),
              ("DtoH staged for another GPU", "#BB5566", "//", 1, col(GPU_STAGED)),
              ("zero-copy (remote) over the host link", "#BBBBBB", "xx", 1, col(GPU_REMOTE)),
              ("peer link out (tx)", "#228833", "", 1, peer(0)),
              ("peer link in (rx)", "#99DDAA", "", 1, peer(1)),
              ("remote accesses to peers' memory", "#99DDAA", "xx", 1, col(PEER_REMOTE))]
    groups = [(str(g), g) for g in gpus]
    rows = sw.select(gpu=gpu)
    layers = [l for l in layers if any((l[4](r, grp) or 0) > 0 for r in rows for grp in groups)]
    if not layers:
        return None
    return per_gpu_panels(sw, gpu, groups, layers, "MiB per GPU",
                          "Traffic per GPU", "bars: GPU 0, 1, ... of each policy", info)


def fig_link_directions(sw, gpu, info):
    """Per link, both directions: each GPU's host link (up: host to GPU, down: GPU to host) and,
    when the table has peer-link columns (PEER_LINK_COLUMNS), each GPU's peer link (up:
    received from other GPUs, down: sent to them)."""
    gpus = node_gpus(sw, gpu)
    if len(gpus) < 2:
        return None
    groups = [("h%d" % g, g, "host") for g in gpus]
    groups += [("p%d" % g, g, "peer") for g in gpus if peer_link_columns(sw, g, gpu)]

    def into(r, grp):
        if grp[2] == "host":
            return num(r.get("gpu%d.%s" % (grp[1], GPU_HTOD)))
        return num(r.get(peer_link_columns(sw, grp[1])[1]))

    def out_of(r, grp):
        if grp[2] == "host":
            return num(r.get("gpu%d.%s" % (grp[1], GPU_DTOH)))
        return num(r.get(peer_link_columns(sw, grp[1])[0]))

    layers = [("into the GPU (HtoD / peer rx)", "#4477AA", "", 1, into),
              ("out of the GPU (DtoH / peer tx)", "#EE8866", "", -1, out_of)]
    kinds = "h<N>: GPU N's host link"
    if len(groups) > len(gpus):
        kinds += ", p<N>: its peer links"
    return per_gpu_panels(sw, gpu, groups, layers, "MiB (up: in, down: out)",
                          "Traffic per link and direction", kinds, info, mirrored=True)


def summary_table(sw, gpu):
    """Geomean speedup over workloads per series and level."""
    out = ["<table><tr><th>policy</th>" + "".join("<th>%s</th>" % html.escape(oversub_label(l)) for l in sw.levels) + "</tr>"]
    for s in sw.series:
        cells = []
        for l in sw.levels:
            vals = [sw.value("speedup_vs_baseline", agg=geomean, gpu=gpu, level=l, workload=w, series=s)
                    for w in sw.workloads]
            g = geomean(vals)
            cells.append("<td>%s</td>" % ("%.3f" % g if g else "&ndash;"))
        out.append("<tr><td>%s</td>%s</tr>" % (html.escape(s), "".join(cells)))
    out.append("</table>")
    return "\n".join(out)


EVENT_COLUMNS = ["time_ns", "event", "batch", "va", "bytes", "direction", "cause", "pages",
                 "duration_ns"]


def read_events(path):
    """Rows of an events CSV (docs/stats.md) as dicts with numeric time/bytes/pages/duration."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != EVENT_COLUMNS:
                die("%s: not a uvmsim events CSV (header %s, expected %s)"
                    % (path, ",".join(reader.fieldnames or []), ",".join(EVENT_COLUMNS)))
            rows = []
            for line, r in enumerate(reader, start=2):
                try:
                    rows.append((float(r["time_ns"]), r["event"], r["direction"], r["cause"],
                                 int(r["bytes"]), int(r["pages"]), float(r["duration_ns"])))
                except (TypeError, ValueError):
                    die("%s:%d: malformed row" % (path, line))
    except OSError as e:
        die("%s: cannot read (%s)" % (path, e))
    except UnicodeDecodeError:
        die("%s: not a text file" % path)
    return rows


def timeline_report(path, out_dir, bins=200):
    """One run over simulated time: fault entries, HtoD migrations by cause, DtoH bytes,
    evictions and GPU-resident memory per time bin; and the CDF of fault-batch service time."""
    rows = read_events(path)
    if not rows:
        die("%s: no events (was the run empty?)" % path)
    os.makedirs(out_dir, exist_ok=True)
    plt.rcParams.update({"font.size": 9, "axes.titleweight": "bold", "svg.fonttype": "none"})
    t_end = max(r[0] + max(r[6], 0.0) for r in rows)
    width = max(t_end / bins, 1e-3)
    edges = [i * width for i in range(bins + 1)]
    centres = [(i + 0.5) * width / 1e6 for i in range(bins)]

    def binned(pred, value):
        out = [0.0] * bins
        for r in rows:
            if pred(r):
                out[min(bins - 1, int(r[0] / width))] += value(r)
        return out

    faults = binned(lambda r: r[1] == "batch", lambda r: r[5])
    causes = list(OrderedDict.fromkeys(r[3] for r in rows if r[1] == "migration" and r[2] == "htod"))
    htod = {c: binned(lambda r, c=c: r[1] == "migration" and r[2] == "htod" and r[3] == c,
                      lambda r: r[4] / 2**20) for c in causes}
    # An eviction's copy-back is logged as DtoH `migration` rows (cause eviction) and then one
    # `eviction` row: the bytes are counted from the migrations only.
    dtoh = binned(lambda r: r[1] == "migration" and r[2] == "dtoh", lambda r: r[4] / 2**20)
    evictions = binned(lambda r: r[1] == "eviction", lambda r: 1)
    # GPU-resident memory: pages arrive by HtoD migration or zero-fill, leave by eviction (its
    # `pages` are the GPU-resident pages, copied back or not) or by another DtoH migration.
    def resident_delta(r):
        if r[1] == "eviction":
            return -r[5] * 4096
        if r[1] == "migration" and r[2] == "dtoh":
            return 0 if r[3] == "eviction" else -r[5] * 4096
        return r[5] * 4096
    delta = binned(lambda r: r[1] in ("migration", "zero_fill", "eviction"), resident_delta)
    resident, acc = [], 0.0
    for d in delta:
        acc += d
        resident.append(acc / 2**20)
    fig, axs = plt.subplots(4, 1, figsize=(9, 8.5), sharex=True)
    axs[0].step(centres, faults, where="mid", color=PALETTE[0])
    axs[0].set_ylabel("fault entries\nper bin")
    bottom = [0.0] * bins
    for i, c in enumerate(causes):
        axs[1].bar(centres, htod[c], bottom=bottom, width=width / 1e6, color=PALETTE[i % 9],
                   label="HtoD " + c.replace("_", " "), linewidth=0)
        bottom = [b + y for b, y in zip(bottom, htod[c])]
    axs[1].step(centres, dtoh, where="mid", color="black", linewidth=0.8, label="DtoH (all)")
    axs[1].set_ylabel("MiB migrated\nper bin")
    axs[1].legend(fontsize=7, ncol=3, loc="upper right")
    axs[2].step(centres, evictions, where="mid", color=PALETTE[6])
    axs[2].set_ylabel("evicted chunks\nper bin")
    axs[3].plot(centres, resident, color=PALETTE[3])
    axs[3].set_ylabel("GPU-resident\nMiB (end of bin)")
    axs[3].set_xlabel("simulated time (ms); bin = %.3g us" % (width / 1e3))
    for ax in axs[:3]:
        ax.set_ylim(bottom=0)
    for ax in axs:
        ax.grid(linestyle=":", linewidth=0.5)
    if min(resident) < 0:
        # Copies are logged when their first byte moves, evictions when they start: a chunk
        # evicted before its incoming copies began would show as negative. The model no longer
        # does that (a copy-back waits for the block's copies in, VaBlock::copies_in_done; it
        # took random 24 MB at 50 % down to -2.1 MiB before), so this is a guard, not a caveat.
        axs[3].axhline(0, color="black", linewidth=0.6)
        axs[3].set_title("below 0: a chunk evicted before its incoming copies started "
                         "(copies are logged when their first byte moves)", fontsize=8)
    fig.suptitle("Timeline of %s" % os.path.basename(path))
    fig.tight_layout()
    written = []
    save(fig, out_dir, "timeline", written)
    times = sorted(r[6] / 1e3 for r in rows if r[1] == "batch")
    if times:
        fig, ax = plt.subplots(figsize=(6, 4))
        ys = [(i + 1) / len(times) for i in range(len(times))]
        ax.step(times, ys, where="post", color=PALETTE[0])
        ax.set_xscale("log" if times[0] > 0 and times[-1] / times[0] > LOG_RATIO else "linear")
        ax.set_xlabel("fault-batch service time (us)")
        ax.set_ylabel("fraction of batches")
        ax.set_ylim(0, 1.02)
        ax.grid(linestyle=":", linewidth=0.5)
        med = times[len(times) // 2]
        ax.set_title("CDF of %d fault batches (median %.1f us, max %.1f us)"
                     % (len(times), med, times[-1]))
        fig.tight_layout()
        save(fig, out_dir, "batch_time_cdf", written)
    manifest = {"format": MANIFEST_FORMAT, "source": os.path.abspath(path), "figures": {
        "timeline": {"bins": bins, "bin_ns": width, "fault_entries": sum(faults),
                     "htod_mib_by_cause": {c: sum(v) for c, v in htod.items()},
                     "dtoh_mib": sum(dtoh), "evictions": sum(evictions),
                     "min_resident_mib": min(resident), "max_resident_mib": max(resident),
                     "final_resident_mib": resident[-1]},
        "batch_time_cdf": {"batches": len(times), "min_us": times[0] if times else None,
                           "max_us": times[-1] if times else None}}}
    write_manifest(out_dir, manifest)
    page = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>uvmsim timeline</title></head><body>
<h1>Timeline of %s</h1>
<figure><img src="timeline.png" alt="timeline"><figcaption>Per time bin: fault-buffer entries
fetched by the driver, HtoD bytes by cause and DtoH bytes, evicted chunks, and GPU-resident
memory (pages in minus pages out; a copy counts when its first byte moves, an eviction when it
starts, so a value below 0 means a chunk was evicted before its incoming copies
started).</figcaption></figure>
<figure><img src="batch_time_cdf.png" alt="batch time CDF"><figcaption>CDF of fault-batch service
time (fetch to replay push).</figcaption></figure>
</body></html>
""" % html.escape(path)
    write_index(out_dir, page, written)


MANIFEST_FORMAT = "uvmsim-report/1"

MRC_COLUMNS = ["chunks", "gpu_bytes", "oversub_pct", "misses", "evictions", "htod_bytes",
               "dtoh_bytes", "suggested"]


def is_mrc_csv(path):
    try:
        with open(path, newline="") as f:
            return next(csv.reader(f), None) == MRC_COLUMNS
    except (OSError, UnicodeDecodeError):
        return False


def mrc_report(path, out_dir):
    """Capacity curves of `uvmsim analyze --mrc`: misses/evictions and migrated bytes against GPU
    memory, suggested levels marked."""
    rows = []
    with open(path, newline="") as f:
        for line, r in enumerate(csv.DictReader(f), start=2):
            try:
                rows.append({k: float(r[k]) for k in MRC_COLUMNS})
            except (TypeError, ValueError):
                die("%s:%d: malformed row" % (path, line))
    if not rows:
        die("%s: no rows" % path)
    os.makedirs(out_dir, exist_ok=True)
    plt.rcParams.update({"font.size": 9, "axes.titleweight": "bold", "svg.fonttype": "none"})
    mib = [r["gpu_bytes"] / 2**20 for r in rows]
    picks = [r for r in rows if r["suggested"]]
    fig, axs = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    axs[0].plot(mib, [r["misses"] for r in rows], color=PALETTE[0], label="chunk misses (allocations)")
    axs[0].plot(mib, [r["evictions"] for r in rows], color=PALETTE[6], linestyle="--",
                label="evictions")
    axs[0].set_ylabel("2 MB chunks")
    axs[1].plot(mib, [r["htod_bytes"] / 2**20 for r in rows], color=PALETTE[2], label="HtoD")
    axs[1].plot(mib, [r["dtoh_bytes"] / 2**20 for r in rows], color=PALETTE[7], linestyle="--",
                label="DtoH")
    axs[1].set_ylabel("MiB migrated")
    axs[1].set_xlabel("GPU memory (MiB)")
    # Curves span orders of magnitude (a cliff): log scale then, so that the sizes that fit stay
    # readable.
    for ax, values in ((axs[0], [r["misses"] for r in rows]),
                       (axs[1], [r["htod_bytes"] / 2**20 for r in rows])):
        if use_log(values):
            ax.set_yscale("symlog", linthresh=1)
        else:
            ax.set_ylim(bottom=0)
    for ax in axs:
        for p in picks:
            ax.axvline(p["gpu_bytes"] / 2**20, color="#888888", linestyle=":", linewidth=0.8)
        ax.grid(linestyle=":", linewidth=0.5)
        ax.legend(fontsize=8, loc="upper right")
    managed = rows[-1]["gpu_bytes"] * (1 + rows[-1]["oversub_pct"] / 100) / 2**20
    top = axs[0].secondary_xaxis(
        "top", functions=(lambda m: 100 * (managed / numpy.maximum(m, 1e-9) - 1),
                          lambda o: managed / (1 + numpy.asarray(o) / 100)))
    top.set_xlabel("oversubscription (%)")
    ticks = sorted(set(round(p["oversub_pct"], 1) for p in picks))
    if ticks:
        top.set_xticks(ticks)
        top.tick_params(labelsize=7, labelrotation=45)
    fig.suptitle("LRU capacity curves of %s" % os.path.basename(path))
    fig.tight_layout()
    written = []
    save(fig, out_dir, "mrc", written)
    write_manifest(out_dir, {"format": MANIFEST_FORMAT, "source": os.path.abspath(path), "figures": {
        "mrc": {"sizes": len(rows), "managed_mib": managed,
                "suggested_oversub_pct": [p["oversub_pct"] for p in picks],
                "max_misses": max(r["misses"] for r in rows),
                "min_misses": min(r["misses"] for r in rows)}}})
    page = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>uvmsim capacity curves</title></head><body>
<h1>LRU capacity curves of %s</h1>
<figure><img src="mrc.png" alt="capacity curves"><figcaption>Chunk misses and evictions (top) and
bytes migrated each way (bottom) for LRU eviction at 2 MB granularity against usable GPU memory,
from one pass of stack distances over the trace's idealised program order (docs/mrc.md gives
how far this is from the simulator). Dotted lines: the suggested oversubscription
levels.</figcaption></figure>
</body></html>
""" % html.escape(path)
    write_index(out_dir, page, written)


def write_index(out_dir, page, written):
    """Writes OUT_DIR/index.html atomically and lists every file written."""
    index = os.path.join(out_dir, "index.html")
    with open(index + ".tmp", "w") as f:
        f.write(page)
    os.replace(index + ".tmp", index)
    for w in written + [index]:
        print("wrote " + w)


def write_manifest(out_dir, manifest):
    path = os.path.join(out_dir, "figures.json")
    with open(path + ".tmp", "w") as f:
        json.dump(manifest, f, indent=1, allow_nan=False, default=str)
    os.replace(path + ".tmp", path)


VALIDATE_FORMAT = "uvmsim-validate/1"


def scatter(ax, points, title):
    """points: [(measured, simulated, label, colour)] on log-log axes with y = x and a 2x band."""
    vals = [v for p in points for v in p[:2]]
    lo, hi = min(vals) / 3, max(vals) * 3
    ax.fill_between([lo, hi], [lo / 2, hi / 2], [lo * 2, hi * 2], color="#eeeeee",
                    label="within a factor of 2")
    ax.plot([lo, hi], [lo, hi], color="#888888", linewidth=1, label="simulated = measured")
    seen = set()
    for m, sim, label, colour in points:
        ax.scatter([m], [sim], color=colour, s=22, zorder=3,
                   label=None if label in seen else label)
        seen.add(label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured on the real GPU (published)")
    ax.set_ylabel("simulated")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left")


def validation_report(path, out_dir):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        die("%s: cannot read validation results (%s)" % (path, e))
    if doc.get("format") != VALIDATE_FORMAT:
        die("%s: format: expected %s (the output of `uvmsim validate --json`)" % (path, VALIDATE_FORMAT))
    os.makedirs(out_dir, exist_ok=True)
    plt.rcParams.update({"font.size": 9, "axes.titleweight": "bold", "svg.fonttype": "none"})
    written, items = [], []
    sources = [s for s in doc["sources"] if any(r["simulated"] for r in s["rows"])]
    palette = colors(max(len(sources), 1))

    def compared(s):
        return [(r["measured"], r["simulated"], r) for r in s["rows"]
                if r["error"] is not None and r["simulated"] and r["simulated"] > 0]

    everything = []
    for i, s in enumerate(sources):
        everything += [(m, sim, s["source"], palette[i]) for m, sim, _ in compared(s)]
    if everything:
        fig, ax = plt.subplots(figsize=(6.5, 6))
        scatter(ax, everything, "Simulated vs measured, all sources (%s subset)" % doc["subset"])
        save(fig, out_dir, "validation_all", written)
        items.append(("validation_all", "Every compared row: x = published measurement, y = "
                      "simulation. Rows of different quantities share the axes; the grey band is "
                      "a factor of two."))
    for i, s in enumerate(sources):
        rows = compared(s)
        if not rows:
            continue
        metrics = sorted(set(r["metric"] for _, _, r in rows))
        mcol = dict(zip(metrics, colors(len(metrics))))
        fig, ax = plt.subplots(figsize=(6.5, 6))
        scatter(ax, [(m, sim, r["metric"], mcol[r["metric"]]) for m, sim, r in rows],
                s["source"] + " on " + s["preset"])
        name = "validation_" + "".join(c if c.isalnum() else "_" for c in s["source"])
        save(fig, out_dir, name, written)
        summ = s["summary"]
        gm = summ["geomean_error_factor"]
        items.append((name, "%s. %s. Geomean error factor %s over %d rows." % (
            html.escape(s["title"]), html.escape(s["citation"].get("where", "")),
            "x%.2f" % gm if gm else "n/a", summ["compared"])))
    figs = "\n".join('<figure id="%s"><a href="%s.svg"><img src="%s.png" alt="%s"></a>'
                     '<figcaption>%s (<a href="%s.svg">SVG</a>)</figcaption></figure>'
                     % (n, n, n, n, c, n) for n, c in items)
    page = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>uvmsim validation</title>
<style>body { font-family: sans-serif; margin: 2em; max-width: 1000px; }
figure { margin: 2em 0; } img { max-width: 100%%; border: 1px solid #ddd; }
figcaption { color: #444; font-size: 0.9em; }</style></head><body>
<h1>Simulated vs measured (%s subset)</h1>
<p>%d of %d rows compared; geomean error factor %s. Data: <a href="%s">%s</a>.</p>
%s
</body></html>
""" % (html.escape(doc["subset"]), doc["summary"]["compared"], doc["summary"]["rows"],
       "x%.2f" % doc["summary"]["geomean_error_factor"] if doc["summary"]["geomean_error_factor"] else "n/a",
       html.escape(os.path.relpath(path, out_dir)), html.escape(os.path.basename(path)), figs)
    index = os.path.join(out_dir, "index.html")
    with open(index + ".tmp", "w") as f:
        f.write(page)
    os.replace(index + ".tmp", index)
    for w in written:
        print("wrote " + w)


def gpu_suffixes(gpus):
    """File-name suffix of each GPU section's figures: "" for a single GPU, else "_" + the
    preset's name. A preset given as a JSON file (a path) is named by its file name without
    ".json", other characters than letters, digits, '.', '-' and '_' replaced; a name two
    presets share gets "-2", "-3", ..."""
    if len(gpus) == 1:
        return {gpus[0]: ""}
    out, used = {}, set()
    for gpu in gpus:
        base = os.path.basename(gpu)
        base = base[:-5] if base.endswith(".json") else base
        base = "".join(c if c.isalnum() or c in ".-_" else "_" for c in base) or "gpu"
        name, n = base, 1
        while name in used:
            n += 1
            name = "%s-%d" % (base, n)
        used.add(name)
        out[gpu] = "_" + name
    return out


def main():
    if len(sys.argv) != 3:
        die("usage: uvmsim_report.py SWEEP_DIR|VALIDATION.json OUT_DIR")
    if os.path.isfile(sys.argv[1]):
        if sys.argv[1].endswith(".csv") and is_mrc_csv(sys.argv[1]):
            mrc_report(sys.argv[1], sys.argv[2])
        elif sys.argv[1].endswith(".csv"):
            timeline_report(sys.argv[1], sys.argv[2])
        else:
            validation_report(sys.argv[1], sys.argv[2])
        return
    sweep_dir, out_dir = sys.argv[1], sys.argv[2]
    sw = Sweep(sweep_dir)
    os.makedirs(out_dir, exist_ok=True)
    plt.rcParams.update({"font.size": 9, "axes.titleweight": "bold", "svg.fonttype": "none"})
    written = []
    sections = []
    manifest = {"format": MANIFEST_FORMAT, "sweep": sw.name, "seed_axes": sw.seed_axes,
                "placement_series": sorted(sw.placement_series), "figures": {}}
    suffixes = gpu_suffixes(sw.gpus)
    for gpu in sw.gpus:
        suffix = suffixes[gpu]
        figs = []
        base = sw.baseline or "the baseline policy"
        infos = defaultdict(dict)
        if any(num(r.get("runtime_vs_baseline")) for r in sw.select(gpu=gpu)):
            figs.append(("normalized_runtime", grouped_bars(
                sw, gpu, "runtime_vs_baseline", "runtime / baseline runtime (x)",
                "Runtime normalized to %s (lower is better)" % base, geomean, sw.levels, True, ref_line=1.0,
                info=infos["normalized_runtime"]),
                "Simulated runtime of each policy divided by the runtime of the baseline (%s) on the same "
                "workload at the same oversubscription; the last group is the geometric mean over workloads." % html.escape(base)))
        figs.append(("page_faults", grouped_bars(
            sw, gpu, "gpu_faults", "GPU page faults (fault-buffer entries)", "GPU page faults", mean,
            sw.levels, False, formatter=human_count, info=infos["page_faults"]),
            "Fault-buffer entries written by the GMMU (replayed faults count again)."))
        over = [l for l in sw.levels if l not in ("", "none") and float(l) > 0]
        if over:
            figs.append(("evictions", grouped_bars(
                sw, gpu, "evictions", "evicted 2 MB chunks", "Evictions", mean, over, False,
                formatter=human_count, info=infos["evictions"]),
                "Root chunks (2 MB) evicted to make room, at the oversubscribed levels."))
        f = fig_link_traffic(sw, gpu, info=infos["link_traffic"])
        if f:
            figs.append(("link_traffic", f, "Bytes over the host link, by cause: host-to-device "
                         "demand and prefetch migrations, device-to-host eviction write-backs, and "
                         "zero-copy reads and writes of remotely mapped pages (not copies, but the "
                         "same link)."))
        f = fig_gpu_traffic(sw, gpu, infos["gpu_traffic"])
        if f:
            figs.append(("gpu_traffic", f, "Bytes over each GPU's host link, per GPU of the node "
                         "(a cluster of bars per policy: GPU 0, 1, ...): host to device, device to "
                         "host split into what the GPU staged for another GPU (a page another GPU "
                         "faulted on, copied out through host memory without peer access) and the "
                         "rest (evictions, CPU accesses), zero-copy accesses, and with peer access "
                         "the bytes each GPU sent and received over its peer links and its remote "
                         "accesses to other GPUs' memory."))
        f = fig_link_directions(sw, gpu, infos["link_directions"])
        if f:
            figs.append(("link_directions", f, "Each link's bytes in both directions: above zero "
                         "into the GPU, below zero out of it; h&lt;N&gt; is GPU N's host link and, "
                         "on a node with peer access, p&lt;N&gt; its peer links."))
        f = fig_runtime_vs_oversub(sw, gpu, False, info=infos["runtime_vs_oversub"])
        if f:
            figs.append(("runtime_vs_oversub", f, "Simulated runtime as the footprint exceeds GPU "
                         "memory, at each workload's achieved oversubscription."))
        f = fig_runtime_vs_oversub(sw, gpu, True, info=infos["runtime_vs_oversub_normalized"])
        if f:
            figs.append(("runtime_vs_oversub_normalized", f,
                         "Runtime divided by the same policy's runtime at 0 % oversubscription."))
        f = fig_prefetch_use(sw, gpu, info=infos["prefetch_use"])
        if f:
            figs.append(("prefetch_use", f, "Pages every prefetch mechanism brought to the GPU, by "
                         "outcome: accessed while resident (useful), evicted or migrated back "
                         "untouched (useless), neither by the end (unresolved)."))
        items = []
        note = sw.seed_note() + (" Hatched bars / dashed lines: placement schemes (static "
                                 "hints)." if sw.placement_series else "")
        for name, fig, caption in figs:
            caption += html.escape(note)
            manifest["figures"][name + suffix] = dict(infos.get(name, {}), caption=caption)
            if note:
                # The same words under the figure itself: a PNG or SVG copied into a paper keeps
                # what its whiskers and hatching mean.
                fig.text(0.5, 0.0, textwrap.fill(note.strip(), 140), ha="center", va="top",
                         fontsize=8, color="#444444")
                manifest["figures"][name + suffix]["footnote"] = note.strip()
            save(fig, out_dir, name + suffix, written)
            items.append('<figure id="%s"><a href="%s.svg"><img src="%s.png" alt="%s"></a>'
                         '<figcaption>%s (<a href="%s.svg">SVG</a>)</figcaption></figure>'
                         % (name + suffix, name + suffix, name + suffix, name, caption, name + suffix))
        sections.append("<h2>GPU %s</h2>\n<h3>Geomean speedup over the baseline</h3>\n%s\n%s"
                        % (html.escape(gpu), summary_table(sw, gpu), "\n".join(items)))
    csv_rel = os.path.relpath(os.path.join(sweep_dir, "results.csv"), out_dir)
    failed = [r for r in sw.rows if r["status"] != "ok"]
    page = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>uvmsim sweep %(name)s</title>
<style>
body { font-family: sans-serif; margin: 2em; max-width: 1400px; }
figure { margin: 2em 0; } img { max-width: 100%%; border: 1px solid #ddd; }
figcaption { color: #444; font-size: 0.9em; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
td:first-child { text-align: left; }
</style></head><body>
<h1>Sweep <code>%(name)s</code></h1>
<p>%(desc)s</p>
<p>%(n)d points (%(ok)d finished%(failed)s); series: %(series)s; baseline: %(base)s.
Data: <a href="%(csv)s">results.csv</a>.</p>
%(sections)s
</body></html>
""" % {
        "name": html.escape(sw.name),
        "desc": html.escape(sw.meta.get("description", "")),
        "n": len(sw.rows),
        "ok": len(sw.ok),
        "failed": ", %d not finished" % len(failed) if failed else "",
        "series": html.escape(", ".join(sw.series_axes) or "policy"),
        "base": html.escape(sw.baseline or "none"),
        "csv": html.escape(csv_rel),
        "sections": "\n".join(sections),
    }
    index = os.path.join(out_dir, "index.html")
    with open(index + ".tmp", "w") as f:
        f.write(page)
    os.replace(index + ".tmp", index)
    written.append(index)
    write_manifest(out_dir, manifest)
    written.append(os.path.join(out_dir, "figures.json"))
    for p in written:
        print("wrote " + p)


if __name__ == "__main__":
    main()
