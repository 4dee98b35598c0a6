"""uvmsim: read and write .uvt traces, run the simulator, load its results (docs/python.md).

    import uvmsim
    with uvmsim.Trace("mvt.uvt") as t:
        for chunk in t.records(0):          # numpy arrays of RECORD_DTYPE, one per chunk
            ...
    stats = uvmsim.run("mvt.uvt", gpu="gtx1080ti", oversub=50)   # the --stats-out dict
    df = uvmsim.load_sweep("sweeps/quick")                       # results.csv as a DataFrame

Reading and writing traces is pure Python over numpy and python3-zstandard; simulations run
the `uvmsim` binary; the table loaders need pandas (imported when first used).
"""

from .checksum import crc32
from .codec import (FORMAT_VERSION, MAX_GPUS, AccessKind, Advice, HostEvent, HostEventType,
                    Processor, gpu)
from .errors import SimulationError, TraceError, UvmsimError
from .metadata import Allocation, Kernel, Metadata
from .reader import ChunkInfo, LaunchSummary, Trace, open_trace
from .records import RECORD_DTYPE
from .simulate import find_binary, run
from .tables import load_events, load_sweep
from .writer import TraceWriter

__all__ = [
    "FORMAT_VERSION",
    "MAX_GPUS",
    "RECORD_DTYPE",
    "AccessKind",
    "Advice",
    "Allocation",
    "ChunkInfo",
    "HostEvent",
    "HostEventType",
    "Kernel",
    "LaunchSummary",
    "Metadata",
    "Processor",
    "SimulationError",
    "Trace",
    "TraceError",
    "TraceWriter",
    "UvmsimError",
    "crc32",
    "find_binary",
    "gpu",
    "load_events",
    "load_sweep",
    "open_trace",
    "run",
]
