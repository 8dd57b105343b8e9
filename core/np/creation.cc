#include <cmath>
#include <cstring>
#include <memory>

#include "core/np/np_internal.h"

namespace jx::np {
namespace {

// Converts row-major doubles to dtype d and uploads them.
Array upload(std::span<const double> v, Shape shape, DType d) {
  AVal av{d, std::move(shape)};
  if (av.size() != static_cast<std::int64_t>(v.size()))
    throw ShapeError(fmt::format("array: {} values do not fill shape {}", v.size(), shape_str(av.shape)));
  if (d == DType::float64) return array_from_bytes(std::as_bytes(v), av);  // already in place: no copy
  // not zero-filled: every byte is written below
  const std::unique_ptr<std::byte[]> raw(new std::byte[av.bytes()]);
  visit_dtype(d, [&]<class T>() {
    for (std::size_t i = 0; i < v.size(); ++i) {
      T x;
      if constexpr (std::is_same_v<T, std::uint8_t>)
        x = v[i] != 0.0;
      else if constexpr (std::is_same_v<T, std::int32_t>) {
        if (!fits_int32(v[i])) throw ShapeError(fmt::format("array: value {} does not fit int32", v[i]));
        x = static_cast<T>(v[i]);
      } else
        x = static_cast<T>(v[i]);
      std::memcpy(raw.get() + i * sizeof(T), &x, sizeof(T));
    }
  });
  return array_from_bytes({raw.get(), av.bytes()}, av);
}

template <class T>
Array upload_native(std::span<const T> v, std::optional<Shape> shape) {
  AVal av{dtype_of<T>(), shape ? *shape : Shape{static_cast<std::int64_t>(v.size())}};
  if (av.size() != static_cast<std::int64_t>(v.size()))
    throw ShapeError(fmt::format("array: {} values do not fill shape {}", v.size(), shape_str(av.shape)));
  return array_from_bytes(std::as_bytes(v), av);
}

}  // namespace

namespace {
// Shape of a nested list (every sibling must agree) and its values in row-major order.
void flatten(const Nested& n, std::size_t depth, Shape& shape, std::vector<double>& out) {
  if (n.leaf) {
    if (depth != shape.size()) throw ShapeError("array: ragged nested list (a scalar where a list was expected)");
    out.push_back(n.scalar);
    return;
  }
  if (depth == shape.size()) {
    if (!out.empty()) throw ShapeError("array: ragged nested list (a list where a scalar was expected)");
    shape.push_back(static_cast<std::int64_t>(n.items.size()));
  } else if (depth > shape.size() || shape[depth] != static_cast<std::int64_t>(n.items.size())) {
    throw ShapeError(fmt::format("array: ragged nested list (lists of {} and {} elements at depth {})",
                                 depth < shape.size() ? shape[depth] : 0, n.items.size(), depth));
  }
  for (auto& c : n.items) flatten(c, depth + 1, shape, out);
}
}  // namespace

Array array(std::initializer_list<Nested> v, DType d) {
  Shape shape;
  std::vector<double> flat;
  flatten(Nested(v), 0, shape, flat);
  return upload(flat, shape, d);
}

Array asarray(std::span<const double> data, std::optional<Shape> shape, DType d) {
  return upload(data, shape ? *shape : Shape{static_cast<std::int64_t>(data.size())}, d);
}
Array asarray(std::span<const float> data, std::optional<Shape> shape) { return upload_native(data, std::move(shape)); }
Array asarray(std::span<const std::int32_t> data, std::optional<Shape> shape) {
  return upload_native(data, std::move(shape));
}
Array asarray(const std::vector<bool>& data, std::optional<Shape> shape) {
  std::vector<double> v(data.begin(), data.end());
  return upload(v, shape ? *shape : Shape{static_cast<std::int64_t>(v.size())}, DType::bool_);
}

Array scalar(double v, DType d) { return upload({&v, 1}, {}, d); }

Array full(Shape shape, double v, DType d) {
  for (auto s : shape)
    if (s < 0) throw ShapeError(fmt::format("full: negative dimension in shape {}", shape_str(shape)));
  std::vector<std::int64_t> dims;
  return lax::broadcast_in_dim(scalar(v, d), std::move(shape), dims);
}
Array zeros(Shape shape, DType d) { return full(std::move(shape), 0.0, d); }
Array ones(Shape shape, DType d) { return full(std::move(shape), 1.0, d); }
Array zeros_like(const Array& x) { return zeros(x.shape(), x.dtype()); }
Array ones_like(const Array& x) { return ones(x.shape(), x.dtype()); }
Array full_like(const Array& x, double v) { return full(x.shape(), v, x.dtype()); }

Array eye(std::int64_t n, std::optional<std::int64_t> m_, std::int64_t k, DType d) {
  const std::int64_t m = m_.value_or(n);
  if (n < 0 || m < 0) throw ShapeError(fmt::format("eye: negative dimension ({}, {})", n, m));
  // I[i, j] = (j - i == k)
  Array i = lax::iota(DType::int32, {n, m}, 0), j = lax::iota(DType::int32, {n, m}, 1);
  return astype(equal(subtract(j, i), scalar(static_cast<double>(k), DType::int32)), d);
}
Array identity(std::int64_t n, DType d) { return eye(n, {}, 0, d); }

Array arange(double stop) { return arange(0.0, stop, 1.0); }

Array arange(double start, double stop, double step, std::optional<DType> d) {
  if (step == 0.0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(stop))
    throw ShapeError(fmt::format("arange: invalid range ({}, {}, {})", start, stop, step));
  const bool integral = start == std::floor(start) && stop == std::floor(stop) && step == std::floor(step);
  const DType dt = d.value_or(integral ? DType::int32 : DType::float32);
  const auto n = static_cast<std::int64_t>(std::max(0.0, std::ceil((stop - start) / step)));
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[i] = start + static_cast<double>(i) * step;
  return upload(v, {n}, dt);
}

Array linspace(double start, double stop, std::int64_t num, bool endpoint, DType d) {
  if (num < 0) throw ShapeError(fmt::format("linspace: number of samples {} must be non-negative", num));
  const std::int64_t div = endpoint ? num - 1 : num;
  const double step = div > 0 ? (stop - start) / static_cast<double>(div) : 0.0;
  std::vector<double> v(static_cast<std::size_t>(num));
  for (std::int64_t i = 0; i < num; ++i) v[i] = start + static_cast<double>(i) * step;
  if (endpoint && num > 1) v[num - 1] = stop;
  return upload(v, {num}, d);
}

}  // namespace jx::np
