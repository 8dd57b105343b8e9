"""Writes program case files from JAX (run where JAX is installed, e.g. the GPU machine):

    JAX_PLATFORMS=cpu python3 tests/data/jaxpr/make_cases.py OUT_DIR

Each case is an ordinary jax.numpy / lax function; the file holds str(jax.make_jaxpr(f)(*args)),
the inputs and JAX's outputs on the CPU, in the layout of ../shared/data/jaxpr (README there),
plus "consts": the values of the jaxpr's constvars (captured arrays) when it has any.
"""
import json
import os
import sys

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

jax.config.update("jax_default_matmul_precision", "highest")

rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def f64(*shape):
    return rng.standard_normal(shape).astype(np.float64)


def i32(hi, *shape):
    return rng.integers(0, hi, size=shape).astype(np.int32)


def spd(n):
    a = rng.standard_normal((n, n))
    return (a @ a.T + n * np.eye(n)).astype(np.float32)


def softmax(x):
    return jax.nn.softmax(x, axis=-1)


@jax.custom_vjp
def clipped_grad(x):
    return jnp.sin(x)


def _cg_fwd(x):
    return jnp.sin(x), jnp.cos(x)


def _cg_bwd(cos_x, g):
    return (jnp.clip(g * cos_x, -0.5, 0.5),)


clipped_grad.defvjp(_cg_fwd, _cg_bwd)


def kalman_step(c, y):
    m, p = c
    k = p / (p + 1.0)
    m = m + k * (y - m)
    p = (1 - k) * p + 0.1
    return (m, p), m


CASES = {
    # elementwise and composites
    "logistic": (jax.nn.sigmoid, [f32(7)]),
    "expm1_log1p": (lambda x: jnp.expm1(x * 1e-3) + jnp.log1p(jnp.abs(x)), [f32(6)]),
    "integer_pow": (lambda x: x ** 3 + x ** 2 - 1 / x ** 2, [f32(5) + 3]),
    "square_rsqrt": (lambda x: jnp.square(x) + lax.rsqrt(jnp.abs(x) + 1), [f32(5)]),
    "clamp": (lambda x: jnp.clip(x, -0.5, 0.5), [f32(8)]),
    "where": (lambda x: jnp.where(x > 0, x, 0.1 * x), [f32(3, 4)]),
    "tan_sinh_cosh": (lambda x: jnp.tan(x * 0.3) + jnp.sinh(x) + jnp.cosh(x), [f32(5)]),
    "softmax": (softmax, [f32(3, 5)]),
    "logsumexp": (lambda x: jax.nn.logsumexp(x, axis=1), [f32(4, 6)]),
    "relu_gelu": (lambda x: jax.nn.relu(x) + jax.nn.gelu(x, approximate=True), [f32(6)]),
    "mean_var": (lambda x: (jnp.mean(x, axis=0), jnp.var(x, axis=1)), [f32(4, 5)]),
    "norm": (lambda x: jnp.linalg.norm(x), [f32(7)]),
    "minmax_prod": (lambda x: (jnp.max(x, 1), jnp.min(x, 0), jnp.prod(x[:, :2], 1)), [f32(3, 4)]),
    "argmax_argmin": (lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0)), [f32(4, 5)]),
    "any_all": (lambda x: (jnp.any(x > 1), jnp.all(x > -3, axis=0)), [f32(3, 4)]),
    "isnan_isfinite": (lambda x: (jnp.isnan(x), jnp.isfinite(x)), [np.array([1.0, np.nan, np.inf, -2.0], np.float32)]),
    "astype": (lambda x: (x.astype(jnp.int32), (x > 0).astype(jnp.float32)), [f32(5) * 3]),
    # shapes
    "reshape_transpose": (lambda x: x.reshape(3, 4).T.reshape(-1), [f32(12)]),
    "concat_stack": (lambda x, y: (jnp.concatenate([x, y]), jnp.stack([x, y], axis=1)), [f32(4), f32(4)]),
    "pad": (lambda x: jnp.pad(x, ((1, 2), (0, 1))), [f32(2, 3)]),
    "pad_value": (lambda x: jnp.pad(x, (2, 1), constant_values=7.0), [f32(3)]),
    "flip_roll": (lambda x: (jnp.flip(x), jnp.roll(x, 2)), [f32(6)]),
    "slice_stride": (lambda x: (x[1:5], x[::2], x[::-1]), [f32(8)]),
    "squeeze_expand": (lambda x: (jnp.squeeze(x, 0), jnp.expand_dims(x, 2)), [f32(1, 3)]),
    "split": (lambda x: jnp.split(x, [2, 5]), [f32(8)]),
    "broadcast": (lambda x, y: x[:, None] * y[None, :], [f32(3), f32(4)]),
    "tril_triu": (lambda x: (jnp.tril(x), jnp.triu(x, 1)), [f32(3, 3)]),
    "eye_arange": (lambda x: x @ jnp.eye(3) + jnp.arange(3.0), [f32(2, 3)]),
    # products and linear algebra
    "matmul": (lambda a, b: a @ b, [f32(3, 4), f32(4, 2)]),
    "einsum": (lambda a, b: jnp.einsum("bij,bjk->bik", a, b), [f32(2, 3, 4), f32(2, 4, 2)]),
    "outer_dot": (lambda a, b: (jnp.outer(a, b), jnp.dot(a, a)), [f32(3), f32(2)]),
    "cholesky": (lambda a: jnp.linalg.cholesky(a), [spd(3)]),
    "triangular_solve": (lambda a, b: jax.scipy.linalg.solve_triangular(jnp.tril(a) + 3 * jnp.eye(3), b, lower=True),
                         [f32(3, 3), f32(3, 2)]),
    "cho_solve": (lambda a, b: jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(a, lower=True), b), [spd(3), f32(3)]),
    # indexing
    "index_scalar": (lambda x, i: x[i], [f32(5, 3), np.int32(2)]),
    "index_array": (lambda x, i: x[i], [f32(6), i32(6, 4)]),
    "index_2d": (lambda x, i, j: x[i, j], [f32(4, 5), i32(4, 3), i32(5, 3)]),
    "index_column": (lambda x, i: x[:, i], [f32(3, 6), i32(6, 2)]),
    "take": (lambda x, i: jnp.take(x, i, axis=1), [f32(2, 5), i32(5, 3)]),
    "take_along_axis": (lambda x, i: jnp.take_along_axis(x, i, axis=1), [f32(3, 4), i32(4, 3, 2)]),
    "at_set": (lambda x, i: x.at[i].set(0.0), [f32(6), i32(6, 2)]),
    "at_add": (lambda x, i, v: x.at[i].add(v), [f32(6), i32(6, 3), f32(3)]),
    "at_add_dup": (lambda x: x.at[jnp.array([1, 1, 3])].add(1.0), [f32(5)]),
    "dynamic_slice": (lambda x, i: lax.dynamic_slice(x, (i, 0), (2, 3)), [f32(5, 3), np.int32(2)]),
    "dynamic_update_slice": (lambda x, u, i: lax.dynamic_update_slice(x, u, (i,)), [f32(6), f32(2), np.int32(3)]),
    "dynamic_index_in_scan": (lambda x: lax.fori_loop(0, 4, lambda k, a: a + x[k], 0.0), [f32(4)]),
    "out_of_bounds_clip": (lambda x: x[jnp.array([0, 7, -9])], [f32(4)]),
    "gather_grad": (jax.grad(lambda x, i: jnp.sum(x[i] ** 2)), [f32(5), i32(5, 4)]),
    # cumulative
    "cumsum_2d": (lambda x: jnp.cumsum(x, axis=1), [f32(3, 5)]),
    "cumprod": (lambda x: jnp.cumprod(x), [f32(6) * 0.5 + 1]),
    "cummax": (lambda x: lax.cummax(x, axis=0), [f32(7)]),
    "cumsum_reverse": (lambda x: lax.cumsum(x, reverse=True), [f32(6)]),
    # control flow
    "fori_loop": (lambda x: lax.fori_loop(0, 5, lambda i, c: c * 1.1 + i, x), [f32(3)]),
    "while_converge": (lambda x: lax.while_loop(lambda c: jnp.max(jnp.abs(c)) > 0.01, lambda c: c * 0.5, x), [f32(4)]),
    "switch": (lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda v: -v], x), [np.int32(1), f32(3)]),
    "cond_pytree": (lambda p, x: lax.cond(p > 0, lambda a: (a, a * 2), lambda a: (-a, a), x), [np.float32(1.0), f32(3)]),
    "scan_kalman": (lambda ys: lax.scan(kalman_step, (0.0, 1.0), ys), [f32(10)]),
    "scan_matrix": (lambda a, xs: lax.scan(lambda c, x: (a @ c + x, jnp.sum(c)), jnp.zeros(2), xs), [f32(2, 2) * 0.5, f32(6, 2)]),
    "associative_scan": (lambda x: lax.associative_scan(jnp.add, x), [f32(9)]),
    "associative_scan_pair": (lambda a, b: lax.associative_scan(lambda p, q: (p[0] * q[0], q[0] * p[1] + q[1]), (a, b)),
                              [f32(8) * 0.5, f32(8)]),
    "custom_jvp": (lambda x: jax.nn.softplus(x) + jax.nn.silu(x), [f32(6)]),
    "checkpoint": (jax.checkpoint(lambda x: jnp.sin(jnp.sin(x))), [f32(4)]),
    # transformations
    "grad_mlp": (jax.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w) ** 2)), [f32(3, 2), f32(4, 3)]),
    "value_and_grad": (jax.value_and_grad(lambda x: jnp.sum(jnp.exp(x) * jnp.sin(x))), [f32(5)]),
    "jvp": (lambda x, t: jax.jvp(lambda v: jnp.sin(v) * v, (x,), (t,)), [f32(4), f32(4)]),
    "vmap_matvec": (jax.vmap(lambda m, v: m @ v), [f32(3, 2, 2), f32(3, 2)]),
    "vmap_index": (jax.vmap(lambda x, i: x[i]), [f32(3, 5), i32(5, 3)]),
    "hessian": (jax.hessian(lambda x: jnp.sum(x ** 3) + x[0] * x[1]), [f32(3)]),
    "jacfwd": (jax.jacfwd(lambda x: jnp.sin(x) * x[0]), [f32(3)]),
    "grad_scan": (jax.grad(lambda ys: jnp.sum(lax.scan(kalman_step, (0.0, 1.0), ys)[1] ** 2)), [f32(8)]),
    "grad_cumsum": (jax.grad(lambda x: jnp.sum(jnp.cumsum(x) ** 2)), [f32(6)]),
    "grad_logsumexp": (jax.grad(lambda x: jax.nn.logsumexp(x)), [f32(5)]),
    "grad_where": (jax.grad(lambda x: jnp.sum(jnp.where(x > 0, jnp.sqrt(jnp.abs(x) + 1), x))), [f32(6)]),
    # more of what people write
    "solve": (lambda a, b: jnp.linalg.solve(a, b), [spd(3), f32(3)]),
    "inv_det": (lambda a: (jnp.linalg.inv(a), jnp.linalg.det(a)), [spd(3)]),
    "slogdet": (lambda a: jnp.linalg.slogdet(a)[1], [spd(3)]),
    "grad_solve": (jax.grad(lambda a, b: jnp.sum(jnp.linalg.solve(a, b))), [spd(3), f32(3)]),
    "sort_argsort": (lambda x: (jnp.sort(x), jnp.argsort(x)), [f32(7)]),
    "floor_ceil_round": (lambda x: (jnp.floor(x), jnp.ceil(x), jnp.round(x), jnp.trunc(x)), [f32(6) * 3]),
    "mod_rem": (lambda x, y: (jnp.mod(x, y), jnp.remainder(x, 2.5), lax.rem(x, y)), [f32(6) * 4, jnp.abs(f32(6)) + 0.5]),
    "erf_normcdf": (lambda x: (jax.scipy.special.erf(x), jax.scipy.stats.norm.cdf(x), jax.nn.gelu(x, approximate=False)), [f32(5)]),
    "one_hot": (lambda i: jax.nn.one_hot(i, 4), [i32(4, 3)]),
    "tile_repeat": (lambda x: (jnp.tile(x, 2), jnp.repeat(x, 2)), [f32(3)]),
    "linspace_meshgrid": (lambda x: jnp.meshgrid(jnp.linspace(0.0, 1.0, 3), x)[0] * 2, [f32(2)]),
    "log_softmax": (lambda x: jax.nn.log_softmax(x), [f32(2, 4)]),
    "diff_cumsum": (lambda x: jnp.diff(jnp.cumsum(x)), [f32(6)]),
    "atan2_arctan": (lambda x, y: (jnp.arctan2(x, y), jnp.arctan(x)), [f32(4), f32(4)]),
    "random_normal": (lambda k: jax.random.normal(jax.random.wrap_key_data(k), (3,)), [np.array([0, 42], np.uint32)]),
    "minimum_maximum_nan": (lambda x, y: (jnp.minimum(x, y), jnp.fmax(x, y)), [f32(5), f32(5)]),
    "median_percentile": (lambda x: jnp.median(x), [f32(7)]),
    "matrix_power": (lambda a: jnp.linalg.matrix_power(a, 3), [f32(2, 2)]),
    "einsum_trace": (lambda a: jnp.einsum("ii->", a) + jnp.trace(a), [f32(3, 3)]),
    "kron_outer": (lambda a, b: jnp.kron(a, b), [f32(2, 2), f32(2, 2)]),
    "nan_to_num": (lambda x: jnp.nan_to_num(jnp.log(x)), [f32(5)]),
    "logaddexp_hypot": (lambda x, y: (jnp.logaddexp(x, y), jnp.hypot(x, y)), [f32(4), f32(4)]),
    "abs_sign_copysign": (lambda x, y: jnp.copysign(jnp.abs(x), y) * jnp.sign(x), [f32(5), f32(5)]),
    "bool_ops": (lambda x: (jnp.logical_xor(x > 0, x > 1), ~(x > 0), (x > 0) & (x < 1)), [f32(5)]),
    "int_ops": (lambda i, j: (i // 2, i % 3, jnp.maximum(i, j), i * j - 1), [i32(9, 5), i32(9, 5)]),
    "vmap_scan": (jax.vmap(lambda ys: lax.scan(kalman_step, (0.0, 1.0), ys)[1]), [f32(3, 6)]),
    "grad_while_free": (jax.grad(lambda x: jnp.sum(x * lax.fori_loop(0, 3, lambda i, c: c + 1.0, 0.0))), [f32(3)]),
    "jvp_while": (lambda x: jax.jvp(lambda v: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 1.5), (0, v))[1], (x,), (x,)),
                  [f32(3)]),
    "custom_vjp": (lambda x: clipped_grad(x) * 2.0, [f32(5)]),
    "take_clip_fill": (lambda x, i: (jnp.take(x, i, mode="clip"), x.at[i].get(mode="fill", fill_value=-1.0)), [f32(5), np.array([0, 4, 7, -1], np.int32)]),
    "at_mul_min": (lambda x, i: (x.at[i].multiply(2.0), x.at[i].min(0.0)), [f32(5), i32(5, 3)]),
    "lax_map": (lambda x: lax.map(lambda r: jnp.sum(r ** 2), x), [f32(4, 3)]),
    "nested_scan": (lambda x: lax.scan(lambda c, r: (c + lax.scan(lambda d, e: (d * e, d), 1.0, r)[0], c), 0.0, x), [f32(3, 4) * 0.5]),
    "scan_closure": (lambda w, xs: lax.scan(lambda c, x: (jnp.tanh(w @ c + x), c[0]), jnp.zeros(3), xs), [f32(3, 3) * 0.5, f32(5, 3)]),
    "fori_dynamic": (lambda x, n: lax.fori_loop(0, n, lambda i, c: c * 0.9 + i, x), [f32(3), np.int32(4)]),
    "vmap_cond": (jax.vmap(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x)), [f32(6)]),
    "grad_cond": (jax.grad(lambda x: lax.cond(x > 0, lambda v: v ** 2, lambda v: jnp.log(-v + 1), x)), [np.float32(0.7)]),
    "argmax_keepdims": (lambda x: jnp.argmax(x, axis=1, keepdims=True), [f32(3, 4)]),
    "max_pool": (lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2,), (2,), "VALID"), [f32(8)]),
    "convolve": (lambda x, k: jnp.convolve(x, k, mode="same"), [f32(8), f32(3)]),
    "expm1_small": (lambda x: jnp.expm1(x * 1e-6), [f32(5)]),
    "where_nan_grad": (jax.grad(lambda x: jnp.sum(jnp.where(x > 0, x, 0.0) ** 2)), [f32(6)]),
    "x64_cumsum": (lambda x: jnp.cumsum(x) * 2.0, [f64(5)]),
    "x64_gather": (lambda x, i: x[i] + jnp.arange(3.0), [f64(5), np.array([4, 0, 2], np.int64)]),
}


def tensor(a):
    a = np.asarray(a)
    dt = str(a.dtype)
    data = a.reshape(-1).tolist()
    if dt == "bool":
        data = [bool(v) for v in data]
    return {"dtype": dt, "shape": list(a.shape), "data": data}


def main(out):
    os.makedirs(out, exist_ok=True)
    bad = 0
    for name, (f, args) in CASES.items():
        x64 = name.startswith("x64_")
        jax.config.update("jax_enable_x64", x64)
        try:
            closed = jax.make_jaxpr(f)(*args)
            jaxpr = str(closed)
            leaves = jax.tree_util.tree_leaves(f(*[jnp.asarray(a) for a in args]))
        except Exception as e:  # noqa: BLE001
            print(f"{name}: {type(e).__name__}: {e}")
            bad += 1
            continue
        case = {"name": name, "jax_version": jax.__version__, "x64": x64, "jaxpr": jaxpr,
                "inputs": [tensor(a) for a in args], "outputs": [tensor(l) for l in leaves]}
        if closed.consts:  # the values of the jaxpr's constvars, which its text does not show
            case["consts"] = [tensor(c) for c in closed.consts]
        with open(os.path.join(out, name + ".json"), "w") as fh:
            json.dump(case, fh, indent=None)
    print(f"{len(CASES) - bad} cases written to {out}, {bad} failed")


if __name__ == "__main__":
    main(sys.argv[1])
