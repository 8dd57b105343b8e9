#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/dtype.h"

namespace jx {

using Shape = std::vector<std::int64_t>;

std::int64_t numel(const Shape& s);
std::string shape_str(const Shape& s);                        // "[2,3]"
std::vector<std::int64_t> row_major_strides(const Shape& s);  // in elements
// Normalizes a possibly negative axis against rank `ndim`; throws ShapeError naming `op` and `what`.
int normalize_axis(std::int64_t axis, std::size_t ndim, const std::string& op, const std::string& what);

// Abstract value: what every layer knows about an array without its data.
struct AVal {
  DType dtype = DType::float32;
  Shape shape;
  std::int64_t size() const { return numel(shape); }
  std::size_t ndim() const { return shape.size(); }
  std::size_t bytes() const { return static_cast<std::size_t>(size()) * dtype_size(dtype); }
  std::string str() const;  // "float32[2,2]"
  bool operator==(const AVal&) const = default;
};

}  // namespace jx
