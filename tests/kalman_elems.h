#pragma once
// Kalman filtering elements for the associative-scan tests of test_vulkan_scan
// (test_vulkan_assoc_scan.cc, test_vulkan_assoc_grad.cc).
#include <tuple>

#include "core/jx.h"

namespace jxt {

// Elements (A [m,m], b [m,1], S [m,m]) composed as (A_b·A_a, A_b·b_a + b_b, A_b·S_a·A_bᵀ + S_b).
using Elem = std::tuple<jx::Array, jx::Array, jx::Array>;
inline Elem kcompose(const Elem& x, const Elem& y) {
  namespace np = jx::np;
  const auto& [A0, b0, S0] = x;
  const auto& [A1, b1, S1] = y;
  return {np::matmul(A1, A0), np::matmul(A1, b0) + b1, np::matmul(np::matmul(A1, S0), np::swapaxes(A1, -1, -2)) + S1};
}
// n elements of m = 2, varying with the position
inline Elem kelems(int n, jx::DType d) {
  namespace np = jx::np;
  using jx::Array;
  Array t = np::arange(0, n, 1, d);
  Array A = np::stack({np::stack({np::cos(t * 0.1) * 0.9, np::sin(t * 0.1) * 0.1}, -1),
                       np::stack({np::sin(t * 0.2) * -0.1, np::cos(t * 0.3) * 0.8}, -1)},
                      -2);
  Array b = np::reshape(np::stack({np::sin(t), np::cos(t)}, -1), {n, 2, 1});
  Array S = np::eye(2, {}, 0, d) * 0.1 + np::reshape(np::abs(np::sin(t)), {n, 1, 1}) * 0.01;
  return {A, b, S};
}

}  // namespace jxt
