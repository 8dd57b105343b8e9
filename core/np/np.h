#pragma once
#include <concepts>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/array/array.h"
#include "core/lax/lax.h"

// jx::np: the numpy-like API. Numpy broadcasting and dtype promotion (bool < int32 < float32 <
// float64; C++ double scalars are weakly typed and take the array's float dtype), built on
// jx::lax. Errors are ShapeError naming the function and its operands.
namespace jx::np {

using Axes = std::optional<std::vector<std::int64_t>>;  // nullopt: all axes

// ---- creation ----
// A nested list literal of any depth: {1, 2}, {{1}, {2}}, {{{1, 2}}, {{3, 4}}}. Braces always
// open a level, so {{1.0}, {2.0}} is a [2,1] column.
struct Nested {
  Nested(double v) : scalar(v), leaf(true) {}  // NOLINT: implicit by design
  Nested(std::initializer_list<Nested> items) : items(items) {}
  double scalar = 0.0;
  bool leaf = false;
  std::vector<Nested> items;
};
Array array(std::initializer_list<Nested> v, DType d = DType::float32);
// Host data in row-major order; no shape means 1-D. Double data defaults to float32 (as
// jax.numpy without x64), other element types keep theirs. std::vector overloads are templates
// so that braced lists such as {{1.0}, {2.0}} always mean nested lists.
Array asarray(std::span<const double> data, std::optional<Shape> shape = {}, DType d = DType::float32);
Array asarray(std::span<const float> data, std::optional<Shape> shape = {});
Array asarray(std::span<const std::int32_t> data, std::optional<Shape> shape = {});
Array asarray(const std::vector<bool>& data, std::optional<Shape> shape = {});
template <class T>
requires std::same_as<T, double> Array array(const std::vector<T>& v, std::optional<Shape> s = {},
                                             DType d = DType::float32) {
  return asarray(std::span<const double>(v), std::move(s), d);
}
template <class T>
requires(std::same_as<T, float> || std::same_as<T, std::int32_t> || std::same_as<T, bool>) Array
    array(const std::vector<T>& v, std::optional<Shape> s = {}) {
  if constexpr (std::same_as<T, bool>)
    return asarray(v, std::move(s));
  else
    return asarray(std::span<const T>(v), std::move(s));
}
Array scalar(double v, DType d = DType::float32);
Array full(Shape shape, double v, DType d = DType::float32);
Array zeros(Shape shape, DType d = DType::float32);
Array ones(Shape shape, DType d = DType::float32);
Array zeros_like(const Array& x);
Array ones_like(const Array& x);
Array full_like(const Array& x, double v);
Array eye(std::int64_t n, std::optional<std::int64_t> m = {}, std::int64_t k = 0, DType d = DType::float32);
Array identity(std::int64_t n, DType d = DType::float32);
// int32 when start, stop and step are all integral, else float32 (unless d is given).
Array arange(double stop);
Array arange(double start, double stop, double step = 1.0, std::optional<DType> d = {});
Array linspace(double start, double stop, std::int64_t num = 50, bool endpoint = true, DType d = DType::float32);

// ---- elementwise ----
Array add(const Array& a, const Array& b);
Array subtract(const Array& a, const Array& b);
Array multiply(const Array& a, const Array& b);
Array divide(const Array& a, const Array& b);
Array power(const Array& a, const Array& b);
Array maximum(const Array& a, const Array& b);
Array minimum(const Array& a, const Array& b);
Array less(const Array& a, const Array& b);
Array less_equal(const Array& a, const Array& b);
Array greater(const Array& a, const Array& b);
Array greater_equal(const Array& a, const Array& b);
Array equal(const Array& a, const Array& b);
Array not_equal(const Array& a, const Array& b);
Array logical_and(const Array& a, const Array& b);
Array logical_or(const Array& a, const Array& b);
Array where(const Array& cond, const Array& x, const Array& y);
// Weakly typed scalar operands: the scalar takes the array's dtype when that represents it.
Array weak_scalar(double v, const Array& like);
#define JX_NP_SCALAR_OVERLOADS(name)                                                 \
  inline Array name(const Array& a, double b) { return name(a, weak_scalar(b, a)); } \
  inline Array name(double a, const Array& b) { return name(weak_scalar(a, b), b); }
JX_NP_SCALAR_OVERLOADS(add)
JX_NP_SCALAR_OVERLOADS(subtract)
JX_NP_SCALAR_OVERLOADS(multiply)
JX_NP_SCALAR_OVERLOADS(divide)
JX_NP_SCALAR_OVERLOADS(power)
JX_NP_SCALAR_OVERLOADS(maximum)
JX_NP_SCALAR_OVERLOADS(minimum)
JX_NP_SCALAR_OVERLOADS(less)
JX_NP_SCALAR_OVERLOADS(less_equal)
JX_NP_SCALAR_OVERLOADS(greater)
JX_NP_SCALAR_OVERLOADS(greater_equal)
JX_NP_SCALAR_OVERLOADS(equal)
JX_NP_SCALAR_OVERLOADS(not_equal)
#undef JX_NP_SCALAR_OVERLOADS
inline Array where(const Array& c, const Array& x, double y) { return where(c, x, weak_scalar(y, x)); }
inline Array where(const Array& c, double x, const Array& y) { return where(c, weak_scalar(x, y), y); }

Array negative(const Array& x);
Array exp(const Array& x);
Array log(const Array& x);
Array log1p(const Array& x);
Array sqrt(const Array& x);
Array abs(const Array& x);
Array sign(const Array& x);
Array sin(const Array& x);
Array cos(const Array& x);
Array tanh(const Array& x);
Array square(const Array& x);
Array reciprocal(const Array& x);
Array isnan(const Array& x);
Array isfinite(const Array& x);
Array logical_not(const Array& x);
Array astype(const Array& x, DType d);

// ---- reductions ----
Array sum(const Array& x, Axes axes = {}, bool keepdims = false);
Array prod(const Array& x, Axes axes = {}, bool keepdims = false);
Array max(const Array& x, Axes axes = {}, bool keepdims = false);
Array min(const Array& x, Axes axes = {}, bool keepdims = false);
Array mean(const Array& x, Axes axes = {}, bool keepdims = false);
Array argmax(const Array& x, std::optional<std::int64_t> axis = {});  // nullopt: flattened
Array argmin(const Array& x, std::optional<std::int64_t> axis = {});

// ---- products ----
Array matmul(const Array& a, const Array& b);
Array dot(const Array& a, const Array& b);  // 1-D·1-D inner product, else matmul
Array einsum(const std::string& spec, const std::vector<Array>& operands);
inline Array einsum(const std::string& spec, const Array& a) { return einsum(spec, std::vector<Array>{a}); }
inline Array einsum(const std::string& spec, const Array& a, const Array& b) {
  return einsum(spec, std::vector<Array>{a, b});
}
inline Array einsum(const std::string& spec, const Array& a, const Array& b, const Array& c) {
  return einsum(spec, std::vector<Array>{a, b, c});
}

// ---- shapes ----
Shape broadcast_shapes(const Shape& a, const Shape& b);  // throws ShapeError
Array broadcast_to(const Array& x, const Shape& shape);
Array reshape(const Array& x, Shape shape);  // one entry may be -1
Array ravel(const Array& x);
Array transpose(const Array& x, std::optional<std::vector<std::int64_t>> perm = {});
Array swapaxes(const Array& x, std::int64_t a, std::int64_t b);
Array moveaxis(const Array& x, std::int64_t source, std::int64_t destination);
Array squeeze(const Array& x, Axes axes = {});
Array expand_dims(const Array& x, std::int64_t axis);
Array concatenate(const std::vector<Array>& xs, std::int64_t axis = 0);
Array stack(const std::vector<Array>& xs, std::int64_t axis = 0);
std::vector<Array> split(const Array& x, std::int64_t sections, std::int64_t axis = 0);
std::vector<Array> split(const Array& x, const std::vector<std::int64_t>& indices, std::int64_t axis = 0);
// One (before, after) pair per axis, or a single pair for every axis.
Array pad(const Array& x, const std::vector<std::pair<std::int64_t, std::int64_t>>& widths, double value = 0.0);
Array flip(const Array& x, Axes axes = {});
Array diagonal(const Array& x, std::int64_t offset = 0, std::int64_t axis1 = 0, std::int64_t axis2 = 1);
Array trace(const Array& x, std::int64_t offset = 0, std::int64_t axis1 = 0, std::int64_t axis2 = 1);
Array triu(const Array& x, std::int64_t k = 0);
Array tril(const Array& x, std::int64_t k = 0);

// Static indexing: x[i, a:b:s, ...]. Integers drop their axis; missing trailing entries mean
// whole axes. Bounds are checked (out-of-range starts/stops/indices throw ShapeError).
struct Slice {
  std::optional<std::int64_t> start, stop;
  std::int64_t step = 1;
};
using Index = std::variant<std::int64_t, Slice>;
Array index(const Array& x, const std::vector<Index>& idx);

namespace linalg {
Array cholesky(const Array& a);
Array triangular_solve(const Array& a, const Array& b, const lax::TriangularSolveOptions& o = {});
Array solve(const Array& a, const Array& b);
Array inv(const Array& a);        // the primitive inv (lax::inv)
Array inv_by_lu(const Array& a);  // A⁻¹ = U⁻¹ L⁻¹ Pᵀ through lu and two triangular solves: inv's expansion
std::pair<Array, Array> slogdet(const Array& a);  // (sign, log|det|)
Array det(const Array& a);
}  // namespace linalg

}  // namespace jx::np

namespace jx {
inline Array operator+(const Array& a, const Array& b) { return np::add(a, b); }
inline Array operator-(const Array& a, const Array& b) { return np::subtract(a, b); }
inline Array operator*(const Array& a, const Array& b) { return np::multiply(a, b); }
inline Array operator/(const Array& a, const Array& b) { return np::divide(a, b); }
inline Array operator+(const Array& a, double b) { return np::add(a, b); }
inline Array operator-(const Array& a, double b) { return np::subtract(a, b); }
inline Array operator*(const Array& a, double b) { return np::multiply(a, b); }
inline Array operator/(const Array& a, double b) { return np::divide(a, b); }
inline Array operator+(double a, const Array& b) { return np::add(a, b); }
inline Array operator-(double a, const Array& b) { return np::subtract(a, b); }
inline Array operator*(double a, const Array& b) { return np::multiply(a, b); }
inline Array operator/(double a, const Array& b) { return np::divide(a, b); }
inline Array operator-(const Array& a) { return np::negative(a); }
}  // namespace jx
