#include "core/base/shape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace jx {

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

std::vector<std::int64_t> row_major_strides(const Shape& s) {
  std::vector<std::int64_t> st(s.size());
  std::int64_t acc = 1;
  for (std::size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

int normalize_axis(std::int64_t axis, std::size_t ndim, const std::string& op, const std::string& what) {
  auto n = static_cast<std::int64_t>(ndim);
  if (axis < -n || axis >= n)
    throw ShapeError(fmt::format("{}: {} {} is out of bounds for an array of rank {}", op, what, axis, n));
  return static_cast<int>(axis < 0 ? axis + n : axis);
}

std::string AVal::str() const { return fmt::format("{}{}", dtype_name(dtype), shape_str(shape)); }

}  // namespace jx
