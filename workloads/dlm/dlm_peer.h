#pragma once
// The DLM workloads jxlab compares with JAX (bench/bench_peers.cc; bench/peers/jax_kalman.py
// implements the same equations and data) and that the lab's scenarios guard (repros/dlm_peer.cc):
// float32, a synthetic series, state dimension m ∈ {2, 4, 8, 13, 16}: m = 2 local linear trend;
// m = 4 and 8 the trend plus 1 and 3 trigonometric harmonics of period 12; m = 13 the trend plus a
// full seasonal of period 12; m = 16 the trend plus 7 harmonics of period 52 (system_matrices
// builds G and F). W = diag(σ_level², σ_slope², (σ_obs/10)² for each seasonal state).
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "workloads/dlm/dlm.h"

namespace jx::dlm::peer {

// y_t = sin(2πt/365) + 2 sin(2πt/5000) + u_t, u_t ∈ [-0.5, 0.5) from an integer hash of t (the
// same integers in Python), computed in double and rounded to float32.
std::vector<double> series(std::int64_t n);

struct Model {
  Array y, G, F, x0, C0;
  std::int64_t n, m;
};
Options model_options(std::int64_t m);  // throws Error for an m other than 2, 4, 8, 13, 16
Model model(std::int64_t n, std::int64_t m);
// theta = log standard deviations (observation, level, slope) -> (V, W)
std::pair<Array, Array> noise(const Array& theta, std::int64_t n, std::int64_t m);
Array theta0();

// (theta, y) -> outputs, the first a scalar checksum: seq_filter, seq_smoother, par_filter,
// par_smoother, par_grad, par_grad_fwd, par_mle (100 Adam steps on the parallel -2 log L from
// theta; the checksum is the final -2 log L) (bench/bench_peers.cc says what each is).
using Fn = std::function<std::vector<Array>(const Array&, const Array&)>;
Fn workload(const std::string& name, const Model& m);
// B series at once (jx's vmap, as jax.vmap in the peer): series b is y · (1 + b/1000) (rounded to
// float32), theta shared; every output gains a leading batch axis, and the first is summed over
// it (the checksum). B = 1 is the unbatched workload.
Array batch_series(const Model& m, std::int64_t batch);
Fn batched_workload(const std::string& name, const Model& m, std::int64_t batch);
const std::vector<std::string>& workload_names();

}  // namespace jx::dlm::peer
