#include "core/lax/lax.h"

#include <fmt/format.h>

#include "core/trace/trace.h"

namespace jx::lax {

#define JX_UNARY(name) \
  Array name(const Array& x) { return bind1(Prim::name, {x}); }
JX_UNARY(neg)
JX_UNARY(exp)
JX_UNARY(log)
JX_UNARY(log1p)
JX_UNARY(sqrt)
JX_UNARY(abs)
JX_UNARY(sign)
JX_UNARY(sin)
JX_UNARY(cos)
JX_UNARY(tanh)
JX_UNARY(logical_not)
JX_UNARY(isnan)
JX_UNARY(isfinite)
JX_UNARY(cholesky)
JX_UNARY(stop_gradient)
#undef JX_UNARY

#define JX_BINARY(name) \
  Array name(const Array& a, const Array& b) { return bind1(Prim::name, {a, b}); }
JX_BINARY(add)
JX_BINARY(sub)
JX_BINARY(mul)
JX_BINARY(div)
JX_BINARY(pow)
JX_BINARY(max)
JX_BINARY(min)
JX_BINARY(lt)
JX_BINARY(le)
JX_BINARY(gt)
JX_BINARY(ge)
JX_BINARY(eq)
JX_BINARY(ne)
JX_BINARY(logical_and)
JX_BINARY(logical_or)
#undef JX_BINARY

Array convert_element_type(const Array& x, DType d) {
  PrimParams p;
  p.dtype = d;
  return bind1(Prim::convert, {x}, p);
}

Array select(const Array& pred, const Array& on_true, const Array& on_false) {
  return bind1(Prim::select, {pred, on_true, on_false});
}

static Array reduce(Prim prim, const Array& x, std::vector<std::int64_t> axes) {
  PrimParams p;
  p.axes = std::move(axes);
  return bind1(prim, {x}, p);
}
Array reduce_sum(const Array& x, std::vector<std::int64_t> axes) {
  return reduce(Prim::reduce_sum, x, std::move(axes));
}
Array reduce_max(const Array& x, std::vector<std::int64_t> axes) {
  return reduce(Prim::reduce_max, x, std::move(axes));
}
Array reduce_min(const Array& x, std::vector<std::int64_t> axes) {
  return reduce(Prim::reduce_min, x, std::move(axes));
}
Array reduce_prod(const Array& x, std::vector<std::int64_t> axes) {
  return reduce(Prim::reduce_prod, x, std::move(axes));
}

static Array arg(Prim prim, const Array& x, std::int64_t axis) {
  PrimParams p;
  p.axis = axis;
  return bind1(prim, {x}, p);
}
Array argmax(const Array& x, std::int64_t axis) { return arg(Prim::argmax, x, axis); }
Array argmin(const Array& x, std::int64_t axis) { return arg(Prim::argmin, x, axis); }

Array dot_general(const Array& lhs, const Array& rhs, const DotDims& d) {
  PrimParams p;
  p.lhs_contract = d.lhs_contract;
  p.rhs_contract = d.rhs_contract;
  p.lhs_batch = d.lhs_batch;
  p.rhs_batch = d.rhs_batch;
  return bind1(Prim::dot_general, {lhs, rhs}, p);
}

Array reshape(const Array& x, Shape shape) {
  PrimParams p;
  p.shape = std::move(shape);
  return bind1(Prim::reshape, {x}, p);
}

Array transpose(const Array& x, std::vector<std::int64_t> perm) {
  PrimParams p;
  p.perm = std::move(perm);
  return bind1(Prim::transpose, {x}, p);
}

Array broadcast_in_dim(const Array& x, Shape shape, std::vector<std::int64_t> dims) {
  PrimParams p;
  p.shape = std::move(shape);
  p.dims = std::move(dims);
  return bind1(Prim::broadcast_in_dim, {x}, p);
}

Array slice(const Array& x, std::vector<std::int64_t> start, std::vector<std::int64_t> limit,
            std::vector<std::int64_t> strides) {
  PrimParams p;
  if (strides.empty()) strides.assign(start.size(), 1);
  p.start = std::move(start);
  p.limit = std::move(limit);
  p.strides = std::move(strides);
  return bind1(Prim::slice, {x}, p);
}

Array slice_in_dim(const Array& x, std::int64_t start, std::int64_t stop, std::int64_t stride, std::int64_t axis) {
  const auto nd = static_cast<std::int64_t>(x.ndim());
  if (axis < -nd || axis >= nd)
    throw ShapeError(fmt::format("slice_in_dim: axis {} is out of bounds for {}", axis, x.aval().str()));
  if (axis < 0) axis += nd;
  std::vector<std::int64_t> lo(x.ndim(), 0), hi = x.shape(), st(x.ndim(), 1);
  lo[axis] = start;
  hi[axis] = std::max(start, stop);
  st[axis] = stride;
  return slice(x, std::move(lo), std::move(hi), std::move(st));
}

Array rev(const Array& x, std::vector<std::int64_t> axes) { return reduce(Prim::rev, x, std::move(axes)); }

Array concatenate(const std::vector<Array>& xs, std::int64_t axis) {
  PrimParams p;
  p.axis = axis;
  return bind1(Prim::concatenate, xs, p);
}

Array pad(const Array& x, std::vector<std::int64_t> lo, std::vector<std::int64_t> hi, double value) {
  PrimParams p;
  p.lo = std::move(lo);
  p.hi = std::move(hi);
  p.value = value;
  return bind1(Prim::pad, {x}, p);
}

Array iota(DType d, Shape shape, std::int64_t dimension) {
  PrimParams p;
  p.dtype = d;
  p.shape = std::move(shape);
  p.axis = dimension;
  return bind1(Prim::iota, {}, p);
}

Array triangular_solve(const Array& a, const Array& b, const TriangularSolveOptions& o) {
  PrimParams p;
  p.left_side = o.left_side;
  p.lower = o.lower;
  p.transpose_a = o.transpose_a;
  p.unit_diagonal = o.unit_diagonal;
  return bind1(Prim::triangular_solve, {a, b}, p);
}

Array inv(const Array& a) { return bind1(Prim::inv, {a}); }

std::tuple<Array, Array, Array> lu(const Array& a) {
  auto out = bind(Prim::lu, {a});
  return {std::move(out[0]), std::move(out[1]), std::move(out[2])};
}

}  // namespace jx::lax
