#include <algorithm>
#include <set>

#include "core/np/np_internal.h"

namespace jx::np {
namespace detail {

std::vector<std::int64_t> norm_axes(const std::string& op, const Axes& axes, std::size_t ndim) {
  std::vector<std::int64_t> out;
  if (!axes) {
    for (std::size_t i = 0; i < ndim; ++i) out.push_back(static_cast<std::int64_t>(i));
    return out;
  }
  std::set<std::int64_t> seen;
  for (auto a : *axes) {
    const auto n = normalize_axis(a, ndim, op, "axis");
    if (!seen.insert(n).second) throw ShapeError(fmt::format("{}: repeated axis {}", op, a));
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace detail

namespace {

Array keep(const Array& r, const Array& x, const std::vector<std::int64_t>& axes, bool keepdims) {
  if (!keepdims) return r;
  Shape s = x.shape();
  for (auto a : axes) s[a] = 1;
  return lax::reshape(r, s);
}

Array reduce(const char* name, Array (*f)(const Array&, std::vector<std::int64_t>), const Array& x0, const Axes& axes,
             bool keepdims, bool bool_to_int) {
  Array x = bool_to_int && x0.dtype() == DType::bool_ ? detail::cast(x0, DType::int32) : x0;
  auto ax = detail::norm_axes(name, axes, x.ndim());
  if (!bool_to_int)
    for (auto a : ax)
      if (x.shape()[a] == 0)
        throw ShapeError(fmt::format("{}: zero-size axis {} of {} has no identity", name, a, x.aval().str()));
  return keep(f(x, ax), x, ax, keepdims);
}

Array arg(const char* name, Array (*f)(const Array&, std::int64_t), const Array& x, std::optional<std::int64_t> axis) {
  if (!axis) {
    if (x.size() == 0)
      throw ShapeError(fmt::format("{}: attempt to get {} of an empty array {}", name, name, x.aval().str()));
    return f(lax::reshape(x, {x.size()}), 0);
  }
  const auto a = normalize_axis(*axis, x.ndim(), name, "axis");
  if (x.shape()[a] == 0) throw ShapeError(fmt::format("{}: empty axis {} of {}", name, a, x.aval().str()));
  return f(x, a);
}

}  // namespace

Array sum(const Array& x, Axes axes, bool keepdims) { return reduce("sum", lax::reduce_sum, x, axes, keepdims, true); }
Array prod(const Array& x, Axes axes, bool keepdims) {
  return reduce("prod", lax::reduce_prod, x, axes, keepdims, true);
}
Array max(const Array& x, Axes axes, bool keepdims) { return reduce("max", lax::reduce_max, x, axes, keepdims, false); }
Array min(const Array& x, Axes axes, bool keepdims) { return reduce("min", lax::reduce_min, x, axes, keepdims, false); }

Array mean(const Array& x, Axes axes, bool keepdims) {
  auto ax = detail::norm_axes("mean", axes, x.ndim());
  std::int64_t count = 1;
  for (auto a : ax) count *= x.shape()[a];
  Array xf = is_floating(x.dtype()) ? x : detail::cast(x, DType::float32);
  Array s = sum(xf, ax, keepdims);
  return divide(s, scalar(static_cast<double>(count), xf.dtype()));  // count 0: NaN, as numpy
}

Array argmax(const Array& x, std::optional<std::int64_t> axis) { return arg("argmax", lax::argmax, x, axis); }
Array argmin(const Array& x, std::optional<std::int64_t> axis) { return arg("argmin", lax::argmin, x, axis); }

}  // namespace jx::np
