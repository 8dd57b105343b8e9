#include "workloads/dlm/dlm_peer.h"

#include <cmath>
#include <fmt/format.h>

#include "core/jx.h"

namespace jx::dlm::peer {

std::vector<double> series(std::int64_t n) {
  std::vector<double> y(static_cast<std::size_t>(n));
  for (std::int64_t t = 0; t < n; ++t) {
    std::uint32_t h = static_cast<std::uint32_t>(t) * 2654435761u;
    h ^= h >> 16;
    h *= 2246822519u;
    h ^= h >> 13;
    const double u = static_cast<double>(h) / 4294967296.0 - 0.5;
    y[static_cast<std::size_t>(t)] = std::sin(2 * M_PI * static_cast<double>(t) / 365.0) +
                                     2 * std::sin(2 * M_PI * static_cast<double>(t) / 5000.0) + u;
  }
  return y;
}

Options model_options(std::int64_t m) {
  Options o;
  o.order = 1;
  switch (m) {
    case 2: break;
    case 4: o.trig = 1; break;
    case 8: o.trig = 3; break;
    case 13: o.fullseas = true; break;
    case 16: o.trig = 7, o.ns = 52; break;
    default: throw Error(fmt::format("dlm peer workloads: no model with m = {} (2, 4, 8, 13, 16)", m));
  }
  return o;
}
Model model(std::int64_t n, std::int64_t m) {
  const DType d = DType::float32;
  Model md;
  md.n = n;
  md.m = m;
  auto ys = series(n);
  md.y = np::array(ys, Shape{n}, d);
  std::tie(md.G, md.F) = system_matrices(model_options(m), d);
  std::vector<double> x0(static_cast<std::size_t>(m), 0.0);
  x0[0] = ys[0];
  md.x0 = np::array(x0, Shape{m}, d);
  md.C0 = np::eye(m, {}, 0, d);
  return md;
}
// theta = log standard deviations (observation, level, slope); W = diag(σ_level², σ_slope²,
// (σ_obs/10)² for every other state)
std::pair<Array, Array> noise(const Array& theta, std::int64_t n, std::int64_t m) {
  Array sd = np::exp(theta);
  Array V = np::broadcast_to(np::index(sd, {std::int64_t{0}}), {n});
  Array w2 = np::square(np::index(sd, {np::Slice{1, 3}}));
  if (m > 2) {
    Array rest = np::broadcast_to(np::square(np::index(sd, {std::int64_t{0}}) * 0.1), {m - 2});
    w2 = np::concatenate({w2, rest});
  }
  return {V, np::eye(m, {}, 0, theta.dtype()) * w2};
}
Array theta0() { return np::log(np::array({0.3, 0.05, 0.002}, DType::float32)); }

namespace {

// The end-to-end fit (#31 1c): kAdamSteps steps of Adam (lr 0.05, β 0.9 / 0.999, ε 1e-8, JAX's
// optax.adam) on -2 log L of the parallel filter from theta, in one fori_loop; outputs the final
// -2 log L (the checksum) and theta. Bias corrections as 1 - β^k with β^k = exp(k log β).
constexpr int kAdamSteps = 100;
Fn mle_fit(const Model& m) {
  const std::int64_t n = m.n, mm = m.m;
  Array G = m.G, F = m.F, x0 = m.x0, C0 = m.C0;
  return [=](const Array& th, const Array& y) {
    auto loss = [=](const Array& t) {
      auto [V, W] = noise(t, n, mm);
      return minus2_log_lik(y, V, x0, G, F, W, C0, Algorithm::assoc);
    };
    using C = std::tuple<Array, Array, Array>;  // theta, first and second moments
    auto step = [&](const Array& i, const C& c) {
      const auto& [t, mo, ve] = c;
      Array g = grad(loss)(t);
      Array m1 = mo * 0.9 + g * 0.1, v1 = ve * 0.999 + g * g * 0.001;
      Array k = np::astype(i, t.dtype()) + 1.0;
      Array mh = m1 / (1.0 - np::exp(k * std::log(0.9))), vh = v1 / (1.0 - np::exp(k * std::log(0.999)));
      return C{t - mh * 0.05 / (np::sqrt(vh) + 1e-8), m1, v1};
    };
    C fit = lax::fori_loop(0, kAdamSteps, step, C{th, np::zeros_like(th), np::zeros_like(th)});
    return std::vector<Array>{loss(std::get<0>(fit)), std::get<0>(fit)};
  };
}

}  // namespace

Fn workload(const std::string& name, const Model& m) {
  const bool par = name.rfind("par_", 0) == 0;
  const Algorithm alg = par ? Algorithm::assoc : Algorithm::scan;
  const std::int64_t n = m.n, mm = m.m;
  Array G = m.G, F = m.F, x0 = m.x0, C0 = m.C0;
  if (name == "seq_filter" || name == "par_filter")
    return [=](const Array& th, const Array& y) {
      auto [V, W] = noise(th, n, mm);
      auto fo = filter(y, V, x0, G, F, W, C0, alg);
      // -2 log L from the filter's innovations, as the checksum
      Array ll = np::sum(fo[2] * fo[2] / fo[3] + np::log(fo[3]));
      return std::vector<Array>{ll, fo[0], fo[1]};
    };
  if (name == "seq_smoother" || name == "par_smoother")
    return [=](const Array& th, const Array& y) {
      auto [V, W] = noise(th, n, mm);
      auto [xs, Cs] = smoothed_states(y, V, x0, G, F, W, C0, alg);
      return std::vector<Array>{np::sum(xs), xs, Cs};
    };
  if (name == "par_grad" || name == "par_grad_fwd")
    return [=](const Array& th, const Array& y) {
      auto loss = [&](const Array& t) {
        auto [V, W] = noise(t, n, mm);
        return minus2_log_lik(y, V, x0, G, F, W, C0, Algorithm::assoc);
      };
      auto [v, g] = name == "par_grad" ? value_and_grad(loss)(th) : value_and_grad(loss, argnums<0>, forward_mode)(th);
      return std::vector<Array>{v, g};
    };
  if (name == "par_mle") return mle_fit(m);
  throw Error("dlm peer workloads: unknown workload '" + name +
              "' (seq_filter, seq_smoother, par_filter, par_smoother, par_grad, par_grad_fwd, par_mle)");
}

Array batch_series(const Model& m, std::int64_t batch) {
  const std::vector<double> y = m.y.to_vector<double>();
  std::vector<double> ys;
  ys.reserve(y.size() * static_cast<std::size_t>(batch));
  for (std::int64_t b = 0; b < batch; ++b)
    for (double v : y) ys.push_back(v * (1.0 + static_cast<double>(b) / 1000.0));
  return np::array(ys, Shape{batch, m.n}, DType::float32);
}

Fn batched_workload(const std::string& name, const Model& m, std::int64_t batch) {
  Fn f = workload(name, m);
  if (batch == 1) return f;
  auto mapped = vmap(f, {std::nullopt, 0});
  return [mapped](const Array& th, const Array& ys) {
    std::vector<Array> out = mapped(th, ys);
    out[0] = np::sum(out[0]);
    return out;
  };
}

const std::vector<std::string>& workload_names() {
  static const std::vector<std::string> v{"seq_filter", "seq_smoother", "par_filter", "par_smoother",
                                          "par_grad",   "par_grad_fwd", "par_mle"};
  return v;
}

}  // namespace jx::dlm::peer
