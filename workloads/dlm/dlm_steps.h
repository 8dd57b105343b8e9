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
  std::optional<Array> X;
};
Model model(const Array& y, const Array& s, const std::vector<double>& w, const Options& o, const std::optional<Array>& X);

// r/N backward smoother over filter outputs fo (x, C, v, Cp, K per step) starting from the
// carry (r, N) of the step after the last: smoothed means [n,m], covariances [n,m,m], and the
// carry before the first step.
struct Smoothed {
  Array xs, Cs, r, N;
};
Smoothed rn_smoother(const std::vector<Array>& fo, const Array& obsf, const Array& G, const Array& F, const Array& r0, const Array& N0);

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
