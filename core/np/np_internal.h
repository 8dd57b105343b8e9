#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/np/np.h"
#include "core/trace/trace.h"

namespace jx::np::detail {

// Brings a and b to their common broadcast shape; `op` names the caller in errors.
std::pair<Array, Array> broadcast_pair(const std::string& op, const Array& a, const Array& b);
Array broadcast_as(const std::string& op, const Array& x, const Shape& shape);
Array cast(const Array& x, DType d);  // no-op when already d
// Normalized, sorted, unique axes; nullopt means all. Throws ShapeError naming op.
std::vector<std::int64_t> norm_axes(const std::string& op, const Axes& axes, std::size_t ndim);

}  // namespace jx::np::detail
