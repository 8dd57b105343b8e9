#pragma once
// Dynamic linear models on the public jx API, following the conventions of the MATLAB/Octave
// DLM toolbox that produced the fixtures in shared/data/dlm:
//   y_t = F x_t + v_t,  v_t ~ N(0, V_t²)        (V: observation std, scalar or per step)
//   x_t = G x_{t-1} + w_t,  w_t ~ N(0, W)        (W = diag(w²))
// Prediction-form Kalman filter (x_t, C_t are one-step predictions; K = G C Fᵀ / Cp,
// C' = G C (G - K F)ᵀ + W), r/N backward smoother, NaN observations treated as missing, and
// the toolbox's two-pass initialisation (x0 from the first season's mean, C0 = diag((|x0₁|/2)²);
// then x0 := smoothed x₁, C0 := 100·smoothed C₁ and run again).
#include <optional>
#include <string>
#include <vector>

#include "core/jx.h"

namespace jx::dlm {

// scan: sequential lax.scans (O(n) depth); assoc: the parallel filter and smoother of Särkkä &
// García-Fernández (2021) as associative scans (O(log n) depth). Equal within rounding.
enum class Algorithm { scan, assoc };
Algorithm parse_algorithm(const std::string& name);  // "scan" | "assoc", else ShapeError naming it

struct Options {
  int order = 1;              // polynomial trend order (0 level, 1 level+slope, 2 ...)
  bool fullseas = false;      // full dummy seasonal with ns-1 states
  int trig = 0;               // number of trigonometric harmonics
  int ns = 12;                // season length
  std::vector<double> arphi;  // AR coefficients
  Algorithm algorithm = Algorithm::scan;
};

// G [m,m] and F [m] of the model (the toolbox's dlmgensys).
std::pair<Array, Array> system_matrices(const Options& o, DType d = DType::float64);

struct Fit {
  Array xf, Cf;                        // one-step predictions: [m,n], [m,m,n]
  Array x, C;                          // smoothed: [m,n], [m,m,n]
  Array xstd;                          // [n,m]
  Array yhat, ystd;                    // [n]
  Array resid0, resid, resid2, v, Cp;  // [n]
  Array G, F, W, V, x0, C0, y;         // F: the model's own row [m - q] (the toolbox's out.F)
  std::optional<Array> X;              // covariates [n,q] (out.XX); their q β states end the state vector
  double lik = 0, s2 = 0, mse = 0, mape = 0, ssy = 0;
  int nobs = 0;
};

// The forward filter alone: per step (x [n,m], C [n,m,m], v [n], Cp [n], K [n,m]), then the
// prediction one step past the data (x [m], C [m,m]).
std::vector<Array> filter(const Array& y, const Array& V, const Array& x0, const Array& G, const Array& F,
                          const Array& W, const Array& C0, Algorithm a = Algorithm::scan);
// -2 log L without the 2π constant (the toolbox's `lik`): differentiable in V, W, G, x0, C0.
Array minus2_log_lik(const Array& y, const Array& V, const Array& x0, const Array& G, const Array& F, const Array& W,
                     const Array& C0, Algorithm a = Algorithm::scan);

// One filter + smoother pass with given x0 [m], C0 [m,m] (the toolbox's dlmsmo).
Fit smooth(const Array& y, const Array& V, const Array& x0, const Array& G, const Array& F, const Array& W,
           const Array& C0, Algorithm a = Algorithm::scan);

// Smoothed means [n,m] and covariances [n,m,m] only (filter + smoother, no host reads): jittable.
std::pair<Array, Array> smoothed_states(const Array& y, const Array& V, const Array& x0, const Array& G, const Array& F,
                                        const Array& W, const Array& C0, Algorithm a = Algorithm::scan);

// The toolbox's dlmfit: s scalar or [n] observation std, w the stds of W's leading diagonal.
// Covariates X [n,q] (the toolbox's and dlm-js's X): y_t = F x_t + X_t β + v_t, β appended to
// the state as q static states (identity in G, no noise in W), so F_t = [F, X_t] per step.
Fit fit(const Array& y, const Array& s, const std::vector<double>& w, const Options& o = {},
        const std::optional<Array>& X = std::nullopt);
// The observation row per step of a fit: [n,m] with covariates, else the one row [m].
Array observation_rows(const Fit& f);

// h-step forecasts from the end of the data: state means [h,m], covariances [h,m,m], and the
// observation mean and std [h] (the last observation std is used for V).
struct Forecast {
  Array x, C, yhat, ystd;
};
// A fit with covariates needs their future values X_future [h,q] (ShapeError otherwise).
Forecast forecast(const Fit& f, std::int64_t h, const std::optional<Array>& X_future = std::nullopt);

// Maximum likelihood for θ = (log V factor, log w...): -2 log L through jit(value_and_grad)
// with x0, C0 fixed by the initial fit (as the toolbox does). Optimizers: Adam with early stop
// on the relative change of the loss, or a damped Newton / Levenberg-Marquardt step with the
// exact Hessian (jx::hessian) or central differences of the gradient.
struct MleOptions {
  enum class Optimizer { adam, newton } optimizer = Optimizer::newton;
  bool exact_hessian = true;
  int max_iter = 200;
  double rtol = 1e-10;          // stop when |Δloss| <= rtol·|loss|
  double learning_rate = 0.05;  // Adam
};
struct Mle {
  double obs_std_factor = 1;  // fitted V = factor · s
  std::vector<double> w;      // fitted process stds
  double lik = 0;             // -2 log L at the optimum
  int iterations = 0;
  // false when the optimizer stopped at its iteration cap, or found no descent step while the
  // gradient was not small; stop_reason says which
  bool converged = false;
  std::string stop_reason;
  std::vector<double> history;  // loss per iteration
  double elapsed_ms = 0, compile_ms = 0;
  Fit fit;  // the smoother pass at the optimum
};
Mle mle(const Array& y, const Array& s, const std::vector<double>& w, const Options& o = {}, const MleOptions& mo = {},
        const std::optional<Array>& X = std::nullopt);

}  // namespace jx::dlm
