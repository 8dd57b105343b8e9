#pragma once
// The scan algorithm's pieces shared by dlm::fit (whole series) and the streamed fit (chunks):
// the model a fit runs, the r/N smoother from a given carry, and the per-step outputs. A chunk
// [t0, t1) run from the carry its predecessor left gives the same steps as the whole scan.
#include <optional>

#include "workloads/dlm/dlm.h"

namespace jx::dlm::detail {

// What dlmfit runs: y in the fit's dtype, V [n], G [m,m], F (the row [m], or a row per step
// [n,m] with covariates), W, the first pass's x0 [m] and C0 [m,m], the model's own row F0.
struct Model {
  Array y, V, G, F, F0, W, x0, C0;
  std::int64_t observed = 0;  // steps with y observed
  std::optional<Array> X;
};
Model model(const Array& y, const Array& s, const std::vector<double>& w, const Options& o,
            const std::optional<Array>& X);

// r/N backward smoother over filter outputs fo (x, C, v, Cp, K per step) starting from the
// carry (r, N) of the step after the last: smoothed means [n,m], covariances [n,m,m], and the
// carry before the first step; given V [n], also the smoother's outputs computed inside the loop:
// xstd = √diag(Cs) [n,m] and ystd = √(F Cs Fᵀ + V²) [n].
struct Smoothed {
  Array xs, Cs, r, N;
  Array xstd, ystd;  // with V only
};
Smoothed rn_smoother(const std::vector<Array>& fo, const Array& obsf, const Array& G, const Array& F, const Array& r0,
                     const Array& N0, const std::optional<Array>& V = std::nullopt);

// The prediction-form Kalman filter as a scan: per step (x, C, v, Cp, K), then the prediction
// after the last step (x, C).
std::vector<Array> filter_scan(const Array& y, const Array& V, const Array& x0, const Array& G, const Array& F,
                               const Array& W, const Array& C0);
// The filter's per-step outputs, elementwise over any shape (the whole series, or one step inside
// a scan) from y (NaN where missing), obs = y observed, F x, v, Cp and V: yhat = F x,
// resid0 = y − yhat, resid = resid0 / V, v and resid2 = v / √Cp (NaN where missing), and the
// five terms the summary sums over observed steps (lik, ssy, Σ resid², Σ resid2², Σ |resid2|/y).
struct OutputTerms {
  Array yhat, resid0, resid, v, resid2;
  std::vector<Array> terms;
};
OutputTerms output_terms(const Array& y, const Array& obs, const Array& Fx, const Array& v, const Array& Cp,
                         const Array& V);
// filter_scan with the outputs computed inside the loop (no pass over the series
// afterwards): per step (x, C, v, Cp, K), the prediction after the last step (x, C), per step
// (yhat, resid0, resid, v NaN where missing, resid2), then the summary's sums [5] (added in step
// order).
std::vector<Array> filter_scan_outputs(const Array& y, const Array& V, const Array& x0, const Array& G, const Array& F,
                                       const Array& W, const Array& C0);

// The filter carrying the first step's fixed-point smoother (what the initialisation pass needs):
// carry (x, C, P, r, N) -> the same after the steps of y, no per-step output. From (x0, C0, I,
// 0, 0) over the whole series, (r, N) are the r/N recursion's carry before the first step; P is
// L₁ᵀ⋯L_tᵀ (L = G − K F), and when it is exactly zero the later steps leave (r, N) as they are.
std::vector<Array> first_state_scan(const Array& y, const Array& V, const Array& G, const Array& F, const Array& W,
                                    const std::vector<Array>& carry);
// first_state_scan's carry before the first step: (x0, C0, I, 0, 0).
std::vector<Array> first_state_start(const Model& md);
// The smoothed mean and covariance of the first step from its prediction (x0, C0) and the
// recursion's final (r, N): x0 + C0 r, C0 − C0 N C0 (symmetrized in float32, as in rn_smoother).
std::pair<Array, Array> smoothed_first(const Array& x0, const Array& C0, const Array& r, const Array& N);

// Per-step outputs from the filter alone ([n] each; v and resid2 NaN where y is missing), and
// the sums over observed steps the summary needs.
struct FilterOutputs {
  Array yhat, resid0, resid, v, Cp, resid2;
  Array sums;  // [5]: lik, ssy, Σ resid², Σ resid2², Σ |resid2|/y
};
FilterOutputs filter_outputs(const std::vector<Array>& fo, const Array& y, const Array& V, const Array& F);
// xstd [n,m] and ystd [n] from the smoothed covariances.
std::pair<Array, Array> smoother_outputs(const Array& Cs, const Array& V, const Array& F);

}  // namespace jx::dlm::detail
