#!/usr/bin/env python3
"""Writes a synthetic uvmsim access list (docs/trace-import.md) of about SIZE bytes to stdout,
for measuring `uvmsim trace import`: a streaming kernel (each warp reads a and b and writes c, 128
bytes per access, with cycles) launched repeatedly, printed the way a tracer prints it - the
resident threadblocks of a wave interleaved access by access - so the importer has to regroup
every line.
    python3 scripts/gen_access_list.py 10G > big.accesses
"""
import sys

GRID = 1 << 16          # threadblocks per launch
WARPS = 8               # 256 threads
STEPS = 8               # accesses per array per warp
WAVE = 640              # resident threadblocks (80 SMs x 8)
BASE = (0x7f0000000000, 0x7f4000000000, 0x7f8000000000)


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.upper().rstrip("B").rstrip("I")
    return int(t[:-1]) * mult[t[-1]] if t[-1] in mult else int(t)


def main():
    target = parse_size(sys.argv[1]) if len(sys.argv) > 1 else 1 << 30
    span = GRID * WARPS * STEPS * 128   # bytes each array covers
    out = sys.stdout
    header = ["uvmsim-access-list 1", "workload synthetic-stream"]
    header += ["alloc 0x%x %d managed %s" % (b, span, n) for b, n in zip(BASE, "abc")]
    header += ["kernel stream %d %d regs=32" % (GRID, WARPS * 32)]
    out.write("\n".join(header) + "\n")
    written = 0
    launch = 0
    while written < target:
        out.write("launch stream iteration=%d\n" % launch)
        for wave in range(0, GRID, WAVE):
            tbs = range(wave, min(wave + WAVE, GRID))
            for step in range(STEPS):
                for arr, kind, pc in ((0, "r", 0x10), (1, "r", 0x20), (2, "w", 0x30)):
                    cycle = 100 + step * 400 + arr * 120
                    lines = []
                    for tb in tbs:
                        first = BASE[arr] + ((tb * WARPS) * STEPS + step) * 128
                        for w in range(WARPS):
                            lines.append("%d %d %s 0x%x 128 0x%x %d\n" % (
                                tb, w, kind, first + w * STEPS * 128, pc, cycle + w))
                    chunk = "".join(lines)
                    out.write(chunk)
                    written += len(chunk)
            if written >= target:
                break
        # a launch must be complete only in what it prints: a partial last launch is valid
        out.write("sync\n")
        launch += 1


if __name__ == "__main__":
    main()
