#include <cmath>

#include "core/np/np_internal.h"

namespace jx::np {
namespace detail {

std::pair<Array, Array> broadcast_pair(const std::string& op, const Array& a, const Array& b) {
  if (a.shape() == b.shape()) return {a, b};
  Shape s;
  try {
    s = broadcast_shapes(a.shape(), b.shape());
  } catch (const ShapeError&) {
    throw ShapeError(fmt::format("{}: cannot broadcast {} with {}", op, a.aval().str(), b.aval().str()));
  }
  return {broadcast_as(op, a, s), broadcast_as(op, b, s)};
}

Array cast(const Array& x, DType d) { return x.dtype() == d ? x : lax::convert_element_type(x, d); }

}  // namespace detail

using detail::broadcast_pair;
using detail::cast;

namespace {

enum class Rule { arith, floating, compare, logical };

// Numpy-style binary op: promote dtypes per `rule`, broadcast, apply the primitive.
Array binary(const char* name, Prim p, Rule rule, const Array& a0, const Array& b0) {
  auto [a, b] = broadcast_pair(name, a0, b0);
  DType d = promote(a.dtype(), b.dtype());
  switch (rule) {
    case Rule::arith:
      if (d == DType::bool_) d = DType::int32;
      break;
    case Rule::floating:
      if (!is_floating(d)) d = DType::float32;
      break;
    case Rule::compare: break;
    case Rule::logical: d = DType::bool_; break;
  }
  if (rule == Rule::logical) {
    auto to_bool = [](const Array& x) { return x.dtype() == DType::bool_ ? x : not_equal(x, zeros_like(x)); };
    return bind1(p, {to_bool(a), to_bool(b)});
  }
  return bind1(p, {cast(a, d), cast(b, d)});
}

// Float-valued unary functions promote int/bool to float32 (as jax.numpy does).
Array unary_float(Prim p, const Array& x) { return bind1(p, {is_floating(x.dtype()) ? x : cast(x, DType::float32)}); }
Array unary_numeric(Prim p, const Array& x) {
  return bind1(p, {x.dtype() == DType::bool_ ? cast(x, DType::int32) : x});
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape s(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const std::int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ShapeError(fmt::format("cannot broadcast shapes {} and {}", shape_str(a), shape_str(b)));
    s[i] = da == 1 ? db : da;
  }
  return s;
}

Array weak_scalar(double v, const Array& like) {
  DType d = like.dtype();
  if (!is_floating(d) && (v != std::floor(v) || !std::isfinite(v)))
    d = DType::float32;
  else if (d == DType::bool_ && v != 0.0 && v != 1.0)
    d = DType::int32;
  return scalar(v, d);
}

Array add(const Array& a, const Array& b) { return binary("add", Prim::add, Rule::arith, a, b); }
Array subtract(const Array& a, const Array& b) { return binary("subtract", Prim::sub, Rule::arith, a, b); }
Array multiply(const Array& a, const Array& b) { return binary("multiply", Prim::mul, Rule::arith, a, b); }
Array divide(const Array& a, const Array& b) { return binary("divide", Prim::div, Rule::floating, a, b); }
Array power(const Array& a, const Array& b) { return binary("power", Prim::pow, Rule::floating, a, b); }
Array maximum(const Array& a, const Array& b) { return binary("maximum", Prim::max, Rule::arith, a, b); }
Array minimum(const Array& a, const Array& b) { return binary("minimum", Prim::min, Rule::arith, a, b); }
Array less(const Array& a, const Array& b) { return binary("less", Prim::lt, Rule::compare, a, b); }
Array less_equal(const Array& a, const Array& b) { return binary("less_equal", Prim::le, Rule::compare, a, b); }
Array greater(const Array& a, const Array& b) { return binary("greater", Prim::gt, Rule::compare, a, b); }
Array greater_equal(const Array& a, const Array& b) { return binary("greater_equal", Prim::ge, Rule::compare, a, b); }
Array equal(const Array& a, const Array& b) { return binary("equal", Prim::eq, Rule::compare, a, b); }
Array not_equal(const Array& a, const Array& b) { return binary("not_equal", Prim::ne, Rule::compare, a, b); }
Array logical_and(const Array& a, const Array& b) {
  return binary("logical_and", Prim::logical_and, Rule::logical, a, b);
}
Array logical_or(const Array& a, const Array& b) { return binary("logical_or", Prim::logical_or, Rule::logical, a, b); }

Array where(const Array& cond, const Array& x, const Array& y) {
  Shape s;
  try {
    s = broadcast_shapes(broadcast_shapes(cond.shape(), x.shape()), y.shape());
  } catch (const ShapeError&) {
    throw ShapeError(
        fmt::format("where: cannot broadcast {} with {} with {}", cond.aval().str(), x.aval().str(), y.aval().str()));
  }
  const DType d = promote(x.dtype(), y.dtype());
  Array c = cond.dtype() == DType::bool_ ? cond : not_equal(cond, zeros_like(cond));
  return lax::select(detail::broadcast_as("where", c, s), cast(detail::broadcast_as("where", x, s), d),
                     cast(detail::broadcast_as("where", y, s), d));
}

Array negative(const Array& x) { return unary_numeric(Prim::neg, x); }
Array abs(const Array& x) { return unary_numeric(Prim::abs, x); }
Array sign(const Array& x) { return unary_numeric(Prim::sign, x); }
Array exp(const Array& x) { return unary_float(Prim::exp, x); }
Array log(const Array& x) { return unary_float(Prim::log, x); }
Array log1p(const Array& x) { return unary_float(Prim::log1p, x); }
Array sqrt(const Array& x) { return unary_float(Prim::sqrt, x); }
Array sin(const Array& x) { return unary_float(Prim::sin, x); }
Array cos(const Array& x) { return unary_float(Prim::cos, x); }
Array tanh(const Array& x) { return unary_float(Prim::tanh, x); }
Array square(const Array& x) { return multiply(x, x); }
Array reciprocal(const Array& x) { return divide(weak_scalar(1.0, x), x); }

Array isnan(const Array& x) { return is_floating(x.dtype()) ? lax::isnan(x) : zeros(x.shape(), DType::bool_); }
Array isfinite(const Array& x) { return is_floating(x.dtype()) ? lax::isfinite(x) : ones(x.shape(), DType::bool_); }
Array logical_not(const Array& x) {
  return lax::logical_not(x.dtype() == DType::bool_ ? x : not_equal(x, zeros_like(x)));
}
Array astype(const Array& x, DType d) { return cast(x, d); }

}  // namespace jx::np
