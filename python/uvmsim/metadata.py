"""Trace metadata (workload, allocations, kernels): dataclasses and their validating JSON form.

`Metadata.from_json` applies the checks of the C++ `Metadata::from_json` (traces/trace_metadata.cpp)
in the same order with the same messages, so a file is accepted or rejected alike by both
readers. The optional `hints` object (docs/hints.md) is carried verbatim and not validated here:
`uvmsim trace info FILE` validates a trace's hints.
"""

import json
import numbers
from dataclasses import dataclass, field

from .codec import U32_MAX, U64_MAX
from .errors import TraceError


@dataclass
class Allocation:
    id: int
    name: str
    base: int
    size: int
    managed: bool = True
    host_pinned: bool = False
    system: bool = False  # malloc/mmap memory on an ATS platform (docs/platforms.md)


@dataclass
class Kernel:
    id: int
    name: str
    grid: tuple = (1, 1, 1)
    block: tuple = (1, 1, 1)
    regs: int = 0
    smem: int = 0

    @property
    def threadblocks(self):
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def warps_per_block(self):
        return (self.block[0] * self.block[1] * self.block[2] + 31) // 32


@dataclass
class Metadata:
    workload: str
    allocations: list = field(default_factory=list)
    kernels: list = field(default_factory=list)
    params: dict = field(default_factory=dict)
    captured_gpu: str = ""
    extra: dict = field(default_factory=dict)
    hints: dict = None

    def kernel(self, kernel_id):
        """The Kernel with this id, or None."""
        for k in self.kernels:
            if k.id == kernel_id:
                return k
        return None

    def managed_footprint(self):
        return sum(a.size for a in self.allocations if a.managed)

    def to_json(self):
        """The metadata object as the C++ writer builds it."""
        j = {
            "workload": self.workload,
            "params": self.params,
            "captured_gpu": self.captured_gpu,
            "allocations": [
                dict(
                    {
                        "id": _plain(a.id),
                        "name": a.name,
                        "base": _plain(a.base),
                        "size": _plain(a.size),
                        "managed": a.managed,
                        "host_pinned": a.host_pinned,
                    },
                    # Written only when set, as the C++ writer does.
                    **({"system": True} if a.system else {}),
                )
                for a in self.allocations
            ],
            "kernels": [
                {
                    "id": _plain(k.id),
                    "name": k.name,
                    "grid": [_plain(x) for x in k.grid],
                    "block": [_plain(x) for x in k.block],
                    "regs": _plain(k.regs),
                    "smem": _plain(k.smem),
                }
                for k in self.kernels
            ],
            "extra": self.extra,
        }
        if self.hints is not None:
            j["hints"] = self.hints
        return j

    def to_bytes(self):
        """The header's metadata text: compact JSON with sorted keys, UTF-8, as nlohmann::json's
        dump() writes it, so a trace rewritten from Python matches the C++ writer byte for byte."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return text.encode("utf-8")

    @staticmethod
    def from_json(j, where="<metadata>"):
        """Validates a parsed metadata object; raises TraceError naming `where` and the field."""
        root = _Fields(j, where, "metadata")
        m = Metadata(workload=root.str("workload", True))
        m.params = root.object("params")
        m.captured_gpu = root.str("captured_gpu", False)
        m.extra = root.object("extra")

        allocs = root.array("allocations")
        for i, aj in enumerate(allocs):
            f = _Fields(aj, where, f"metadata.allocations[{i}]")
            a = Allocation(
                id=f.u32("id", True),
                name=f.str("name", True),
                base=f.address("base"),
                size=f.u64("size", True),
            )
            a.managed = f.boolean("managed", True)
            a.host_pinned = f.boolean("host_pinned", False)
            a.system = f.boolean("system", False)
            if a.size == 0:
                f.fail(f.field("size"), "must be positive")
            if a.base > U64_MAX - a.size:
                f.fail(f.field("size"), "base + size overflows the 64-bit address space")
            if a.managed and a.host_pinned:
                f.fail(f.field("host_pinned"), "requires managed = false")
            if a.system and not a.managed:
                f.fail(f.field("system"), "requires managed = true (system memory is pageable)")
            for o in m.allocations:
                if o.id == a.id:
                    f.fail(f.field("id"), f"duplicate allocation id {a.id}")
                if a.base < o.base + o.size and o.base < a.base + a.size:
                    f.fail(f.field("base"), f"range overlaps allocation {o.id} '{o.name}'")
            m.allocations.append(a)

        kerns = root.array("kernels")
        for i, kj in enumerate(kerns):
            f = _Fields(kj, where, f"metadata.kernels[{i}]")
            k = Kernel(id=f.u32("id", True), name=f.str("name", True))
            k.grid = f.dim3("grid")
            k.block = f.dim3("block")
            k.regs = f.u32("regs", False)
            k.smem = f.u32("smem", False)
            # CUDA's launch limits (they also keep threadblock counts far from overflow).
            if k.block[0] * k.block[1] * k.block[2] > 1024:
                f.fail(f.field("block"), "more than 1024 threads per block")
            if k.grid[0] > 0x7FFFFFFF or k.grid[1] > 65535 or k.grid[2] > 65535:
                f.fail(f.field("grid"), "exceeds CUDA's grid limits (2^31-1, 65535, 65535)")
            for o in m.kernels:
                if o.id == k.id:
                    f.fail(f.field("id"), f"duplicate kernel id {k.id}")
            m.kernels.append(k)
        if "hints" in j:
            h = j["hints"]
            if not isinstance(h, dict):
                raise TraceError(where, "metadata.hints", "expected an object")
            m.hints = h
        return m


def _plain(v):
    """numpy integers as Python ints (JSON has no numpy types); anything else unchanged, for the
    validation to judge."""
    return int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


class _Fields:
    """Typed access to the fields of one JSON object; errors name "<path>.<key>" (json_fields.h)."""

    def __init__(self, obj, where, path):
        self.obj = obj
        self.where = where
        self.path = path
        if not isinstance(obj, dict):
            self.fail(path, "expected an object")

    def fail(self, field_name, msg):
        raise TraceError(self.where, field_name, msg)

    def field(self, key):
        return f"{self.path}.{key}"

    def find(self, key, required):
        if key not in self.obj:
            if required:
                self.fail(self.field(key), "missing required field")
            return None
        return self.obj[key]

    def str(self, key, required):
        if key not in self.obj and not required:
            return ""
        v = self.find(key, required)
        if not isinstance(v, str):
            self.fail(self.field(key), "expected a string")
        return v

    def to_u64(self, v, name):
        # Integers outside int64/uint64 are floats to nlohmann::json: "expected an unsigned
        # integer".
        if _is_int(v) and -(1 << 63) <= v:
            if v < 0:
                self.fail(name, "must not be negative")
            if v <= U64_MAX:
                return v
        self.fail(name, "expected an unsigned integer")

    def u64(self, key, required):
        if key not in self.obj and not required:
            return 0
        return self.to_u64(self.find(key, required), self.field(key))

    def u32(self, key, required):
        v = self.u64(key, required)
        if v > U32_MAX:
            self.fail(self.field(key), f"value {v} does not fit in 32 bits")
        return v

    def address(self, key):
        v = self.find(key, True)
        if isinstance(v, str):
            digits = v[2:]
            if (
                2 < len(v) <= 18
                and v[0] == "0"
                and v[1] in "xX"
                and all(c in "0123456789abcdefABCDEF" for c in digits)
            ):
                return int(digits, 16)
            self.fail(self.field(key), 'expected an unsigned integer or a "0x..." hex string')
        return self.to_u64(v, self.field(key))

    def boolean(self, key, default):
        if key not in self.obj:
            return default
        v = self.obj[key]
        if not isinstance(v, bool):
            self.fail(self.field(key), "expected true or false")
        return v

    def array(self, key):
        v = self.find(key, True)
        if not isinstance(v, list):
            self.fail(self.field(key), "expected an array")
        return v

    def object(self, key):
        if key not in self.obj:
            return {}
        v = self.obj[key]
        if not isinstance(v, dict):
            self.fail(self.field(key), "expected an object")
        return v

    def dim3(self, key):
        v = self.find(key, True)
        if not isinstance(v, list) or not 1 <= len(v) <= 3:
            self.fail(self.field(key), "expected an array of 1 to 3 positive integers")
        d = [1, 1, 1]
        for i, x in enumerate(v):
            name = f"{self.field(key)}[{i}]"
            x = self.to_u64(x, name)
            if x == 0 or x > U32_MAX:
                self.fail(name, "must be in 1..4294967295")
            d[i] = x
        return tuple(d)
