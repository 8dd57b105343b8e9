#pragma once
#include <numeric>

#include "core/np/np.h"

// Small helpers shared by the rule tables.
namespace jx::rules {

inline std::vector<std::int64_t> iota_vec(std::size_t n, std::int64_t start = 0) {
  std::vector<std::int64_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

// Swaps the last two axes (matrix transpose of a batch of matrices).
inline Array mT(const Array& x) { return np::swapaxes(x, -1, -2); }

// Keeps the part of a batch of matrices where (j - i) compares with k as `keep` says.
enum class Tri { lower, strictly_lower, upper, strictly_upper, diagonal };
inline Array tri(const Array& x, Tri keep) {
  const std::int64_t n = x.shape()[x.ndim() - 2], m = x.shape()[x.ndim() - 1];
  Array d = np::subtract(lax::iota(DType::int32, {n, m}, 1), lax::iota(DType::int32, {n, m}, 0));  // j - i
  Array zero = np::zeros({}, DType::int32);
  Array mask;
  switch (keep) {
    case Tri::lower: mask = np::less_equal(d, zero); break;
    case Tri::strictly_lower: mask = np::less(d, zero); break;
    case Tri::upper: mask = np::greater_equal(d, zero); break;
    case Tri::strictly_upper: mask = np::greater(d, zero); break;
    case Tri::diagonal: mask = np::equal(d, zero); break;
  }
  return np::where(mask, x, np::zeros({}, x.dtype()));
}

}  // namespace jx::rules
