// Forward-mode rules: output tangents from primals x, tangents t (nullopt = zero), outputs y.
// Total over Prim (switch without default, -Werror=switch). Tangents of non-float outputs are
// dropped by the JVP trace, so rules for comparisons etc. return nullopt.
#include <fmt/format.h>

#include "core/transform/rules.h"
#include "core/transform/rules_util.h"

namespace jx {

using rules::mT;
using rules::Tri;
using rules::tri;

namespace {
using Opt = std::optional<Array>;

Opt add_opt(const Opt& a, const Opt& b) {
  if (!a) return b;
  if (!b) return a;
  return lax::add(*a, *b);
}
Opt neg_opt(const Opt& a) { return a ? Opt(lax::neg(*a)) : std::nullopt; }
Opt mul_opt(const Opt& t, const Array& c) { return t ? Opt(np::multiply(*t, c)) : std::nullopt; }

// d prod(x over axes): move the reduced axes last, flatten them to K, and multiply each
// tangent by the product of the other K-1 factors (a [.., K, K] product with ones on the
// diagonal), which stays exact when some x are zero.
Array prod_jvp(const Array& x, const Array& t, const std::vector<std::int64_t>& axes) {
  std::vector<std::int64_t> perm;
  Shape kept;
  for (std::size_t i = 0; i < x.ndim(); ++i)
    if (std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(i)) == axes.end()) {
      perm.push_back(static_cast<std::int64_t>(i));
      kept.push_back(x.shape()[i]);
    }
  std::int64_t k = 1;
  for (auto a : axes) {
    perm.push_back(a);
    k *= x.shape()[a];
  }
  Shape flat = kept;
  flat.push_back(k);
  Array xr = lax::reshape(lax::transpose(x, perm), flat);
  Array tr = lax::reshape(lax::transpose(t, perm), flat);
  Shape sq = kept;
  sq.insert(sq.end(), {k, k});
  auto dims = rules::iota_vec(kept.size());
  dims.push_back(static_cast<std::int64_t>(kept.size()) + 1);
  Array x2 = lax::broadcast_in_dim(xr, sq, dims);  // x2[..., a, b] = x[..., b]
  Array others =
      np::prod(np::where(np::eye(k, {}, 0, DType::bool_), np::ones({}, x.dtype()), x2), std::vector<std::int64_t>{-1});
  return np::sum(np::multiply(tr, others), std::vector<std::int64_t>{-1});
}

Array max_min_jvp(const Array& x, const Array& t, const Array& y, const std::vector<std::int64_t>& axes) {
  std::vector<std::int64_t> dims;
  for (std::size_t i = 0; i < x.ndim(); ++i)
    if (std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(i)) == axes.end())
      dims.push_back(static_cast<std::int64_t>(i));
  Array mask = lax::convert_element_type(lax::eq(x, lax::broadcast_in_dim(y, x.shape(), dims)), x.dtype());
  // ties share the tangent equally
  return lax::div(lax::reduce_sum(lax::mul(t, mask), axes), lax::reduce_sum(mask, axes));
}

// Triangle of a tangent matrix that triangular_solve actually reads.
Array read_triangle(const Array& da, const PrimParams& p) {
  return tri(da, p.lower ? (p.unit_diagonal ? Tri::strictly_lower : Tri::lower)
                         : (p.unit_diagonal ? Tri::strictly_upper : Tri::upper));
}

// d(a^b) = b a^(b-1) da + log(a) a^b db, with the db term 0 where a == 0
Opt pow_jvp(const std::vector<Array>& x, const std::vector<Opt>& t, const std::vector<Array>& y) {
  Opt da, db;
  if (t[0]) da = lax::mul(*t[0], lax::mul(x[1], lax::pow(x[0], np::subtract(x[1], 1.0))));
  if (t[1]) {
    Array safe_log = np::where(np::equal(x[0], 0.0), np::zeros({}, x[0].dtype()), lax::log(x[0]));
    db = lax::mul(*t[1], lax::mul(safe_log, y[0]));
  }
  return add_opt(da, db);
}

// max/min of two arrays: the tangent of the one chosen; ties split the tangent
Array max_min_elementwise_jvp(Prim p, const std::vector<Array>& x, const Array& t0, const Array& t1) {
  Array first = p == Prim::max ? lax::gt(x[0], x[1]) : lax::lt(x[0], x[1]);
  Array second = p == Prim::max ? lax::lt(x[0], x[1]) : lax::gt(x[0], x[1]);
  Array half = np::multiply(lax::add(t0, t1), 0.5);
  return lax::select(first, t0, lax::select(second, t1, half));
}

// A = L Lᵀ from the lower triangle: dA_s = tril(dA) + tril(dA,-1)ᵀ,
// dL = L Φ(L⁻¹ dA_s L⁻ᵀ), Φ = strictly lower part + half the diagonal.
Array cholesky_jvp(const Array& da, const Array& l) {
  Array das = lax::add(tri(da, Tri::lower), mT(tri(da, Tri::strictly_lower)));
  Array m = lax::triangular_solve(l, das, {.left_side = true, .lower = true});
  m = lax::triangular_solve(l, m, {.left_side = false, .lower = true, .transpose_a = true});
  Array phi = lax::add(tri(m, Tri::strictly_lower), np::multiply(tri(m, Tri::diagonal), 0.5));
  return np::matmul(l, phi);
}

// left: op(A) x = b  =>  op(A) dx = db - op(dA) x;  right: dx op(A) = db - x op(dA)
Array triangular_solve_jvp(const std::vector<Array>& x, const std::vector<Opt>& t, const std::vector<Array>& y,
                           const PrimParams& params) {
  Opt rhs = t[1];
  if (t[0]) {
    Array da = read_triangle(*t[0], params);
    if (params.transpose_a) da = mT(da);
    rhs = add_opt(rhs, lax::neg(params.left_side ? np::matmul(da, y[0]) : np::matmul(y[0], da)));
  }
  return lax::triangular_solve(x[0], *rhs, {params.left_side, params.lower, params.transpose_a, params.unit_diagonal});
}

// A = P L U:  X = L⁻¹ Pᵀ dA U⁻¹,  dL = L tril(X,-1),  dU = triu(X) U,  d(packed) = dL + dU.
Array lu_jvp(const Array& da, const std::vector<Array>& y) {
  const Array& f = y[0];
  Array l =
      lax::add(tri(f, Tri::strictly_lower), np::broadcast_to(np::eye(f.shape().back(), {}, 0, f.dtype()), f.shape()));
  Array u = tri(f, Tri::upper);
  Array b = np::matmul(mT(y[1]), da);
  b = lax::triangular_solve(f, b, {.left_side = true, .lower = true, .transpose_a = false, .unit_diagonal = true});
  Array xm = lax::triangular_solve(f, b, {.left_side = false, .lower = false});
  return lax::add(np::matmul(l, tri(xm, Tri::strictly_lower)), np::matmul(tri(xm, Tri::upper), u));
}

// X = A⁻¹:  Ẋ = -X Ȧ X  (from A X = I: Ȧ X + A Ẋ = 0). X is the primitive's output, so the
// rule differentiates again (higher orders) through inv itself.
Array inv_jvp(const Array& da, const Array& x) { return lax::neg(np::matmul(np::matmul(x, da), x)); }

}  // namespace

std::vector<Opt> jvp_rule(Prim p, const std::vector<Array>& x, const std::vector<Opt>& t, const std::vector<Array>& y,
                          const PrimParams& params) {
  auto T = [&](std::size_t i) { return t[i] ? *t[i] : np::zeros_like(x[i]); };
  switch (p) {
    case Prim::neg: return {neg_opt(t[0])};
    case Prim::exp: return {lax::mul(T(0), y[0])};
    case Prim::log: return {lax::div(T(0), x[0])};
    case Prim::log1p: return {lax::div(T(0), np::add(x[0], 1.0))};
    case Prim::sqrt: return {lax::div(T(0), np::multiply(y[0], 2.0))};
    case Prim::abs: return {lax::mul(T(0), lax::sign(x[0]))};
    case Prim::sin: return {lax::mul(T(0), lax::cos(x[0]))};
    case Prim::cos: return {lax::neg(lax::mul(T(0), lax::sin(x[0])))};
    case Prim::tanh: return {lax::mul(T(0), np::subtract(1.0, lax::mul(y[0], y[0])))};
    case Prim::sign:
    case Prim::logical_not:
    case Prim::isnan:
    case Prim::isfinite:
    JX_CASES_COMPARISON:
    case Prim::logical_and:
    case Prim::logical_or:
    case Prim::argmax:
    case Prim::argmin:
    case Prim::iota:
    case Prim::stop_gradient: return std::vector<Opt>(y.size());
    case Prim::convert:
      if (!is_floating(x[0].dtype()) || !is_floating(params.dtype)) return {std::nullopt};
      return {lax::convert_element_type(T(0), params.dtype)};
    case Prim::add: return {add_opt(t[0], t[1])};
    case Prim::sub: return {add_opt(t[0], neg_opt(t[1]))};
    case Prim::mul: return {add_opt(mul_opt(t[0], x[1]), mul_opt(t[1], x[0]))};
    case Prim::div:  // (t0 - t1 y) / x1
      return {lax::div(*add_opt(t[0], neg_opt(mul_opt(t[1], y[0]))), x[1])};
    case Prim::pow: return {pow_jvp(x, t, y)};
    case Prim::max:
    case Prim::min: return {max_min_elementwise_jvp(p, x, T(0), T(1))};
    case Prim::select: return {lax::select(x[0], T(1), T(2))};
    case Prim::reduce_sum: return {lax::reduce_sum(T(0), params.axes)};
    case Prim::reduce_max:
    case Prim::reduce_min: return {max_min_jvp(x[0], T(0), y[0], params.axes)};
    case Prim::reduce_prod: return {prod_jvp(x[0], T(0), params.axes)};
    case Prim::dot_general: {
      lax::DotDims d{params.lhs_contract, params.rhs_contract, params.lhs_batch, params.rhs_batch};
      Opt a = t[0] ? Opt(lax::dot_general(*t[0], x[1], d)) : std::nullopt;
      Opt b = t[1] ? Opt(lax::dot_general(x[0], *t[1], d)) : std::nullopt;
      return {add_opt(a, b)};
    }
    case Prim::reshape:
    case Prim::transpose:
    case Prim::broadcast_in_dim:
    case Prim::slice:
    case Prim::rev: return {bind1(p, {T(0)}, params)};
    case Prim::pad: {
      PrimParams q = params;
      q.value = 0.0;  // the padding value is a constant
      return {bind1(p, {T(0)}, q)};
    }
    case Prim::concatenate: {
      std::vector<Array> ts;
      for (std::size_t i = 0; i < x.size(); ++i) ts.push_back(T(i));
      return {bind1(p, ts, params)};
    }
    case Prim::cholesky: return {cholesky_jvp(T(0), y[0])};
    case Prim::triangular_solve: return {triangular_solve_jvp(x, t, y, params)};
    case Prim::scan:
    case Prim::associative_scan:
    case Prim::while_loop:
    case Prim::cond: throw Error(fmt::format("jvp: {} is differentiated by control_jvp", prim_name(p)));
    case Prim::lu: return {lu_jvp(T(0), y), std::nullopt, std::nullopt};
    case Prim::inv: return {inv_jvp(T(0), y[0])};
  }
  throw Error(fmt::format("jvp: no rule for {}", prim_name(p)));
}

}  // namespace jx
