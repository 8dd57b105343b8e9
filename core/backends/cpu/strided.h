#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "core/base/shape.h"

namespace jx {

// Visits every index of `shape` in row-major order, calling f(offs) where offs[k] =
// base[k] + sum_d idx[d] * strides[k][d]. Strides may be zero (broadcast) or negative (rev).
template <std::size_t K, class F>
void strided_loop(const Shape& shape, const std::array<std::vector<std::int64_t>, K>& strides,
                  std::array<std::int64_t, K> base, F&& f) {
  if (numel(shape) == 0) return;
  const std::size_t nd = shape.size();
  if (nd == 0) {
    f(base);
    return;
  }
  std::vector<std::int64_t> idx(nd, 0);
  std::array<std::int64_t, K> offs = base;
  const std::int64_t inner = shape[nd - 1];
  for (;;) {
    std::array<std::int64_t, K> o = offs;
    for (std::int64_t j = 0; j < inner; ++j) {
      f(o);
      for (std::size_t k = 0; k < K; ++k) o[k] += strides[k][nd - 1];
    }
    std::size_t d = nd - 1;
    while (d-- > 0) {
      ++idx[d];
      for (std::size_t k = 0; k < K; ++k) offs[k] += strides[k][d];
      if (idx[d] < shape[d]) break;
      for (std::size_t k = 0; k < K; ++k) offs[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return;
  }
}

}  // namespace jx
