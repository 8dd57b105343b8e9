#pragma once
// Kalman filter for the local linear trend model on the public jx API:
//   x_t = G x_{t-1} + w_t,  w_t ~ N(0, W),  G = [[1, 1], [0, 1]]
//   y_t = F x_t + v_t,      v_t ~ N(0, V),  F = [1, 0]
// theta = log standard deviations (obs, level, slope). Returns (-2 log L without the 2π
// constant, filtered states [N, 2]). One lax.scan over the observations; m = 2.
#include <cmath>
#include <random>

#include "core/jx.h"

namespace jx::workloads {

inline std::pair<Array, Array> local_linear_trend_filter(const Array& theta, const Array& ys) {
  const DType d = ys.dtype();
  Array G = np::array({{1.0, 1.0}, {0.0, 1.0}}, d);
  Array sd = np::exp(theta);
  Array v_var = np::square(np::index(sd, {std::int64_t{0}}));
  Array W = np::eye(2, {}, 0, d) * np::square(np::index(sd, {np::Slice{1, 3}}));
  using C = std::tuple<Array, Array, Array>;  // state mean, covariance, accumulated -2 log L
  auto step = [&](const C& c, const Array& y) {
    const auto& [x, P, ll] = c;
    Array xp = np::matmul(G, x);
    Array Pp = np::matmul(np::matmul(G, P), np::transpose(G)) + W;
    Array S = np::index(Pp, {std::int64_t{0}, std::int64_t{0}}) + v_var;  // F Pp Fᵀ + V
    Array k = np::index(Pp, {np::Slice{}, std::int64_t{0}}) / S;          // Pp Fᵀ / S
    Array v = y - np::index(xp, {std::int64_t{0}});
    Array xn = xp + k * v;
    Array Pn = Pp - np::matmul(np::reshape(k, {2, 1}), np::reshape(k, {1, 2})) * S;
    return std::pair{C{xn, Pn, ll + np::log(S) + v * v / S}, xn};
  };
  Array x0 = np::stack({np::index(ys, {std::int64_t{0}}), np::zeros({}, d)});
  auto [c, xs] = lax::scan(step, C{x0, np::eye(2, {}, 0, d) * 1e7, np::zeros({}, d)}, ys);
  return {std::get<2>(c), xs};
}

// A local-linear-trend series of length n with the given standard deviations, seeded.
inline Array simulate_local_linear_trend(std::int64_t n, unsigned seed, DType d = DType::float64, double obs = 100.0,
                                         double level = 30.0, double slope = 1.0) {
  std::mt19937 g(seed);
  std::normal_distribution<double> z;
  std::vector<double> y(static_cast<std::size_t>(n));
  double mu = 1000.0, beta = 0.0;
  for (auto& v : y) {
    beta += slope * z(g);
    mu += beta + level * z(g);
    v = mu + obs * z(g);
  }
  return np::array(y, Shape{n}, d);
}

}  // namespace jx::workloads
