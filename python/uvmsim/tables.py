"""pandas views of the simulator's tables: a sweep's results.csv (docs/sweeps.md) and an
`--events-out` CSV (docs/stats.md). pandas is imported on first use, so reading and writing
traces does not need it.
"""

import json
from pathlib import Path

import numpy as np

from .errors import UvmsimError

EVENT_COLUMNS = ["time_ns", "event", "batch", "va", "bytes", "direction", "cause", "pages",
                 "duration_ns"]
# Columns of results.csv that are text whatever they look like (a hex id may be all digits).
_SWEEP_TEXT_COLUMNS = ["id", "status", "label", "workload", "gpu", "policy", "eviction",
                       "prefetch", "placement", "baseline_id", "error"]


def _read_csv(path, **kwargs):
    import pandas as pd

    try:
        # Only empty cells are missing: "none" / "NA" are legitimate policy or workload names.
        return pd.read_csv(path, keep_default_na=False, na_values=[""], **kwargs)
    except FileNotFoundError:
        raise UvmsimError(f"{path}: cannot open: no such file") from None
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UvmsimError(f"{path}: {first}") from None


def load_sweep(directory, policy_counters=True):
    """A sweep's results.csv as a DataFrame, one row per point (status ok, failed or pending),
    with the axes, the metrics, the normalized columns and every flattened statistic. The
    sweep's description (sweep.json: name, axes, varying axes, baseline) is in
    `df.attrs["sweep"]`.

    The policies' own counters (`policies.*` columns) live in policy_counters.csv beside
    results.csv (docs/sweeps.md); with `policy_counters` (the default) they are joined back on
    `id`, so the DataFrame has the columns it had when results.csv held them. A directory
    written before the split has them in results.csv and no policy_counters.csv: same result."""
    directory = Path(directory)
    path = directory / "results.csv"
    if not path.is_file():
        raise UvmsimError(f"{path}: cannot open: no such file (not a sweep output directory, or "
                          "its results were never collected: uvmsim sweep SPEC --collect)")
    df = _read_csv(path, dtype={c: str for c in _SWEEP_TEXT_COLUMNS})
    counters = directory / "policy_counters.csv"
    if policy_counters and counters.is_file():
        pc = _read_csv(counters, dtype={"id": str, "label": str})
        if "id" not in pc.columns:
            raise UvmsimError(f"{counters}: no 'id' column (not a uvmsim policy_counters.csv)")
        extra = [c for c in pc.columns if c not in ("id", "label") and c not in df.columns]
        df = df.merge(pc[["id"] + extra], on="id", how="left")
    sweep = directory / "sweep.json"
    if sweep.is_file():
        try:
            df.attrs["sweep"] = json.loads(sweep.read_text())
        except ValueError as e:
            raise UvmsimError(f"{sweep}: invalid JSON ({e})") from None
    else:
        df.attrs["sweep"] = {}
    return df


def _hex(text):
    try:
        return int(text, 16)
    except ValueError:
        raise ValueError(f"va: not a hex address: {text!r}") from None


def load_events(path):
    """An --events-out CSV as a DataFrame: time_ns and duration_ns (float ns), event / direction
    / cause (categorical; empty direction and cause are ""), batch (int64, -1 outside fault
    batches), va (uint64, parsed from hex), bytes and pages (uint64)."""
    path = Path(path)
    try:
        with open(path) as f:
            header = f.readline().strip()
    except OSError as e:
        raise UvmsimError(f"{path}: cannot open: {e.strerror}") from None
    if header.split(",") != EVENT_COLUMNS:
        raise UvmsimError(f"{path}: header: expected '{','.join(EVENT_COLUMNS)}', got "
                          f"'{header[:200]}'")
    import pandas as pd

    try:
        df = pd.read_csv(path, keep_default_na=False, na_filter=False, converters={"va": _hex},
                         dtype={"time_ns": np.float64, "event": str, "batch": np.int64,
                                "bytes": np.uint64, "direction": str, "cause": str,
                                "pages": np.uint64, "duration_ns": np.float64})
    except (ValueError, TypeError, OverflowError, pd.errors.ParserError) as e:
        raise UvmsimError(f"{path}: {str(e).strip().splitlines()[0]}") from None
    df["va"] = df["va"].astype(np.uint64)
    for c in ("event", "direction", "cause"):
        df[c] = df[c].astype("category")
    return df
