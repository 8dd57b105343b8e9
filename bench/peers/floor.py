#!/usr/bin/env python3
"""The floor of each GPU workload (#31 item 4): what it must move, compute and dispatch, and the
time that implies on the GPU, for BENCHMARKS.md's floor tables (report.py).

The model (float32, 4 bytes a word; N positions, state dimension m, B series at once):
- a parallel workload reads y once, writes its outputs once (the means and covariances, m + m² words
  per position), and writes and reads each associative scan's elements once (a blocked scan keeps
  them in global memory between its levels): filter elements (A, b, C, η, J) are 3m² + 2m words,
  smoother elements (E, g, L) 2m² + m;
- a blocked scan of N ≤ 1024 positions is one dispatch, of N ≤ 1024² three (blocks, their totals,
  fix-up); building the elements and reading the results fuse into the first and last;
- a filter combine costs ~20 m³ flops (two m × m inverses, ~8 products), a smoother combine ~6 m³,
  and a blocked scan ~2N combines; reverse mode (par_grad) adds a reverse scan of (combine + its vjp)
  ≈ 3 combines per position pair, and stores the forward prefixes;
- a sequential scan is bound by its chain of N dependent steps: ≥ 0.06 µs a step (one loop step in
  one workgroup, measured on the H100), one dispatch;
- floor time = max(bytes / bandwidth, flops / fp32 peak) + dispatches × 2.4 µs (one dispatch in a
  recorded command buffer, measured on the H100) [+ N steps × 0.06 µs for a sequential scan];
- every call also reads its result back: one submit-and-fence round trip, ≈ 45 µs on the H100,
  given beside (wall floor) because the measured times are wall times per call.
It is a model of what the algorithm must do, not a bound on what any implementation could do.

>>> f = floor_of("par_filter", 2, 1, 102400, "NVIDIA H100 80GB HBM3")
>>> f["dispatches"], round(f["mb"], 1), round(f["floor_us"], 1)
(3, 16.0, 12.0)
>>> round(floor_of("seq_filter", 2, 1, 102400, "H100")["floor_us"])
6147
>>> floor_of("par_grad", 13, 1, 1600, "H100")["dispatches"]
7
>>> floor_of("par_mle", 2, 1, 1600, "H100")["dispatches"]
700
>>> floor_of("unknown", 2, 1, 10, "H100") is None
True
"""

WORD = 4
DISPATCH_US = 2.4   # one dispatch in a recorded command buffer (H100)
STEP_US = 0.06      # one loop step in one workgroup (H100)
ROUND_TRIP_US = 45  # submit + fence (H100: 45-52 µs)
FP32_PEAK = 67e12   # flop/s, H100 SXM (non-tensor); H200 the same chip
BANDWIDTH = {"H200": 4.8e12, "H100": 3.35e12}  # bytes/s of HBM


def bandwidth(device):
    for name, bw in BANDWIDTH.items():
        if name in device:
            return bw
    return BANDWIDTH["H100"]


def scan_dispatches(n):
    """Dispatches of one blocked associative scan over n positions (1024 per workgroup)."""
    d, blocks = 1, n
    while blocks > 1024:
        blocks = -(-blocks // 1024)
        d += 2
    return d


def floor_of(workload, m, b, n, device):
    """{'mb', 'gflop', 'dispatches', 'floor_us'} for one cell, or None for an unmodelled workload."""
    ef, es, out = 3 * m * m + 2 * m, 2 * m * m + m, m + m * m
    comb_f, comb_s = 20 * m ** 3, 6 * m ** 3
    steps = 0
    if workload == "seq_filter":
        words, flops, disp, steps = 1 + out, n * 4 * m ** 3, 1, n
    elif workload == "seq_smoother":
        words, flops, disp, steps = 1 + 2 * out, n * 8 * m ** 3, 1, 2 * n
    elif workload == "par_filter":
        words, flops, disp = 1 + 2 * ef + out, 2 * n * comb_f, scan_dispatches(n)
    elif workload == "par_smoother":
        words = 1 + 2 * ef + out + 2 * es + out
        flops, disp = 2 * n * (comb_f + comb_s), 2 * scan_dispatches(n)
    elif workload in ("par_grad", "par_grad_fwd", "par_mle"):
        # forward scan (elements and prefixes kept), reverse scan of cotangents, the sum to 3 scalars
        words, flops, disp = 1 + 6 * ef, 2 * n * comb_f * 4, 2 * scan_dispatches(n) + 1
    else:
        return None
    if workload == "par_mle":  # 100 steps of the gradient (Adam's update is a few scalars)
        words, flops, disp = 100 * words, 100 * flops, 100 * disp
    byts, flops = words * WORD * n * b, flops * b
    us = max(byts / bandwidth(device), flops / FP32_PEAK) * 1e6 + disp * DISPATCH_US + steps * STEP_US
    return {"mb": byts / 1e6, "gflop": flops / 1e9, "dispatches": disp, "floor_us": us}


def markdown(rows, device):
    """The floor table of a GPU comparison's rows (those with a jxlab time). Where the run timed the
    device (compare.py --gpu-time: gpu_busy_ms, the call's pipelines without the device's idle
    between its batches), its busy time against the floor beside the wall time's ratios.

    >>> r = {"workload": "par_filter", "m": 2, "batch": 1, "n": 102400, "jx_ms": 0.087, "gpu_busy_ms": 0.0477}
    >>> markdown([r], "NVIDIA H200").splitlines()[-1]
    '| par_filter | 2 | 1 | 102400 | 16.0 | 0.03 | 3 | 10.5 | 55.5 | 0.087 | 8.3 | 1.6 | 47.7 | 4.5 |'
    """
    timed = any("gpu_busy_ms" in r for r in rows)
    head = ["| workload | m | B | N | must move MB | GFLOP | dispatches | floor µs | + round trip µs | jxlab ms "
            "| × floor | × (floor + round trip) |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    if timed:
        head = [head[0] + " device busy µs | busy × floor |", head[1] + "---|---|"]
    lines = head
    for r in rows:
        f = floor_of(r["workload"], r.get("m", 2), r.get("batch", 1), r["n"], device)
        if f is None or not r.get("jx_ms"):
            continue
        wall = f["floor_us"] + ROUND_TRIP_US
        line = (f"| {r['workload']} | {r.get('m', 2)} | {r.get('batch', 1)} | {r['n']} | {f['mb']:.1f} | "
                f"{f['gflop']:.2f} | {f['dispatches']} | {f['floor_us']:.1f} | {wall:.1f} | {r['jx_ms']:.3f} | "
                f"{r['jx_ms'] * 1e3 / f['floor_us']:.1f} | {r['jx_ms'] * 1e3 / wall:.1f} |")
        if timed:
            busy = r.get("gpu_busy_ms")
            line += f" {busy * 1e3:.1f} | {busy * 1e3 / f['floor_us']:.1f} |" if busy else " – | – |"
        lines.append(line)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import doctest
    raise SystemExit(doctest.testmod().failed)
