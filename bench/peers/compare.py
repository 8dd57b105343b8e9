#!/usr/bin/env python3
"""Runs jxlab's Kalman benchmarks and the JAX peer in one call, side by side, and writes the
comparison: ratio = jxlab time / JAX time per workload and N (below 1: jxlab is faster).

  python3 bench/peers/compare.py --jx "bash .gpu/env.sh .gpu/bin/bench_peers" --out DIR [--gpu] [--cpu]
    --gpu   jxlab vulkan (JX_LIMITS=device) vs JAX on the GPU (JAX_PLATFORMS=cuda)
    --cpu   jxlab native vs JAX on the CPU (JAX_PLATFORMS=cpu)
Writes DIR/peers.json (every figure, machine, commit, driver versions) and DIR/peers.md (tables);
scripts/bench-report turns peers.json files under bench/results/ into BENCHMARKS.md and plots.
The checksums (-2 log L, or the sum of smoothed means) of both sides are compared: a ratio is only
reported where they agree to 1e-3 relative.

Rounds (--rounds R, default 3): both sides run R times, interleaved (jxlab, JAX, jxlab, JAX, ...);
each side's figure per round is the median of its per-call times; the ratio reported is the median
of the R rounds' ratios, with their min and max (`rounds` lists them). State dimensions: --m
(rows carry `m`; `batch` is 1). JAX runs at matmul precision `highest` (its values must agree
with ours); --jax-default adds one run at its default precision, reported beside (`jax_default_ms`).
"""
import statistics
import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ["seq_filter", "seq_smoother", "par_filter", "par_smoother", "par_grad", "par_grad_fwd", "par_mle"]
# targets of the performance issue (#31; jxlab / JAX at N = 102400, medians of the rounds), by
# comparison, workload and state dimension m: (ratio, JAX workload it is measured against).
# par_grad_fwd is the same value and gradient in forward mode; its target row compares it with
# JAX's value_and_grad (its table row with JAX's forward mode, jacfwd).
VERSUS = {"par_grad_fwd": "par_grad"}


def target_of(kind, wl, m):
    if kind == "gpu":
        if m == 2 and wl in ("par_filter", "par_smoother"):
            return 0.1
        if m == 2 and wl in ("par_grad", "par_grad_fwd"):
            return 0.15
        return 0.3
    return 0.4 if wl == "seq_filter" else 1.0  # cpu: native seq filter, and no cell slower than JAX


def run(cmd, env_extra, log):
    env = dict(os.environ, **env_extra)
    print("+", " ".join(f"{k}={v}" for k, v in env_extra.items()), cmd if isinstance(cmd, str) else shlex.join(cmd), flush=True)
    t0 = time.time()
    p = subprocess.run(cmd, shell=isinstance(cmd, str), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(log, "a") as f:
        f.write(p.stdout)
    print(p.stdout[-3000:], flush=True)
    if p.returncode != 0:
        raise SystemExit(f"compare: command failed ({p.returncode}) after {time.time() - t0:.0f} s: see {log}")


COUNTERS = ("dispatches", "submits", "host_waits", "barriers")  # bench_peers' per-call counters
DEVICE_TIME = ("gpu_busy_ms", "gpu_idle_ms")  # under JX_VK_TIMING (--gpu-time)


def jx_results(path):
    with open(path) as f:
        doc = json.load(f)
    out = {}
    for b in doc["benchmarks"]:
        # kalman/<workload>/<backend>/<N>/<m>/<B>/min_time:.../real_time (older runs: no B, or no m)
        parts = b["name"].split("/")
        wl, be, n = parts[1], parts[2], int(parts[3])
        m = int(parts[4]) if len(parts) > 4 and parts[4].isdigit() else 2
        batch = int(parts[5]) if len(parts) > 5 and parts[5].isdigit() else 1
        ms = b.get("median_ms", b["real_time"] * {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]])
        out[(wl, n, m, batch)] = {"ms": ms, "backend": be, "checksum": b.get("checksum"),
                        **{k: b[k] for k in COUNTERS + DEVICE_TIME if k in b}}
    return out, doc.get("context", {})


def jax_results(path):
    with open(path) as f:
        doc = json.load(f)
    return ({(r["workload"], r["n"], r.get("m", 2), r.get("batch", 1)): r for r in doc["results"]},
            {k: v for k, v in doc.items() if k != "results"})


def agree(a, b):
    ca, cb = a.get("checksum"), b.get("checksum")
    return ca is not None and cb is not None and abs(ca - cb) <= 1e-3 * max(1.0, abs(cb))


def med(xs):
    return statistics.median(xs) if xs else None


def compare(kind, jx_rounds, jx_ctx, jax_rounds, jax_ctx, jax_default=None, timing=None):
    """Rows per (workload, N, m) over R interleaved rounds: each side's median over rounds, the
    rounds' ratios (where the checksums agree) and their median, min and max; from `timing` (a
    run with JX_VK_TIMING=1, after the rounds) the device's busy and idle time a call."""
    keys = set()
    for r in jx_rounds + jax_rounds:
        keys |= set(r)
    rows = []
    for key in sorted(keys, key=lambda k: (k[2], k[3], WORKLOADS.index(k[0]), k[1])):
        wl, n, m, batch = key
        a = [r[key] for r in jx_rounds if key in r]
        b = [r[key] for r in jax_rounds if key in r]
        row = {"workload": wl, "n": n, "m": m, "batch": batch, "jx_ms": med([x["ms"] for x in a]),
               "jax_ms": med([x["ms"] for x in b])}
        if jax_default and key in jax_default:
            row["jax_default_ms"] = jax_default[key]["ms"]
        if a:
            row.update({k: a[-1][k] for k in COUNTERS if k in a[-1]})
        if timing and key in timing:
            row.update({k: timing[key][k] for k in DEVICE_TIME if k in timing[key]})
        if a and b:
            row["checksums"] = [a[-1].get("checksum"), b[-1].get("checksum")]
            row["checksums_agree"] = all(agree(x, y) for x, y in zip(a, b))
            if row["checksums_agree"]:
                row["rounds"] = [x["ms"] / y["ms"] for x, y in zip(a, b)]
                row["ratio"] = med(row["rounds"])
                row["ratio_min"], row["ratio_max"] = min(row["rounds"]), max(row["rounds"])
        rows.append(row)
    by = {(r["workload"], r["n"], r["m"], r["batch"]): r for r in rows}
    targets = []
    for wl in WORKLOADS:
        peer = VERSUS.get(wl, wl)
        for m, b in sorted({(k[2], k[3]) for k in by}):
            t = target_of(kind, wl, m if b == 1 else 0)
            ns = [n for (w, n, mm, bb) in by if w == wl and mm == m and bb == b and "ratio" in by[(w, n, mm, bb)]
                  and (peer, n, m, b) in by and "ratio" in by[(peer, n, m, b)]]
            if not ns:
                continue
            n = max(ns)
            k_jx, k_jax = (wl, n, m, b), (peer, n, m, b)
            ratios = [x["ms"] / y["ms"] for x, y in zip([r[k_jx] for r in jx_rounds if k_jx in r],
                                                         [r[k_jax] for r in jax_rounds if k_jax in r])]
            ratio = med(ratios)
            targets.append({"workload": wl, "versus": peer, "n": n, "m": m, "batch": b, "target": t, "ratio": ratio,
                            "ratio_min": min(ratios), "ratio_max": max(ratios), "met": ratio <= t})
    return {"kind": kind, "rounds": len(jx_rounds), "jx_context": jx_ctx, "jax": jax_ctx, "rows": rows,
            "targets": targets}


def markdown(doc):
    lines = [f"# jxlab vs JAX, {doc['date']} on {doc['machine']}", "",
             f"commit {doc['commit']}; driver `bench/peers/compare.py`; float32; ratio = median of the rounds' "
             "ratios [min, max]; JAX at matmul precision highest (its default precision's time beside).", ""]
    for c in doc["comparisons"]:
        who = "vulkan vs JAX on the GPU" if c["kind"] == "gpu" else "native vs JAX on the CPU"
        flags = f", XLA_FLAGS={c['jax']['xla_flags']}" if c["jax"].get("xla_flags") else ""
        lines += [f"## {who} ({c['jax'].get('device', '?')}, JAX {c['jax'].get('jax_version', '?')}{flags})", "",
                  "| workload | m | B | N | jxlab ms | JAX ms | JAX default ms | ratio [min, max] | dispatches | submits |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in c["rows"]:
            f = lambda v, p=3: "—" if v is None else f"{v:.{p}f}"
            spread = f" [{r['ratio_min']:.3f}, {r['ratio_max']:.3f}]" if "ratio_min" in r else " (one run)"
            ratio = (f"{r['ratio']:.3f}{spread}" if "ratio" in r else ("checksums differ" if "checksums" in r else "—"))
            lines.append(f"| {r['workload']} | {r.get('m', 2)} | {r.get('batch', 1)} | {r['n']} | {f(r['jx_ms'])} | {f(r['jax_ms'])} | "
                         f"{f(r.get('jax_default_ms'))} | {ratio} | {f(r.get('dispatches'), 0)} | {f(r.get('submits'), 0)} |")
        lines += ["", "| target | m | B | N | ratio [min, max] | target | met |", "|---|---|---|---|---|---|---|"]
        for t in c["targets"]:
            vs = f" (vs JAX {t['versus']})" if t.get("versus", t["workload"]) != t["workload"] else ""
            lines.append(f"| {t['workload']}{vs} | {t.get('m', 2)} | {t.get('batch', 1)} | {t['n']} | {t['ratio']:.3f} "
                         + (f"[{t['ratio_min']:.3f}, {t['ratio_max']:.3f}] | " if "ratio_min" in t else "(one run) | ")
                         + f"≤ {t['target']} | {'yes' if t['met'] else 'no'} |")
        lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jx", required=True, help="command that runs bench_peers")
    ap.add_argument("--out", required=True)
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--n", default="100,400,1600,6400,25600,102400")
    ap.add_argument("--skip-jax", default="", help="workload:N pairs JAX does not run (too slow)")
    ap.add_argument("--skip-jx", default="", help="workload:backend:N triples jxlab does not run")
    ap.add_argument("--m", default="2", help="state dimensions (2, 4, 8, 13, 16)")
    ap.add_argument("--batch", default="1", help="series at once (1, 64, 1024): jit(vmap(workload)) on both sides")
    ap.add_argument("--workloads", default="", help="only these workloads (default all)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of both sides")
    ap.add_argument("--jax-default", action="store_true", help="also time JAX at its default matmul precision")
    ap.add_argument("--gpu-time", action="store_true", help="after the rounds, one more jxlab run with JX_VK_TIMING=1: "
                    "the device's busy time a call (timestamps around every dispatch) beside the floor")
    ap.add_argument("--jax-cache", default="", help="JAX's persistent compilation cache in this folder: rounds after "
                    "the first load JAX's compiled programs instead of compiling them again (~20 s a cell at m = 13 on "
                    "the H200); the timed calls are the same")
    ap.add_argument("--jax-xla-flags", default="", help="XLA_FLAGS for JAX's runs, recorded in peers.json (e.g. "
                    "--xla_gpu_enable_triton_gemm=false where XLA 0.11.2 aborts compiling the m = 8 gradient)")
    ap.add_argument("--commit", default=os.environ.get("JX_COMMIT", "unknown"))
    ap.add_argument("--machine", default="", help="the machine's name in the results (default: host name and CPU)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    log = os.path.join(a.out, "peers.log")
    doc = {"date": time.strftime("%Y-%m-%d"), "machine": a.machine or f"{platform.node()} ({platform.processor() or platform.machine()})",
           "commit": a.commit, "driver": "bench/peers/compare.py", "comparisons": []}
    kinds = (["gpu"] if a.gpu else []) + (["cpu"] if a.cpu else [])
    for kind in kinds:
        be, plat = ("vulkan", "cuda") if kind == "gpu" else ("native", "cpu")
        jax_cmd = [sys.executable, os.path.join(HERE, "jax_kalman.py"), "--n", a.n, "--m", a.m, "--batch", a.batch,
                   "--skip", a.skip_jax,
                   "--workloads", a.workloads] + (["--cache", a.jax_cache] if a.jax_cache else [])
        jax_env = {"JAX_PLATFORMS": plat, **({"XLA_FLAGS": a.jax_xla_flags} if a.jax_xla_flags else {})}
        jx_env = {"JX_PEER_BACKENDS": be, "JX_PEER_N": a.n, "JX_PEER_M": a.m, "JX_PEER_B": a.batch,
                  "JX_PEER_SKIP": a.skip_jx, "JX_LIMITS": "device",
                  **({"JX_PEER_WORKLOADS": a.workloads} if a.workloads else {})}
        jx_rounds, jax_rounds = [], []
        for r in range(a.rounds):
            jx_json = os.path.join(a.out, f"jx-{kind}-{r}.json")
            jax_json = os.path.join(a.out, f"jax-{kind}-{r}.json")
            run(f"{a.jx} --benchmark_out={jx_json} --benchmark_out_format=json", jx_env, log)
            run(jax_cmd + ["--out", jax_json], jax_env, log)
            jx, jx_ctx = jx_results(jx_json)
            jax, jax_ctx = jax_results(jax_json)
            jx_rounds.append(jx)
            jax_rounds.append(jax)
        timing = None
        if a.gpu_time and kind == "gpu":
            t_json = os.path.join(a.out, "jx-gpu-timing.json")
            run(f"{a.jx} --benchmark_out={t_json} --benchmark_out_format=json", {**jx_env, "JX_VK_TIMING": "1"}, log)
            timing = jx_results(t_json)[0]
        jax_default = None
        if a.jax_default:
            d_json = os.path.join(a.out, f"jax-{kind}-default.json")
            run(jax_cmd + ["--out", d_json, "--precision", "default"], jax_env, log)
            jax_default = jax_results(d_json)[0]
        doc["comparisons"].append(compare(kind, jx_rounds, jx_ctx, jax_rounds, jax_ctx, jax_default, timing))
    with open(os.path.join(a.out, "peers.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(a.out, "peers.md"), "w") as f:
        f.write(markdown(doc))
    print(markdown(doc))


if __name__ == "__main__":
    main()
