"""Shared fixtures of the uvmsim module's tests (run by CTest: python.* tests, see
CMakeLists.txt). The C++ side is the `uvmsim` binary named by $UVMSIM_BIN."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # python/ (the package's parent)

import uvmsim  # noqa: E402

SOURCE_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def binary():
    found = uvmsim.find_binary()
    # Absolute, so that tests may change directory ($UVMSIM_BIN may be relative by hand).
    return os.path.abspath(found) if os.sep in found else found


class Cli:
    """Runs the uvmsim binary."""

    def __init__(self, binary):
        self.binary = binary

    def __call__(self, *args):
        """stdout of a command that must succeed."""
        p = subprocess.run([self.binary, *map(str, args)], capture_output=True, text=True)
        assert p.returncode == 0, f"uvmsim {' '.join(map(str, args))} failed:\n{p.stderr}"
        return p.stdout

    def error(self, *args):
        """(exit status, the one-line error without its "uvmsim CMD: error: " prefix) of a
        command that must fail."""
        p = subprocess.run([self.binary, *map(str, args)], capture_output=True, text=True)
        assert p.returncode != 0, f"uvmsim {' '.join(map(str, args))} succeeded"
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1, p.stderr
        prefix = f"uvmsim {args[0]}: error: "
        assert lines[0].startswith(prefix), lines[0]
        return p.returncode, lines[0][len(prefix):]


@pytest.fixture(scope="session")
def cli(binary):
    return Cli(binary)


class Traces:
    """C++-generated traces, each made on first use and kept for the session: traces[name] is
    (path, the chunk size it was written with). Small chunk sizes give multi-chunk launches."""

    SPECS = {
        # 2 kernels, embedded hints, threadblocks larger than a chunk
        "mvt": (["mvt", "--footprint", "1M"], 4096),
        # 12 launches, irregular, many chunks per launch
        "bfs": (["bfs", "--footprint", "256K"], 2048),
        # CPU initialisation + one launch, several chunks
        "stream": (["stream", "--footprint", "2M"], 2048),
        # unfolded records (repeats of the same page stay separate)
        "random": (["random", "--footprint", "2M", "--no-fold"], 1 << 20),
        # a one-thread kernel with long gaps
        "touch": (["touch", "--footprint", "1M", "--param", "offsets=0,4096,65536,8192"],
                  1 << 20),
        # MemFree host events: format version 2
        "kmeans": (["kmeans", "--footprint", "1M", "--param", "iters=2"], 4096),
    }

    def __init__(self, cli, directory):
        self.cli = cli
        self.directory = directory
        self.made = {}

    def __getitem__(self, name):
        if name not in self.made:
            args, chunk = self.SPECS[name]
            path = self.directory / f"{name}.uvt"
            self.cli("gen", *args, "--chunk-size", str(chunk), "-o", path)
            self.made[name] = (path, chunk)
        return self.made[name]


@pytest.fixture(scope="session")
def traces(cli, tmp_path_factory):
    return Traces(cli, tmp_path_factory.mktemp("traces"))


KIND = ["prefetch", "read", "write", "atomic"]


def device_name(d):
    """`trace dump`'s name of a device: cpu, gpu (GPU 0) or gpuN."""
    if d == uvmsim.Processor.Cpu:
        return "cpu"
    return "gpu" if d == uvmsim.Processor.Gpu else f"gpu{int(d)}"


def dump_text(trace):
    """What `uvmsim trace dump FILE --limit 0` prints, produced from the Python reader."""
    names = {k.id: k.name for k in trace.kernels}
    lines = [f"# host events ({trace.host_event_count})"]
    T = uvmsim.HostEventType
    for i, ev in enumerate(trace.host_events()):
        s = ev.type.name
        if ev.type == T.KernelLaunch:
            s += (f" launch={ev.launch_index} kernel={ev.kernel_id} ({names[ev.kernel_id]}) "
                  f"iteration={ev.iteration}")
        elif ev.type == T.MemPrefetch:
            s += f" va={ev.va:#x} size={ev.size} to={device_name(ev.device)}"
        elif ev.type == T.MemAdvise:
            s += f" {ev.advice.name} va={ev.va:#x} size={ev.size} device={device_name(ev.device)}"
        elif ev.type == T.CpuAccess:
            s += f" {KIND[ev.kind]} va={ev.va:#x} size={ev.size}"
        elif ev.type == T.MemFree:
            s += f" va={ev.va:#x}"
        elif ev.type == T.SetDevice:
            s += f" gpu={int(ev.device)}"
        lines.append(f"[{i}] {s}")
    for l in trace.launches:
        lines.append(f"# launch {l.launch_index}: kernel {l.kernel_id} ({names[l.kernel_id]}), "
                     f"{l.threadblocks} threadblocks, {l.records} records")
        for chunk in trace.records(l.launch_index):
            for tb, w, k, va, nbytes, ref, gap, rep in chunk.tolist():
                lines.append(f"tb {tb} warp {w}: {KIND[k]} va={va:#x} bytes={nbytes} ref={ref} "
                             f"gap={gap} repeat={rep}")
    return "\n".join(lines) + "\n"


def copy_trace(src, dst, **writer_options):
    """Rewrites the trace at `src` to `dst` with the Python writer, chunk by chunk."""
    with uvmsim.Trace(src) as r, uvmsim.TraceWriter(dst, r.metadata, **writer_options) as w:
        for ev in r.host_events():
            if ev.type == uvmsim.HostEventType.KernelLaunch:
                w.begin_launch(ev.kernel_id, ev.iteration)
                for chunk in r.records(ev.launch_index):
                    w.write_blocks(chunk)
                w.end_launch()
            else:
                w.host_event(ev)


def env_with_module():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SOURCE_DIR / "python") + os.pathsep + env.get("PYTHONPATH", "")
    return env
