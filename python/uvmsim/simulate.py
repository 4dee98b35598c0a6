"""Running a simulation: `run(trace, gpu, ...)` calls `uvmsim run ... --stats-out` and returns the
statistics (docs/stats.md) as a dict.

The binary rather than a compiled binding: nothing to compile or keep in step with the Python
version, a simulator abort cannot take the interpreter down with it, every knob and error
message is exactly the command line's, and independent runs can go to separate processes. The
cost is one process start-up (a few milliseconds) per simulation.
"""

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .errors import SimulationError, UvmsimError


def find_binary(binary=None):
    """The `uvmsim` executable to run: `binary` if given, else $UVMSIM_BIN, else the source
    tree's build/uvmsim (when this module runs from a source tree), else <prefix>/bin/uvmsim next
    to an installed module, else `uvmsim` on PATH."""
    if binary is not None:
        return os.fspath(binary)
    env = os.environ.get("UVMSIM_BIN")
    if env:
        return env
    here = Path(__file__).resolve().parent
    candidates = [here.parents[1] / "build" / "uvmsim"]  # <source>/python/uvmsim -> <source>
    # <prefix>/lib/python3.X/dist-packages/uvmsim -> <prefix>/bin/uvmsim
    if len(here.parents) > 3 and here.parents[2].name == "lib":
        candidates.append(here.parents[3] / "bin" / "uvmsim")
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which("uvmsim")
    if found:
        return found
    raise UvmsimError("uvmsim: cannot find the uvmsim binary: pass binary=, set UVMSIM_BIN, or "
                      "put uvmsim on PATH")


def _knob_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def run(trace, gpu, oversub=None, hbm=None, eviction=None, prefetch=None, placement=None,
        policy_preset=None, hints=None, seed=None, knobs=None, events_out=None, binary=None,
        timeout=None):
    """Simulates `trace` on a GPU preset and returns the --stats-out statistics as a dict.

    gpu: a preset name (configs/gpus/), a JSON file, or a dict with the preset's nested keys.
    oversub (percent) or hbm ("8G", bytes): the usable GPU memory. eviction / prefetch /
    placement / policy_preset / hints / seed: as the `uvmsim run` options. knobs: {key: value}
    for --set (uvmsim run --list-knobs). events_out: also write the events CSV there (read it
    with load_events). Raises SimulationError with uvmsim's one-line error if the run fails.
    """
    exe = find_binary(binary)
    with tempfile.TemporaryDirectory(prefix="uvmsim-run-") as tmp:
        if isinstance(gpu, dict):
            preset = os.path.join(tmp, "gpu.json")
            with open(preset, "w") as f:
                json.dump(gpu, f)
            gpu = preset
        stats_path = os.path.join(tmp, "stats.json")
        cmd = [exe, "run", "--gpu", os.fspath(gpu), "--trace", os.fspath(trace), "--stats-out",
               stats_path, "--quiet"]
        options = [("--oversub", oversub), ("--hbm", hbm), ("--eviction", eviction),
                   ("--prefetch", prefetch), ("--placement", placement),
                   ("--policy-preset", policy_preset), ("--hints", hints), ("--seed", seed),
                   ("--events-out", events_out)]
        for flag, value in options:
            if value is not None:
                cmd += [flag, _knob_text(value) if not isinstance(value, os.PathLike)
                        else os.fspath(value)]
        for key, value in (knobs or {}).items():
            cmd += ["--set", f"{key}={_knob_text(value)}"]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except FileNotFoundError:
            raise UvmsimError(f"uvmsim: cannot run the uvmsim binary '{exe}'") from None
        if p.returncode != 0:
            lines = [line for line in p.stderr.splitlines() if line.strip()]
            msg = lines[-1] if lines else f"uvmsim run exited with status {p.returncode}"
            raise SimulationError(msg, p.returncode, cmd)
        with open(stats_path) as f:
            return json.load(f)
