#!/usr/bin/env python3
"""Paper-style figures and an index.html from a sweep's results (called by `uvmsim report`).

    uvmsim_report.py SWEEP_DIR OUT_DIR

Reads SWEEP_DIR/results.csv and SWEEP_DIR/sweep.json (written by `uvmsim sweep`) and writes, as
PNG and SVG, into OUT_DIR:
  normalized_runtime   runtime vs the baseline policy per workload, grouped bars + geomean
  page_faults          GPU page faults per workload and policy
  evictions            evicted 2 MB chunks (oversubscribed levels only)
  link_traffic         bytes over the host link by cause (HtoD and DtoH), stacked
  runtime_vs_oversub   runtime against oversubscription, one line per policy
plus index.html showing them. Uses only the standard library, numpy and matplotlib
(Debian: python3-matplotlib). See docs/sweeps.md, "Reports".

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
from collections import OrderedDict, defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

# Axes that are not "policies": bars are grouped by workload, panels are per oversubscription
# level (and per GPU), seeds are averaged. Every other varying axis distinguishes series.
NON_SERIES = {"workload", "gpu", "oversub", "seed"}
# Every cause of docs/stats.md (they sum to htod_bytes / dtoh_bytes); causes that are zero in the
# whole sweep are left out of the figure.
HTOD_CAUSES = ["demand", "prefetch", "region_prefetch", "user_prefetch", "access_counter",
               "observation", "placement"]
DTOH_CAUSES = ["eviction", "cpu_fault", "user_prefetch", "observation", "placement"]
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
        self.series = list(OrderedDict.fromkeys(self.series_name(r) for r in self.ok))
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


def colors(n):
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


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


def grouped_bars(sw, gpu, column, ylabel, title, agg, levels, with_geomean, ref_line=None,
                 formatter=None):
    """One panel per oversubscription level; groups = workloads (+ geomean), bars = series."""
    groups = sw.workloads + (["geomean"] if with_geomean and len(sw.workloads) > 1 else [])
    width_per_panel = max(4.5, 0.9 + 0.2 * len(groups) * max(1, len(sw.series)))
    rows, cols = grid(len(levels), width_per_panel)
    fig, axs = plt.subplots(rows, cols, figsize=(width_per_panel * cols, 3.6 * rows), squeeze=False,
                            sharey=True)
    pal = colors(len(sw.series))
    bar_w = 0.8 / max(1, len(sw.series))
    all_vals = []
    for li, level in enumerate(levels):
        ax = axs[li // cols][li % cols]
        for si, s in enumerate(sw.series):
            ys = []
            for w in sw.workloads:
                ys.append(sw.value(column, agg=agg, gpu=gpu, level=level, workload=w, series=s))
            if len(groups) > len(sw.workloads):
                ys.append(geomean(ys))
            all_vals.extend(ys)
            xs = [g + (si - (len(sw.series) - 1) / 2) * bar_w for g in range(len(groups))]
            ax.bar([x for x, y in zip(xs, ys) if y is not None], [y for y in ys if y is not None],
                   width=bar_w, color=pal[si], label=s, edgecolor="black", linewidth=0.3)
            if len(groups) > len(sw.workloads) and ys[-1] is not None:
                # The geomean bars carry their value: it is the number a paper quotes.
                ax.annotate("%.2f" % ys[-1], (xs[-1], ys[-1]), ha="center", va="bottom",
                            fontsize=7, rotation=90 if len(sw.series) > 3 else 0,
                            xytext=(0, 2), textcoords="offset points")
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups, rotation=20 if len(groups) > 4 else 0, ha="right" if len(groups) > 4 else "center")
        if len(groups) > len(sw.workloads):
            ax.axvline(len(sw.workloads) - 0.5, color="grey", linewidth=0.8, linestyle=":")
        ax.set_title(oversub_label(level), fontsize=10)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", linestyle=":", linewidth=0.5)
        ax.set_axisbelow(True)
        if ref_line is not None:
            ax.axhline(ref_line, color="black", linewidth=0.8)
        if formatter:
            ax.yaxis.set_major_formatter(FuncFormatter(formatter))
    log = use_log(all_vals)
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
    return fig


def fig_link_traffic(sw, gpu):
    """Rows = workloads, columns = oversubscription levels, bars = series, stacked by cause."""
    causes = [("htod", c) for c in HTOD_CAUSES] + [("dtoh", c) for c in DTOH_CAUSES]
    present = []
    for d, c in causes:
        col = "%s_bytes_by_cause.%s" % (d, c)
        if any((num(r.get(col)) or 0) > 0 for r in sw.select(gpu=gpu)):
            present.append((d, c, col))
    if not present:
        return None
    nr, nc = len(sw.workloads), len(sw.levels)
    fig, axs = plt.subplots(nr, nc, figsize=(max(2.6, 0.32 * len(sw.series) + 1.3) * nc, 2.9 * nr),
                            squeeze=False, sharey="row")
    htod_colors = plt.get_cmap("Blues")
    dtoh_colors = plt.get_cmap("Oranges")
    cause_color = {}
    for i, (d, c, _) in enumerate(present):
        idx = [x for x in present if x[0] == d].index((d, c, _))
        cmap = htod_colors if d == "htod" else dtoh_colors
        cause_color[(d, c)] = cmap(0.45 + 0.5 * idx / max(1, len([x for x in present if x[0] == d]) - 1 or 1))
    for wi, w in enumerate(sw.workloads):
        for li, level in enumerate(sw.levels):
            ax = axs[wi][li]
            bottom = [0.0] * len(sw.series)
            for d, c, col in present:
                ys = [(sw.value(col, gpu=gpu, level=level, workload=w, series=s) or 0.0) / 2**20
                      for s in sw.series]
                ax.bar(range(len(sw.series)), ys, bottom=bottom, color=cause_color[(d, c)],
                       edgecolor="black", linewidth=0.3,
                       label=("HtoD " if d == "htod" else "DtoH ") + c.replace("_", " "))
                bottom = [b + y for b, y in zip(bottom, ys)]
            ax.set_xticks(range(len(sw.series)))
            ax.set_xticklabels(sw.series, rotation=45, ha="right", fontsize=8)
            if wi == nr - 1 and li == 0:
                ax.set_xlabel(sw.series_title(), fontsize=8)
            ax.grid(axis="y", linestyle=":", linewidth=0.5)
            ax.set_axisbelow(True)
            if wi == 0:
                ax.set_title(oversub_label(level), fontsize=10)
            if li == 0:
                ax.set_ylabel("%s\nMiB over the link" % w)
    handles, labels = axs[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=min(4, len(labels)), frameon=False,
               bbox_to_anchor=(0.5, 1.0 + 0.04 * math.ceil(len(labels) / 4) / max(1, nr)))
    fig.suptitle("Host-link traffic by cause (HtoD: blue, DtoH: orange)",
                 y=1.0 + 0.04 * (1 + math.ceil(len(labels) / 4)) / max(1, nr) + 0.02)
    fig.tight_layout()
    return fig


def fig_runtime_vs_oversub(sw, gpu, normalized):
    levels = [l for l in sw.levels if l not in ("", "none")]
    if len(levels) < 2:
        return None
    column = "runtime_vs_oversub0" if normalized else "sim_time_ns"
    n = len(sw.workloads)
    rows, cols = grid(n)
    fig, axs = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.4 * rows), squeeze=False)
    pal = colors(len(sw.series))
    markers = "osD^v<>phX*"
    any_log = False
    for wi, w in enumerate(sw.workloads):
        ax = axs[wi // cols][wi % cols]
        panel = []
        for si, s in enumerate(sw.series):
            xs, ys = [], []
            for level in levels:
                v = sw.value(column, agg=geomean if normalized else mean, gpu=gpu, level=level,
                             workload=w, series=s)
                if v is not None:
                    xs.append(float(level))
                    ys.append(v if normalized else v / 1e6)
            panel.extend(ys)
            ax.plot(xs, ys, marker=markers[si % len(markers)], color=pal[si], label=s, linewidth=1.4,
                    markersize=4)
        ax.set_title(w, fontsize=10)
        ax.set_xlabel("oversubscription (%)")
        ax.set_ylabel("runtime relative to 0 % (x)" if normalized else "simulated runtime (ms)")
        ax.grid(linestyle=":", linewidth=0.5)
        ax.set_xticks([float(l) for l in levels])
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
    return fig


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


def main():
    if len(sys.argv) != 3:
        die("usage: uvmsim_report.py SWEEP_DIR|VALIDATION.json OUT_DIR")
    if os.path.isfile(sys.argv[1]):
        validation_report(sys.argv[1], sys.argv[2])
        return
    sweep_dir, out_dir = sys.argv[1], sys.argv[2]
    sw = Sweep(sweep_dir)
    os.makedirs(out_dir, exist_ok=True)
    plt.rcParams.update({"font.size": 9, "axes.titleweight": "bold", "svg.fonttype": "none"})
    written = []
    sections = []
    for gpu in sw.gpus:
        suffix = "" if len(sw.gpus) == 1 else "_" + gpu
        figs = []
        base = sw.baseline or "the baseline policy"
        if any(num(r.get("runtime_vs_baseline")) for r in sw.select(gpu=gpu)):
            figs.append(("normalized_runtime", grouped_bars(
                sw, gpu, "runtime_vs_baseline", "runtime / baseline runtime (x)",
                "Runtime normalized to %s (lower is better)" % base, geomean, sw.levels, True, ref_line=1.0),
                "Simulated runtime of each policy divided by the runtime of the baseline (%s) on the same "
                "workload at the same oversubscription; the last group is the geometric mean over workloads." % html.escape(base)))
        figs.append(("page_faults", grouped_bars(
            sw, gpu, "gpu_faults", "GPU page faults (fault-buffer entries)", "GPU page faults", mean,
            sw.levels, False, formatter=human_count),
            "Fault-buffer entries written by the GMMU (replayed faults count again)."))
        over = [l for l in sw.levels if l not in ("", "none") and float(l) > 0]
        if over:
            figs.append(("evictions", grouped_bars(
                sw, gpu, "evictions", "evicted 2 MB chunks", "Evictions", mean, over, False,
                formatter=human_count),
                "Root chunks (2 MB) evicted to make room, at the oversubscribed levels."))
        f = fig_link_traffic(sw, gpu)
        if f:
            figs.append(("link_traffic", f, "Bytes copied over the host link, by cause: host-to-device "
                         "demand and prefetch migrations, device-to-host eviction write-backs."))
        f = fig_runtime_vs_oversub(sw, gpu, False)
        if f:
            figs.append(("runtime_vs_oversub", f, "Simulated runtime as the footprint exceeds GPU memory."))
        f = fig_runtime_vs_oversub(sw, gpu, True)
        if f:
            figs.append(("runtime_vs_oversub_normalized", f,
                         "Runtime divided by the same policy's runtime at 0 % oversubscription."))
        items = []
        for name, fig, caption in figs:
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
    for p in written:
        print("wrote " + p)


if __name__ == "__main__":
    main()
