// Shapes, reductions, products and linear algebra. Parameters JAX leaves out (broadcast_in_dim's
// shape, say) are read from the declared result; bookkeeping ones (sharding, out_sharding,
// precision, accumulation types) do not change the value and are ignored.
#include <cmath>
#include <fmt/format.h>
#include <optional>

#include "core/text/rules.h"

namespace jx::text {
namespace {

using Ints = std::vector<std::int64_t>;

Rule reduce(Array (*f)(const Array&, Ints)) {
  return [f](Call& c) -> std::vector<Array> { return {f(c.in.at(0), c.ints("axes"))}; };
}

// reduce_and / reduce_or over bool: min / max of 0/1.
Rule reduce_bool(Array (*f)(const Array&, Ints)) {
  return [f](Call& c) -> std::vector<Array> {
    if (c.in.at(0).dtype() != DType::bool_) c.fail("only bool operands are supported (bitwise reductions are not)");
    return {cast(f(cast(c.in.at(0), DType::int32), c.ints("axes")), DType::bool_)};
  };
}

// jx: argmax[axis=k]; JAX: argmax[axes=(k,) index_dtype=int32].
Rule arg_reduce(Array (*f)(const Array&, std::int64_t)) {
  return [f](Call& c) -> std::vector<Array> {
    const std::int64_t axis = c.opt("axis") ? c.int_param("axis") : c.int_param("axes");
    return {cast(f(c.in.at(0), axis), c.out.at(0).dtype)};
  };
}

std::vector<Array> dot_general(Call& c) {
  const Value& dn = c.param("dimension_numbers");  // ((lc, rc), (lb, rb))
  if (dn.kind != Value::Kind::tuple || dn.items.size() != 2 || dn.items[0].items.size() != 2 ||
      dn.items[1].items.size() != 2)
    c.fail("dimension_numbers must be ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))");
  lax::DotDims d{c.ints_of(dn.items[0].items[0]), c.ints_of(dn.items[0].items[1]), c.ints_of(dn.items[1].items[0]),
                 c.ints_of(dn.items[1].items[1])};
  Array l = c.in.at(0), r = c.in.at(1);
  const DType want = c.out.at(0).dtype;  // preferred_element_type: compute in the result's type
  return {lax::dot_general(cast(l, want), cast(r, want), d)};
}

std::vector<Array> reshape(Call& c) {
  Array x = c.in.at(0);
  if (const Value* dims = c.opt("dimensions"); dims && !dims->is_none()) x = lax::transpose(x, c.ints_of(*dims));
  const Ints sizes =
      c.opt("new_sizes") ? c.ints("new_sizes") : Ints(c.out.at(0).shape.begin(), c.out.at(0).shape.end());
  return {lax::reshape(x, sizes)};
}

std::vector<Array> broadcast_in_dim(Call& c) {
  const Value* s = c.opt("shape");
  const Shape shape = s && !s->is_none() ? c.ints_of(*s) : c.out.at(0).shape;
  const Ints dims = c.opt("broadcast_dimensions") ? c.ints("broadcast_dimensions") : Ints{};
  return {lax::broadcast_in_dim(c.in.at(0), shape, dims)};
}

std::vector<Array> slice(Call& c) {
  Ints strides = c.opt("strides") ? c.ints("strides") : Ints{};
  return {lax::slice(c.in.at(0), c.ints("start_indices"), c.ints("limit_indices"), strides)};
}

// Interior padding: k cells of `fill` between neighbours along each axis (k = interior[axis]):
// a unit axis after it padded to k + 1, merged, and the trailing k cells cut.
Array interleave(Array x, const Ints& interior, double fill) {
  for (std::size_t d = 0; d < x.ndim(); ++d) {
    const std::int64_t k = interior[d], n = x.shape()[d];
    if (k == 0 || n == 0) continue;
    Shape s = x.shape();
    s.insert(s.begin() + static_cast<std::ptrdiff_t>(d) + 1, 1);
    Ints lo(s.size(), 0), hi(s.size(), 0);
    hi[d + 1] = k;
    Shape merged = x.shape();
    merged[d] = n * (k + 1);
    x = lax::reshape(lax::pad(lax::reshape(x, s), lo, hi, fill), merged);
    x = lax::slice_in_dim(x, 0, n + (n - 1) * k, 1, static_cast<std::int64_t>(d));
  }
  return x;
}

// jx: pad[low high value] x; JAX: pad[padding_config=((lo, hi, interior), ...)] x v, where a
// negative lo/hi crops and v may be any rank-0 value.
std::vector<Array> pad(Call& c) {
  if (c.opt("low")) return {lax::pad(c.in.at(0), c.ints("low"), c.ints("high"), std::stod(c.param("value").text))};
  const Value& cfg = c.param("padding_config");
  const Array& x = c.in.at(0);
  Ints lo, hi, interior;
  for (const Value& d : cfg.items) {
    const Ints v = c.ints_of(d);
    if (v.size() != 3 || v[2] < 0) c.fail("each padding_config entry must be (low, high, interior >= 0)");
    lo.push_back(std::max<std::int64_t>(v[0], 0));
    hi.push_back(std::max<std::int64_t>(v[1], 0));
    interior.push_back(v[2]);
  }
  if (lo.size() != x.ndim()) c.fail("padding_config needs one entry per dimension");
  const Array v = c.in.at(1);
  const double fill = v.is_tracer() ? 0.0 : v.item<double>();
  Array p = lax::pad(interleave(x, interior, fill), lo, hi, fill);
  if (v.is_tracer()) {  // a traced padding value: fill the padded cells from it
    const Array inside = lax::pad(full_like(x, 1.0), lo, hi, 0.0);
    p = lax::select(lax::ne(inside, full_like(inside, 0.0)), p, bcast(v, p.shape()));
  }
  Ints start, limit;
  for (std::size_t i = 0; i < x.ndim(); ++i) {
    const Ints d = c.ints_of(cfg.items[i]);
    start.push_back(d[0] < 0 ? -d[0] : 0);
    limit.push_back(p.shape()[i] - (d[1] < 0 ? -d[1] : 0));
  }
  return {lax::slice(p, start, limit)};
}

std::vector<Array> iota(Call& c) {
  const Value* s = c.opt("shape");
  const Shape shape = s && !s->is_none() ? c.ints_of(*s) : c.out.at(0).shape;
  return {lax::iota(c.dtype_param("dtype"), shape, c.int_param("dimension"))};
}

std::vector<Array> split(Call& c) {
  const std::int64_t axis = c.int_param("axis");
  std::vector<Array> out;
  std::int64_t at = 0;
  for (std::int64_t n : c.ints("sizes")) {
    out.push_back(lax::slice_in_dim(c.in.at(0), at, at + n, 1, axis));
    at += n;
  }
  return out;
}

// stack[axis] xs...: each gains a unit axis, then they are concatenated along it.
std::vector<Array> stack(Call& c) {
  const std::int64_t axis = c.int_param("axis");
  std::vector<Array> parts;
  for (const Array& x : c.in) {
    Shape s = x.shape();
    if (axis < 0 || axis > static_cast<std::int64_t>(s.size())) c.fail(fmt::format("axis {} is out of range", axis));
    s.insert(s.begin() + axis, 1);
    parts.push_back(lax::reshape(x, s));
  }
  return {lax::concatenate(parts, axis)};
}

// reduce_window_{sum,max,min}: the operand padded with the identity, then for each window
// offset a strided slice, combined. (base_dilation other than 1 is not supported.)
Rule reduce_window(Array (*op)(const Array&, const Array&), double id_float, double id_int) {
  return [op, id_float, id_int](Call& c) -> std::vector<Array> {
    const Array x = c.in.at(0);
    const std::size_t r = x.ndim();
    const Ints win = c.ints("window_dimensions"), strides = c.ints("window_strides");
    const Ints wdil = c.opt("window_dilation") ? c.ints("window_dilation") : Ints(r, 1);
    const Ints bdil = c.opt("base_dilation") ? c.ints("base_dilation") : Ints(r, 1);
    if (win.size() != r || strides.size() != r || wdil.size() != r)
      c.fail("window parameters need one entry per dimension");
    for (auto b : bdil)
      if (b != 1) c.fail("base_dilation other than 1 is not supported");
    Ints lo(r, 0), hi(r, 0);
    if (const Value* pd = c.opt("padding"); pd && pd->kind == Value::Kind::tuple)
      for (std::size_t d = 0; d < pd->items.size() && d < r; ++d) {
        const Ints p = c.ints_of(pd->items[d]);
        if (p.size() != 2 || p[0] < 0 || p[1] < 0) c.fail("padding must be non-negative (lo, hi) pairs");
        lo[d] = p[0], hi[d] = p[1];
      }
    const Array xp = lax::pad(x, lo, hi, is_floating(x.dtype()) ? id_float : id_int);
    const Shape out = c.out.at(0).shape;
    std::optional<Array> acc;
    Ints k(r, 0);  // the window offset, odometer order
    for (;;) {
      Ints start(r), limit(r);
      for (std::size_t d = 0; d < r; ++d) {
        start[d] = k[d] * wdil[d];
        limit[d] = start[d] + (out[d] - 1) * strides[d] + 1;
      }
      const Array s = lax::slice(xp, start, limit, strides);
      acc = acc ? op(*acc, s) : s;
      std::size_t d = r;
      while (d-- > 0 && ++k[d] == win[d]) k[d] = 0;
      if (d == static_cast<std::size_t>(-1)) break;
    }
    return {*acc};
  };
}

std::vector<Array> triangular_solve(Call& c) {
  lax::TriangularSolveOptions o{c.flag("left_side", true), c.flag("lower", true), c.flag("transpose_a", false),
                                c.flag("unit_diagonal", false)};
  return {lax::triangular_solve(c.in.at(0), c.in.at(1), o)};
}

}  // namespace

void add_structural_rules(RuleTable& t) {
  t["reduce_sum"] = reduce(lax::reduce_sum);
  t["reduce_max"] = reduce(lax::reduce_max);
  t["reduce_min"] = reduce(lax::reduce_min);
  t["reduce_prod"] = reduce(lax::reduce_prod);
  t["reduce_and"] = reduce_bool(lax::reduce_min);
  t["reduce_or"] = reduce_bool(lax::reduce_max);
  t["argmax"] = arg_reduce(lax::argmax);
  t["argmin"] = arg_reduce(lax::argmin);
  t["dot_general"] = dot_general;
  t["reshape"] = reshape;
  t["squeeze"] =
      t["expand_dims"] = [](Call& c) -> std::vector<Array> { return {lax::reshape(c.in.at(0), c.out.at(0).shape)}; };
  t["transpose"] = [](Call& c) -> std::vector<Array> { return {lax::transpose(c.in.at(0), c.ints("permutation"))}; };
  t["broadcast_in_dim"] = broadcast_in_dim;
  t["slice"] = slice;
  t["rev"] = [](Call& c) -> std::vector<Array> { return {lax::rev(c.in.at(0), c.ints("dimensions"))}; };
  t["concatenate"] = [](Call& c) -> std::vector<Array> { return {lax::concatenate(c.in, c.int_param("dimension"))}; };
  t["pad"] = pad;
  t["iota"] = iota;
  t["split"] = split;
  t["reduce_window_sum"] = reduce_window(lax::add, 0.0, 0.0);
  t["reduce_window_max"] = reduce_window(lax::max, -INFINITY, -2147483648.0);
  t["reduce_window_min"] = reduce_window(lax::min, INFINITY, 2147483647.0);
  // empty / empty2: an uninitialized array in JAX; zeros are one of its values
  t["empty"] = t["empty2"] = [](Call& c) -> std::vector<Array> {
    std::vector<Array> out;
    for (const AVal& a : c.out) out.push_back(bcast(scalar(0, a.dtype), a.shape));
    return out;
  };
  t["stack"] = stack;
  t["cholesky"] = [](Call& c) -> std::vector<Array> { return {lax::cholesky(c.in.at(0))}; };
  t["inv"] = [](Call& c) -> std::vector<Array> { return {lax::inv(c.in.at(0))}; };  // jx's own (JAX has none)
  t["triangular_solve"] = triangular_solve;
}

}  // namespace jx::text
