#!/usr/bin/env python3
"""JAX peer of bench/bench_peers.cc: the same Kalman workloads, model, series and sizes.

float32, state dimension m (--m): m = 2 local linear trend, G = [[1, 1], [0, 1]], F = [1, 0];
m = 4 / 8 the trend plus 1 / 3 trigonometric harmonics of period 12; m = 13 the trend plus a full
seasonal of period 12; m = 16 the trend plus 7 harmonics of period 52 (as dlm::system_matrices
builds them). V = sd_obs, W = diag(sd_level^2, sd_slope^2, (sd_obs/10)^2 ...), x0 = [y_0, 0, ...],
C0 = I. The equations follow
workloads/dlm/dlm.cc (prediction-form filter, r/N smoother) and workloads/dlm/dlm_assoc.cc
(associative-scan filter and smoother) line by line, so the checksums agree.

  python3 jax_kalman.py --out FILE [--n 100,400,...] [--m 2,13] [--batch 1,64] [--skip seq_smoother:102400[:m[:B]],...]
        [--precision highest|default] [--workloads seq_filter,...]
Platform: JAX_PLATFORMS=cpu or cuda (the driver sets it). Each case: one call to compile and warm
up, then timed calls (result blocked on) until 0.5 s or 20 calls, at least one; the median is kept.
"""
import argparse
import itertools
import json
import math
import os
import platform
import statistics
import sys
import time

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

DT = jnp.float32


def series(n):
    """y_t = sin(2πt/365) + 2 sin(2πt/5000) + u_t with u_t from the integer hash in bench_peers.cc."""
    t = np.arange(n, dtype=np.uint64)
    h = (t * 2654435761) & 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 2246822519) & 0xFFFFFFFF
    h ^= h >> 13
    u = h.astype(np.float64) / 4294967296.0 - 0.5
    tf = t.astype(np.float64)
    return np.sin(2 * math.pi * tf / 365.0) + 2 * np.sin(2 * math.pi * tf / 5000.0) + u


def system_matrices(m):
    """G, F as workloads/dlm/dlm.cc's system_matrices builds them for bench_peers.cc's models."""
    order_trig_full_ns = {2: (0, False, 12), 4: (1, False, 12), 8: (3, False, 12), 13: (0, True, 12), 16: (7, False, 52)}
    trig, full, ns = order_trig_full_ns[m]
    blocks, f = [np.array([[1.0, 1.0], [0.0, 1.0]])], [1.0, 0.0]
    if full:
        k = ns - 1
        g = np.zeros((k, k))
        g[0, :] = -1.0
        for i in range(1, k):
            g[i, i - 1] = 1.0
        blocks.append(g)
        f += [1.0] + [0.0] * (k - 1)
    for i in range(1, trig + 1):
        a = 2.0 * math.pi * i / ns
        c, s = math.cos(a), math.sin(a)
        blocks.append(np.array([[c]]) if 2 * i == ns else np.array([[c, s], [-s, c]]))
        f += [1.0] + [0.0] * (blocks[-1].shape[0] - 1)
    G = np.zeros((m, m))
    o = 0
    for b in blocks:
        G[o:o + b.shape[0], o:o + b.shape[0]] = b
        o += b.shape[0]
    assert o == m and len(f) == m
    return jnp.asarray(G, DT), jnp.asarray(np.array(f), DT)


def noise(theta, n, m):
    sd = jnp.exp(theta)
    w2 = jnp.square(sd[1:3])
    if m > 2:
        w2 = jnp.concatenate([w2, jnp.broadcast_to(jnp.square(sd[0] * 0.1), (m - 2,))])
    return jnp.broadcast_to(sd[0], (n,)), jnp.eye(m, dtype=DT) * w2


def outer(a, b):
    return a[..., :, None] * b[..., None, :]


def filt(y, V, x0, G, F, W, C0):
    obs = jnp.logical_not(jnp.isnan(y))
    of = obs.astype(DT)
    yz = jnp.where(obs, y, 0.0)

    def step(c, inp):
        x, C = c
        yt, vt, ot = inp
        v = ot * (yt - F @ x)
        CF = C @ F
        Cp = F @ CF + ot * vt * vt
        K = (G @ CF) * (ot / Cp)
        L = G - outer(K, F)
        return (G @ x + K * v, G @ C @ L.T + W), (x, C, v, Cp, K)

    _, ys = lax.scan(step, (x0, C0), (yz, V, of))
    return ys, of


def rn_smoother(fo, of, G, F):
    xf, Cf, v, Cp, K = fo

    def step(rn, inp):
        r, N = rn
        xt, Ct, vt, cpt, kt, ot = inp
        L = G - outer(kt, F)
        r2 = L.T @ r + F * (ot * vt / cpt)
        N2 = L.T @ N @ L + outer(F, F) * (ot / cpt)
        return (r2, N2), (xt + Ct @ r2, Ct - Ct @ N2 @ Ct)

    m = G.shape[0]
    _, (xs, Cs) = lax.scan(step, (jnp.zeros(m, DT), jnp.zeros((m, m), DT)), (xf, Cf, v, Cp, K, of), reverse=True)
    return xs, Cs


def inv(a):
    """As dlm_assoc.cc: m = 2 in closed form, larger m through LU."""
    if a.shape[-1] != 2:
        return jnp.linalg.inv(a)
    p, q, r, s = a[..., 0, 0], a[..., 0, 1], a[..., 1, 0], a[..., 1, 1]
    det = p * s - q * r
    return jnp.stack([jnp.stack([s, -q], -1), jnp.stack([-r, p], -1)], -2) / det[..., None, None]


def mv(A, x):
    return jnp.einsum("...ij,...j->...i", A, x)


def mT(A):
    return jnp.swapaxes(A, -1, -2)


def assoc_filter(y, V, x0, G, F, W, C0):
    n, m = y.shape[0], G.shape[0]
    obs = jnp.logical_not(jnp.isnan(y))
    of = obs.astype(DT)
    yz = jnp.where(obs, y, 0.0)
    first = jnp.arange(n) == 0
    I = jnp.broadcast_to(jnp.eye(m, dtype=DT), (n, m, m))
    P = jnp.where(first[:, None, None], C0, W)
    S = jnp.einsum("i,nij,j->n", F, P, F) + V * V
    Sinv = of / S
    K = jnp.einsum("nij,j->ni", P, F) * Sinv[:, None]
    IKF = I - jnp.einsum("ni,j->nij", K, F)
    C = IKF @ P
    A = jnp.where(first[:, None, None], 0.0, IKF @ G)
    b = K * yz[:, None] + jnp.where(first[:, None], mv(IKF, jnp.broadcast_to(x0, (n, m))), 0.0)
    GF = G.T @ F
    notfirst = jnp.logical_not(first).astype(DT)[:, None]
    eta = jnp.einsum("i,n->ni", GF, Sinv * yz) * notfirst
    J = jnp.einsum("i,j,n->nij", GF, GF, Sinv) * notfirst[:, :, None]

    def compose(i, j):  # i earlier, j later
        Ai, bi, Ci, ei, Ji = i
        Aj, bj, Cj, ej, Jj = j
        Ik = jnp.eye(m, dtype=DT)
        M = inv(Ik + Ci @ Jj)  # C, J symmetric: (I + Jj Ci)^-1 = M^T, so Ai^T N = (M Ai)^T
        AjM = Aj @ M
        AiTN = mT(M @ Ai)
        return (AjM @ Ai, mv(AjM, bi + mv(Ci, ej)) + bj, AjM @ Ci @ mT(Aj) + Cj,
                mv(AiTN, ej - mv(Jj, bi)) + ei, AiTN @ Jj @ Ai + Ji)

    pre = lax.associative_scan(compose, (A, b, C, eta, J))
    xu, Pu = pre[1], pre[2]
    xp = jnp.einsum("ij,nj->ni", G, xu)
    Pp = G @ Pu @ G.T + W
    return xu, Pu, xp, Pp


def assoc_outputs(af, y, V, x0, G, F, C0):
    _, _, xp, Pp = af
    of = jnp.logical_not(jnp.isnan(y)).astype(DT)
    xf = jnp.concatenate([x0[None], xp[:-1]], 0)
    Cf = jnp.concatenate([C0[None], Pp[:-1]], 0)
    v = of * (jnp.where(jnp.isnan(y), 0.0, y) - xf @ F)
    Cp = jnp.einsum("i,nij,j->n", F, Cf, F) + of * V * V
    return xf, Cf, v, Cp


def assoc_smoother(af, G):
    xu, Pu, xp, Pp = af
    n = xu.shape[0]
    last = jnp.arange(n) == n - 1
    GP = G @ Pu
    Et = mT(inv(Pp) @ GP)
    E0 = jnp.where(last[:, None, None], 0.0, Et)
    g = xu - mv(E0, xp)
    L = Pu - E0 @ GP

    def compose(a, b):  # a later, b earlier (a forward scan over the time-reversed elements)
        return (b[0] @ a[0], mv(b[0], a[1]) + b[1], b[0] @ a[2] @ mT(b[0]) + b[2])

    rev = lambda t: tuple(x[::-1] for x in t)
    post = rev(lax.associative_scan(compose, rev((E0, g, L))))
    return post[1], post[2]


def minus2_loglik(v, Cp, y):
    return jnp.sum(jnp.where(jnp.logical_not(jnp.isnan(y)), v * v / Cp + jnp.log(Cp), 0.0))


def workloads(y, m):
    n = y.shape[0]
    G, F = system_matrices(m)
    x0 = jnp.zeros(m, DT).at[0].set(y[0])
    C0 = jnp.eye(m, dtype=DT)

    def seq_filter(th, y):
        V, W = noise(th, n, m)
        (xf, Cf, v, Cp, K), _ = filt(y, V, x0, G, F, W, C0)
        return jnp.sum(v * v / Cp + jnp.log(Cp)), xf, Cf

    def seq_smoother(th, y):
        V, W = noise(th, n, m)
        fo, of = filt(y, V, x0, G, F, W, C0)
        xs, Cs = rn_smoother(fo, of, G, F)
        return jnp.sum(xs), xs, Cs

    def par_filter(th, y):
        V, W = noise(th, n, m)
        xf, Cf, v, Cp = assoc_outputs(assoc_filter(y, V, x0, G, F, W, C0), y, V, x0, G, F, C0)
        return jnp.sum(v * v / Cp + jnp.log(Cp)), xf, Cf

    def par_smoother(th, y):
        V, W = noise(th, n, m)
        xs, Cs = assoc_smoother(assoc_filter(y, V, x0, G, F, W, C0), G)
        return jnp.sum(xs), xs, Cs

    def par_loss(th, y):
        V, W = noise(th, n, m)
        _, _, v, Cp = assoc_outputs(assoc_filter(y, V, x0, G, F, W, C0), y, V, x0, G, F, C0)
        return minus2_loglik(v, Cp, y)

    def par_grad(th, y):
        return jax.value_and_grad(par_loss)(th, y)

    def par_grad_fwd(th, y):  # the same value and gradient in forward mode (jvps batched by jacfwd)
        return par_loss(th, y), jax.jacfwd(par_loss)(th, y)

    def par_mle(th, y):  # 100 steps of Adam (optax.adam's update, written out) in one fori_loop
        def step(i, c):
            t, mo, ve = c
            g = jax.grad(par_loss)(t, y)
            mo, ve = 0.9 * mo + 0.1 * g, 0.999 * ve + 0.001 * g * g
            k = (i + 1).astype(DT)
            mh, vh = mo / (1.0 - jnp.exp(k * np.log(0.9))), ve / (1.0 - jnp.exp(k * np.log(0.999)))
            return t - 0.05 * mh / (jnp.sqrt(vh) + 1e-8), mo, ve

        t, _, _ = jax.lax.fori_loop(0, 100, step, (th, jnp.zeros_like(th), jnp.zeros_like(th)))
        return par_loss(t, y), t

    return {"seq_filter": seq_filter, "seq_smoother": seq_smoother, "par_filter": par_filter,
            "par_smoother": par_smoother, "par_grad": par_grad, "par_grad_fwd": par_grad_fwd, "par_mle": par_mle}


def batch_series(base, b):
    """B series at once, as bench_peers.cc's batch_series: series b is y · (1 + b/1000), y rounded to
    float32 first."""
    y = np.asarray(np.asarray(base, np.float32), np.float64)
    return y[None, :] * (1.0 + np.arange(b, dtype=np.float64)[:, None] / 1000.0)


def batched(fn, b):
    """jax.vmap over the series (theta shared); the first output summed over them (the checksum)."""
    if b == 1:
        return fn

    def f(th, ys):
        out = jax.vmap(fn, in_axes=(None, 0))(th, ys)
        return (jnp.sum(out[0]),) + tuple(out[1:])

    return f


def use_cache(folder):
    """JAX's persistent compilation cache in `folder`, every program cached however quick its compile.
    An option this JAX lacks is left out, with a note on stderr (without the first: no cache)."""
    os.makedirs(folder, exist_ok=True)
    for name, value in [("jax_compilation_cache_dir", folder), ("jax_persistent_cache_min_compile_time_secs", 0.0),
                        ("jax_persistent_cache_min_entry_size_bytes", 0)]:
        try:
            jax.config.update(name, value)
        except Exception as e:  # an option this JAX does not have
            print(f"jax_kalman: {name} not set ({e})", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", default="100,400,1600,6400,25600,102400")
    ap.add_argument("--skip", default="", help="workload:N pairs not to run")
    ap.add_argument("--m", default="2", help="state dimensions (2, 4, 8, 13, 16)")
    ap.add_argument("--batch", default="1", help="series at once: B > 1 runs jit(vmap(workload)) over B series")
    ap.add_argument("--workloads", default="", help="only these workloads (default all)")
    ap.add_argument("--precision", default="highest", choices=["highest", "default"],
                    help="jax_default_matmul_precision (default TF32 matmuls lose accuracy at larger m)")
    ap.add_argument("--budget", type=float, default=0.5, help="seconds of timed calls per case")
    ap.add_argument("--cache", default="", help="JAX's persistent compilation cache in this folder (a later run "
                    "loads the compiled programs instead of compiling them again: first_call_ms falls, ms does not move)")
    a = ap.parse_args()
    if a.cache:
        use_cache(a.cache)
    if a.precision == "highest":
        jax.config.update("jax_default_matmul_precision", "highest")
    only = set(w for w in a.workloads.split(",") if w)
    skip = set(s for s in a.skip.split(",") if s)
    dev = jax.devices()[0]
    res = {"peer": "jax", "jax_version": jax.__version__, "platform": dev.platform,
           "device": getattr(dev, "device_kind", str(dev)), "host": platform.node(), "precision": a.precision,
           "results": []}
    if os.environ.get("XLA_FLAGS"):  # a workaround XLA needed for these cells (compare.py --jax-xla-flags)
        res["xla_flags"] = os.environ["XLA_FLAGS"]
    theta = jnp.log(jnp.array([0.3, 0.05, 0.002], DT))
    for m, bb, n in itertools.product([int(x) for x in a.m.split(",")], [int(x) for x in a.batch.split(",")],
                                      [int(x) for x in a.n.split(",")]):
        base = series(n)
        y = jnp.asarray(base, DT)
        for name, fn in workloads(y, m).items():
            if (f"{name}:{n}" in skip or f"{name}:{n}:{m}" in skip or f"{name}:{n}:{m}:{bb}" in skip
                    or (only and name not in only) or (not only and name == "par_mle")):  # par_mle: opt-in
                continue
            f = jax.jit(batched(fn, bb))
            y = jnp.asarray(batch_series(base, bb), DT) if bb > 1 else jnp.asarray(base, DT)
            t0 = time.perf_counter()
            out = jax.block_until_ready(f(theta, y))
            first = time.perf_counter() - t0
            times = []
            while not times or (sum(times) < a.budget and len(times) < 20):
                t0 = time.perf_counter()
                out = jax.block_until_ready(f(theta, y))
                times.append(time.perf_counter() - t0)
            checksum = float(out[0])
            ms = statistics.median(times) * 1e3
            res["results"].append({"workload": name, "n": n, "m": m, "batch": bb, "ms": ms,
                                   "first_call_ms": first * 1e3, "calls": len(times), "checksum": checksum})
            print(f"{name:14s} N={n:7d} m={m:2d} B={bb:5d} {ms:10.3f} ms  (first {first * 1e3:.0f} ms, {len(times)} calls)  checksum {checksum:.6g}",
                  flush=True)
    with open(a.out + ".tmp", "w") as f:
        json.dump(res, f, indent=1)
    os.replace(a.out + ".tmp", a.out)


if __name__ == "__main__":
    main()
