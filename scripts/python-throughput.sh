#!/usr/bin/env bash
# Speed and memory of the Python module's trace reader and writer (docs/python.md, "Speed and
# memory"): for each trace, the best of REPEAT reads of every record (Trace.records) and of
# REPEAT rewrites with TraceWriter (read + write), in records per second of CPU time (the
# process's own, so other work on a shared machine disturbs it less than wall time) and of wall
# time, and the peak resident memory of a process that only reads the trace.
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
"$BIN" gen bfs --footprint 8M -o "$work/bfs-8M.uvt" >/dev/null
"$BIN" gen mvt --footprint 16M -o "$work/mvt-16M.uvt" >/dev/null

export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
printf '%-12s %9s %8s %18s %18s %9s\n' trace records "file KiB" "read Mrec/s cpu|wall" "rewrite Mrec/s c|w" "RSS MiB"
for t in stream-64M stream-512M bfs-8M mvt-16M; do
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
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), min(wall)


# Peak memory of reading alone, in a fresh process (this one also ran the writer).
code = ("import resource, sys, uvmsim\n"
        "t = uvmsim.Trace(sys.argv[1])\n"
        "n = sum(len(c) for l in t.launches for c in t.records(l.launch_index))\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
rss_kib = int(subprocess.run([sys.executable, "-c", code, path], check=True,
                             capture_output=True, text=True).stdout)
n = read_all()
read_c, read_w = best(read_all)
rewrite_c, rewrite_w = best(rewrite)
print("%-12s %9d %8.0f %9.2f|%-8.2f %9.2f|%-8.2f %9.0f" % (
    os.path.basename(path)[:-4], n, os.path.getsize(path) / 2**10, n / read_c / 1e6,
    n / read_w / 1e6, n / rewrite_c / 1e6, n / rewrite_w / 1e6, rss_kib / 1024))
EOF
done
