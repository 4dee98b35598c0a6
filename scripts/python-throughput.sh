#!/usr/bin/env bash
# Speed and memory of the Python module's trace reader and writer (docs/python.md, "Speed and
# memory"): for each trace, the best of REPEAT timed reads of every record (Trace.records), the
# best of REPEAT rewrites with TraceWriter (read + write), and the peak resident memory of a
# process that only reads the trace.
#   bash scripts/python-throughput.sh                # build/uvmsim, REPEAT=3
#   REPEAT=5 UVMSIM_BIN=/path/uvmsim bash scripts/python-throughput.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${UVMSIM_BIN:-build/uvmsim}
PY=${UVMSIM_PYTHON:-/usr/bin/python3}
REPEAT=${REPEAT:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$BIN" gen stream --footprint 64M -o "$work/stream-64M.uvt" >/dev/null
"$BIN" gen stream --footprint 512M -o "$work/stream-512M.uvt" >/dev/null
"$BIN" gen bfs --footprint 64M -o "$work/bfs-64M.uvt" >/dev/null
"$BIN" gen mvt --footprint 64M -o "$work/mvt-64M.uvt" >/dev/null

export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
printf '%-16s %10s %10s %14s %14s %12s\n' trace records "file MiB" "read Mrec/s" "rewrite Mrec/s" "read RSS MiB"
for t in stream-64M stream-512M bfs-64M mvt-64M; do
  f="$work/$t.uvt"
  "$PY" - "$f" "$REPEAT" <<'EOF'
import os, resource, subprocess, sys, time
import uvmsim

path, repeat = sys.argv[1], int(sys.argv[2])


def read_all():
    with uvmsim.Trace(path) as t:
        return sum(len(c) for l in t.launches for c in t.records(l.launch_index))


def rewrite():
    out = path + ".copy"
    with uvmsim.Trace(path) as r, uvmsim.TraceWriter(out, r.metadata) as w:
        for ev in r.host_events():
            if ev.type == uvmsim.HostEventType.KernelLaunch:
                w.begin_launch(ev.kernel_id, ev.iteration)
                for chunk in r.records(ev.launch_index):
                    w.write_blocks(chunk)
                w.end_launch()
            else:
                w.host_event(ev)
    os.remove(out)


def best(fn):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


# Peak memory of reading alone, in a fresh process (this one also ran the writer).
code = ("import resource, sys, uvmsim\n"
        "t = uvmsim.Trace(sys.argv[1])\n"
        "n = sum(len(c) for l in t.launches for c in t.records(l.launch_index))\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
rss_kib = int(subprocess.run([sys.executable, "-c", code, path], check=True,
                             capture_output=True, text=True).stdout)
n = read_all()
read_s = best(read_all)
rewrite_s = best(rewrite)
print("%-16s %10d %10.1f %14.2f %14.2f %12.0f" % (
    os.path.basename(path)[:-4], n, os.path.getsize(path) / 2**20, n / read_s / 1e6,
    n / rewrite_s / 1e6, rss_kib / 1024))
EOF
done
