// Transposes of the linear primitives: cotangents of the linear inputs from the output
// cotangent `ct`. Partial by design: a primitive without a rule, or a linear primitive used
// nonlinearly (a product of two linear values), throws NonlinearError.
#include <fmt/format.h>

#include "core/replay/policy.h"
#include "core/transform/rules.h"
#include "core/transform/rules_util.h"

namespace jx {
namespace {

using Opt = std::optional<Array>;

[[noreturn]] void nonlinear(Prim p) {
  throw NonlinearError(fmt::format("Nonlinear operation in backward pass for {}", prim_name(p)));
}

// Inverse of slice: scatter ct (the strided window) back into zeros of the operand's shape,
// one axis at a time: interleave s-1 zeros after each element, then pad to the operand size.
Array unslice(Array ct, const Shape& in, const PrimParams& p) {
  const std::size_t nd = in.size();
  for (std::size_t d = 0; d < nd; ++d) {
    const std::int64_t m = ct.shape()[d], s = p.strides[d], start = p.start[d];
    if (m == 0) return np::zeros(in, ct.dtype());
    if (s > 1) {
      Shape ex = ct.shape();
      ex.insert(ex.begin() + static_cast<std::ptrdiff_t>(d) + 1, 1);
      Array e = lax::reshape(ct, ex);
      std::vector<std::int64_t> lo(nd + 1, 0), hi(nd + 1, 0);
      hi[d + 1] = s - 1;
      e = lax::pad(e, lo, hi, 0.0);
      Shape flat = ct.shape();
      flat[d] = m * s;
      e = lax::reshape(e, flat);
      std::vector<std::int64_t> b(nd, 0), lim = flat;
      lim[d] = (m - 1) * s + 1;
      ct = lax::slice(e, b, lim);
    }
    std::vector<std::int64_t> lo(nd, 0), hi(nd, 0);
    lo[d] = start;
    hi[d] = in[d] - start - ct.shape()[d];
    ct = lax::pad(ct, lo, hi, 0.0);
  }
  return ct;
}

// Cotangent of the lhs of dot_general given the rhs value y. With swap_ans the output layout
// has the other operand's free dims first (used for the rhs by swapping the roles).
Array dot_transpose_lhs(const Array& ct, const AVal& x, const Array& y, const std::vector<std::int64_t>& x_contract,
                        const std::vector<std::int64_t>& y_contract, const std::vector<std::int64_t>& x_batch,
                        const std::vector<std::int64_t>& y_batch, bool swap_ans) {
  auto kept = [](std::size_t nd, const auto& a, const auto& b) {
    std::vector<std::int64_t> k;
    for (std::size_t i = 0; i < nd; ++i)
      if (std::find(a.begin(), a.end(), i) == a.end() && std::find(b.begin(), b.end(), i) == b.end())
        k.push_back(static_cast<std::int64_t>(i));
    return k;
  };
  const auto x_kept = kept(x.ndim(), x_contract, x_batch), y_kept = kept(y.ndim(), y_contract, y_batch);
  const auto nb = static_cast<std::int64_t>(x_batch.size());
  const std::int64_t y_start = swap_ans ? nb : nb + static_cast<std::int64_t>(x_kept.size());
  auto ans_y = rules::iota_vec(y_kept.size(), y_start), ans_batch = rules::iota_vec(x_batch.size());
  Array r = lax::dot_general(ct, y, {ans_y, y_kept, ans_batch, y_batch});
  // r's dims stand for x's batch dims, x's kept dims, then x's contracting dims ordered by y's.
  std::vector<std::size_t> order(y_contract.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return y_contract[a] < y_contract[b]; });
  std::vector<std::int64_t> stands = x_batch;
  stands.insert(stands.end(), x_kept.begin(), x_kept.end());
  for (auto i : order) stands.push_back(x_contract[i]);
  std::vector<std::int64_t> perm(stands.size());
  for (std::size_t i = 0; i < stands.size(); ++i) perm[stands[i]] = static_cast<std::int64_t>(i);
  return lax::transpose(r, perm);
}

// reduce_sum's transpose: ct broadcast back over the reduced axes
Array unreduce(const Array& ct, const AVal& x, const std::vector<std::int64_t>& axes) {
  std::vector<std::int64_t> dims;
  for (std::size_t i = 0; i < x.ndim(); ++i)
    if (std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(i)) == axes.end())
      dims.push_back(static_cast<std::int64_t>(i));
  return lax::broadcast_in_dim(ct, x.shape, dims);
}

// broadcast_in_dim's transpose: ct summed over the axes the broadcast created or stretched
Array unbroadcast(const Array& ct, const Shape& s, const PrimParams& params) {
  std::vector<std::int64_t> sum_axes;
  for (std::size_t o = 0; o < params.shape.size(); ++o) {
    auto it = std::find(params.dims.begin(), params.dims.end(), static_cast<std::int64_t>(o));
    if (it == params.dims.end() || (s[it - params.dims.begin()] == 1 && params.shape[o] != 1))
      sum_axes.push_back(static_cast<std::int64_t>(o));
  }
  return lax::reshape(lax::reduce_sum(ct, sum_axes), s);
}

// concatenate's transpose: constant operands get no cotangent, linear ones their slice of ct
// (replay strict_concat_transpose: a constant operand is an error, as in the JS runtime)
std::vector<Opt> unconcatenate(const Array& ct, const std::vector<LinearIn>& in, const PrimParams& params) {
  if (replay::policy().strict_concat_transpose)
    for (const LinearIn& li : in)
      if (!li.linear) nonlinear(Prim::concatenate);
  std::vector<Opt> out;
  std::int64_t off = 0;
  for (const LinearIn& li : in) {
    const std::int64_t n = li.aval.shape[params.axis];
    if (li.linear) {
      std::vector<std::int64_t> b(ct.ndim(), 0), e = ct.shape();
      b[params.axis] = off;
      e[params.axis] = off + n;
      out.push_back(lax::slice(ct, b, e));
    } else {
      out.push_back(std::nullopt);
    }
    off += n;
  }
  return out;
}

}  // namespace

std::vector<Opt> transpose_rule(Prim p, const std::vector<LinearIn>& in, const std::vector<Array>& cts,
                                const PrimParams& params) {
  if (prim_kind(p) == PrimKind::control) return control_transpose(p, in, cts, params);
  if (cts.size() != 1) nonlinear(p);
  const Array& ct = cts[0];
  auto lin = [&](std::size_t i) { return in[i].linear; };
  switch (p) {
    case Prim::neg: return {lax::neg(ct)};
    case Prim::add: return {lin(0) ? Opt(ct) : std::nullopt, lin(1) ? Opt(ct) : std::nullopt};
    case Prim::sub: return {lin(0) ? Opt(ct) : std::nullopt, lin(1) ? Opt(lax::neg(ct)) : std::nullopt};
    case Prim::mul:
      if (lin(0) && lin(1)) nonlinear(p);
      if (lin(0)) return {lax::mul(ct, in[1].value), std::nullopt};
      return {std::nullopt, lax::mul(in[0].value, ct)};
    case Prim::div:
      if (lin(1)) nonlinear(p);
      return {lax::div(ct, in[1].value), std::nullopt};
    case Prim::convert:
      if (!is_floating(in[0].aval.dtype)) return {std::nullopt};
      return {lax::convert_element_type(ct, in[0].aval.dtype)};
    case Prim::reduce_sum: return {unreduce(ct, in[0].aval, params.axes)};
    case Prim::broadcast_in_dim: return {unbroadcast(ct, in[0].aval.shape, params)};
    case Prim::reshape: return {lax::reshape(ct, in[0].aval.shape)};
    case Prim::transpose: {
      std::vector<std::int64_t> inv(params.perm.size());
      for (std::size_t i = 0; i < inv.size(); ++i) inv[params.perm[i]] = static_cast<std::int64_t>(i);
      return {lax::transpose(ct, inv)};
    }
    case Prim::slice: return {unslice(ct, in[0].aval.shape, params)};
    case Prim::rev: return {lax::rev(ct, params.axes)};
    case Prim::pad: {
      std::vector<std::int64_t> lim(in[0].aval.ndim());
      for (std::size_t i = 0; i < lim.size(); ++i) lim[i] = params.lo[i] + in[0].aval.shape[i];
      return {lax::slice(ct, params.lo, lim)};
    }
    case Prim::concatenate: return unconcatenate(ct, in, params);
    case Prim::select: {
      if (lin(0)) nonlinear(p);
      Array z = np::zeros_like(ct);
      return {std::nullopt, lin(1) ? Opt(lax::select(in[0].value, ct, z)) : std::nullopt,
              lin(2) ? Opt(lax::select(in[0].value, z, ct)) : std::nullopt};
    }
    case Prim::dot_general: {
      if (lin(0) && lin(1)) nonlinear(p);
      const auto& q = params;
      if (lin(0))
        return {dot_transpose_lhs(ct, in[0].aval, in[1].value, q.lhs_contract, q.rhs_contract, q.lhs_batch, q.rhs_batch,
                                  false),
                std::nullopt};
      return {std::nullopt, dot_transpose_lhs(ct, in[1].aval, in[0].value, q.rhs_contract, q.lhs_contract, q.rhs_batch,
                                              q.lhs_batch, true)};
    }
    case Prim::triangular_solve:
      if (lin(0)) nonlinear(p);
      return {std::nullopt,
              lax::triangular_solve(in[0].value, ct,
                                    {params.left_side, params.lower, !params.transpose_a, params.unit_diagonal})};
    default: nonlinear(p);
  }
}

}  // namespace jx
