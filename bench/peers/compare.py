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
"""
import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ["seq_filter", "seq_smoother", "par_filter", "par_smoother", "par_grad", "par_grad_fwd"]
# targets of the performance issue (jxlab / JAX), by comparison and workload, at the largest N:
# (ratio, JAX workload it is measured against). par_grad_fwd is the same value and gradient in
# forward mode; its target row compares it with JAX's value_and_grad (its table row compares it
# with JAX's forward mode, jacfwd).
TARGETS = {
    ("gpu", "par_filter"): (0.2, "par_filter"), ("gpu", "par_smoother"): (0.2, "par_smoother"),
    ("gpu", "seq_filter"): (0.1, "seq_filter"), ("gpu", "seq_smoother"): (0.1, "seq_smoother"),
    ("gpu", "par_grad"): (0.3, "par_grad"), ("gpu", "par_grad_fwd"): (0.3, "par_grad"),
    ("cpu", "seq_filter"): (0.5, "seq_filter"),
}


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


def jx_results(path):
    with open(path) as f:
        doc = json.load(f)
    out = {}
    for b in doc["benchmarks"]:
        # kalman/<workload>/<backend>/<N>/min_time:.../real_time
        parts = b["name"].split("/")
        wl, be, n = parts[1], parts[2], int(parts[3])
        ms = b["real_time"] * {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
        out[(wl, n)] = {"ms": ms, "backend": be, "checksum": b.get("checksum"),
                        **{k: b[k] for k in ("dispatches", "submits", "host_waits", "barriers") if k in b}}
    return out, doc.get("context", {})


def jax_results(path):
    with open(path) as f:
        doc = json.load(f)
    return {(r["workload"], r["n"]): r for r in doc["results"]}, {k: v for k, v in doc.items() if k != "results"}


def agree(a, b):
    ca, cb = a.get("checksum"), b.get("checksum")
    return ca is not None and cb is not None and abs(ca - cb) <= 1e-3 * max(1.0, abs(cb))


def compare(kind, jx, jx_ctx, jax, jax_ctx):
    rows = []
    for (wl, n) in sorted(set(jx) | set(jax), key=lambda k: (WORKLOADS.index(k[0]), k[1])):
        a, b = jx.get((wl, n)), jax.get((wl, n))
        row = {"workload": wl, "n": n, "jx_ms": a and a["ms"], "jax_ms": b and b["ms"]}
        if a:
            row.update({k: a[k] for k in ("dispatches", "submits", "host_waits", "barriers") if k in a})
        if a and b:
            row["checksums"] = [a.get("checksum"), b.get("checksum")]
            row["checksums_agree"] = agree(a, b)
            if row["checksums_agree"]:
                row["ratio"] = a["ms"] / b["ms"]
        rows.append(row)
    targets = []
    for wl in WORKLOADS:
        if (kind, wl) not in TARGETS:
            continue
        t, peer = TARGETS[(kind, wl)]
        ns = [n for (w, n) in jx if w == wl and (peer, n) in jax and agree(jx[(w, n)], jax[(peer, n)])]
        if not ns:
            continue
        n = max(ns)
        ratio = jx[(wl, n)]["ms"] / jax[(peer, n)]["ms"]
        targets.append({"workload": wl, "versus": peer, "n": n, "target": t, "ratio": ratio, "met": ratio <= t})
    return {"kind": kind, "jx_context": jx_ctx, "jax": jax_ctx, "rows": rows, "targets": targets}


def markdown(doc):
    lines = [f"# jxlab vs JAX, {doc['date']} on {doc['machine']}", "",
             f"commit {doc['commit']}; driver `bench/peers/compare.py`; float32 local linear trend (m = 2).", ""]
    for c in doc["comparisons"]:
        who = "vulkan vs JAX on the GPU" if c["kind"] == "gpu" else "native vs JAX on the CPU"
        lines += [f"## {who} ({c['jax'].get('device', '?')}, JAX {c['jax'].get('jax_version', '?')})", "",
                  "| workload | N | jxlab ms | JAX ms | ratio | dispatches | submits |", "|---|---|---|---|---|---|---|"]
        for r in c["rows"]:
            f = lambda v, p=3: "—" if v is None else f"{v:.{p}f}"
            ratio = f(r.get("ratio"), 3) if "ratio" in r else ("checksums differ" if "checksums" in r else "—")
            lines.append(f"| {r['workload']} | {r['n']} | {f(r['jx_ms'])} | {f(r['jax_ms'])} | {ratio} | "
                         f"{f(r.get('dispatches'), 0)} | {f(r.get('submits'), 0)} |")
        lines += ["", "| target | N | ratio | target | met |", "|---|---|---|---|---|"]
        for t in c["targets"]:
            vs = f" (vs JAX {t['versus']})" if t.get("versus", t["workload"]) != t["workload"] else ""
            lines.append(f"| {t['workload']}{vs} | {t['n']} | {t['ratio']:.3f} | ≤ {t['target']} | {'yes' if t['met'] else 'no'} |")
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
    ap.add_argument("--commit", default=os.environ.get("JX_COMMIT", "unknown"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    log = os.path.join(a.out, "peers.log")
    doc = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.node()} ({platform.processor() or platform.machine()})",
           "commit": a.commit, "driver": "bench/peers/compare.py", "comparisons": []}
    kinds = (["gpu"] if a.gpu else []) + (["cpu"] if a.cpu else [])
    for kind in kinds:
        be, plat = ("vulkan", "cuda") if kind == "gpu" else ("native", "cpu")
        jx_json = os.path.join(a.out, f"jx-{kind}.json")
        jax_json = os.path.join(a.out, f"jax-{kind}.json")
        run(f"{a.jx} --benchmark_out={jx_json} --benchmark_out_format=json",
            {"JX_PEER_BACKENDS": be, "JX_PEER_N": a.n, "JX_PEER_SKIP": a.skip_jx, "JX_LIMITS": "device"}, log)
        run([sys.executable, os.path.join(HERE, "jax_kalman.py"), "--out", jax_json, "--n", a.n, "--skip", a.skip_jax],
            {"JAX_PLATFORMS": plat}, log)
        jx, jx_ctx = jx_results(jx_json)
        jax, jax_ctx = jax_results(jax_json)
        doc["comparisons"].append(compare(kind, jx, jx_ctx, jax, jax_ctx))
    with open(os.path.join(a.out, "peers.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(a.out, "peers.md"), "w") as f:
        f.write(markdown(doc))
    print(markdown(doc))


if __name__ == "__main__":
    main()
