#include "workloads/dlm/dlm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <span>

#include "core/backends/backend.h"
#include "core/instrument/instrument.h"
#include "workloads/dlm/dlm_assoc.h"
#include "workloads/dlm/dlm_steps.h"

namespace jx::dlm {
namespace {

Array outer(const Array& a, const Array& b) { return np::einsum("i,j->ij", a, b); }

// F is one observation row [m], or a row per step [n,m] (covariates: F_t = [F, X_t]); the
// one-row forms are the ones the model without covariates always ran.
Array rows_dot(const Array& F, const Array& x) {
  return F.ndim() == 1 ? np::matmul(x, F) : np::einsum("ni,ni->n", F, x);
}
Array rows_quad(const Array& F, const Array& C) {
  return F.ndim() == 1 ? np::einsum("i,nij,j->n", F, C, F) : np::einsum("ni,nij,nj->n", F, C, F);
}

// Block-diagonal stack of two square matrices (either may be empty).
Array stack_blocks(const Array& a, const Array& b) {
  if (a.size() == 0) return b;
  if (b.size() == 0) return a;
  const std::int64_t na = a.shape()[0], nb = b.shape()[0];
  return np::concatenate({np::pad(a, {{0, 0}, {0, nb}}), np::pad(b, {{0, 0}, {na, 0}})}, 0);
}

// The filter's per-step outputs from the parallel filter: predictions x0 for step 0, then
// G x_{t-1|t-1}; innovations, their variances and the gains from those.
std::vector<Array> assoc_outputs(const detail::AssocFilter& af, const Array& y, const Array& V, const Array& x0,
                                 const Array& G, const Array& F, const Array& C0) {
  const std::int64_t n = y.shape()[0];
  Array of = np::astype(np::logical_not(np::isnan(y)), y.dtype());
  Array xf = np::concatenate({np::expand_dims(x0, 0), np::index(af.xp, {np::Slice{0, n - 1}})}, 0);
  Array Cf = np::concatenate({np::expand_dims(C0, 0), np::index(af.Pp, {np::Slice{0, n - 1}})}, 0);
  Array v = of * (np::where(np::isnan(y), 0.0, y) - rows_dot(F, xf));
  Array Cp = rows_quad(F, Cf) + of * V * V;
  Array GCF = F.ndim() == 1 ? np::einsum("ij,njk,k->ni", G, Cf, F) : np::einsum("ij,njk,nk->ni", G, Cf, F);
  Array K = GCF * np::expand_dims(of / Cp, -1);
  return {xf, Cf, v, Cp, K, np::index(af.xp, {std::int64_t{n - 1}}), np::index(af.Pp, {std::int64_t{n - 1}})};
}

}  // namespace

Algorithm parse_algorithm(const std::string& name) {
  if (name == "scan") return Algorithm::scan;
  if (name == "assoc") return Algorithm::assoc;
  throw ShapeError(fmt::format("dlm: unknown algorithm \"{}\" (expected scan or assoc)", name));
}

namespace {
// A small square matrix on the host, row-major: the model's matrices are built here (static,
// m <= a few dozen) and uploaded once, so setting up a fit launches no kernel.
struct HostSquare {
  std::int64_t n = 0;
  std::vector<double> a;
  double& at(std::int64_t i, std::int64_t j) { return a[static_cast<std::size_t>(i * n + j)]; }
  static HostSquare zeros(std::int64_t n) { return {n, std::vector<double>(static_cast<std::size_t>(n * n), 0.0)}; }
  Array array(DType d) const { return np::array(a, Shape{n, n}, d); }
};
// Block-diagonal stack [a 0; 0 b].
HostSquare stack_blocks(const HostSquare& a, const HostSquare& b) {
  HostSquare r = HostSquare::zeros(a.n + b.n);
  for (std::int64_t i = 0; i < a.n; ++i)
    for (std::int64_t j = 0; j < a.n; ++j) r.at(i, j) = a.a[static_cast<std::size_t>(i * a.n + j)];
  for (std::int64_t i = 0; i < b.n; ++i)
    for (std::int64_t j = 0; j < b.n; ++j) r.at(a.n + i, a.n + j) = b.a[static_cast<std::size_t>(i * b.n + j)];
  return r;
}
}  // namespace

std::pair<Array, Array> system_matrices(const Options& o, DType d) {
  if (o.order < 0) throw ShapeError(fmt::format("dlm: trend order {} must be >= 0", o.order));
  if (o.ns < 2) throw ShapeError(fmt::format("dlm: season length ns = {} must be >= 2", o.ns));
  if (o.trig < 0 || 2 * o.trig > o.ns)
    throw ShapeError(fmt::format("dlm: trig = {} must be between 0 and ns/2 = {}", o.trig, o.ns / 2.0));
  // local polynomial trend: ones on the diagonal and the superdiagonal
  const std::int64_t mt = o.order + 1;
  HostSquare G = HostSquare::zeros(mt);
  for (std::int64_t i = 0; i < mt; ++i) {
    G.at(i, i) = 1.0;
    if (i + 1 < mt) G.at(i, i + 1) = 1.0;
  }
  std::vector<double> f(static_cast<std::size_t>(mt), 0.0);
  f[0] = 1.0;
  auto add_block = [&](const HostSquare& b) {  // its first state is the observed one
    G = stack_blocks(G, b);
    f.push_back(1.0);
    for (std::int64_t i = 1; i < b.n; ++i) f.push_back(0.0);
  };
  if (o.fullseas) {
    const std::int64_t k = o.ns - 1;  // first row -1, subdiagonal ones
    HostSquare gs = HostSquare::zeros(k);
    for (std::int64_t j = 0; j < k; ++j) gs.at(0, j) = -1.0;
    for (std::int64_t i = 1; i < k; ++i) gs.at(i, i - 1) = 1.0;
    add_block(gs);
  } else {
    for (int i = 1; i <= o.trig; ++i) {
      const double a = 2.0 * M_PI * i / o.ns, c = std::cos(a), s = std::sin(a);
      // the redundant sine state of the Nyquist harmonic is dropped
      add_block(2 * i == o.ns ? HostSquare{1, {c}} : HostSquare{2, {c, s, -s, c}});
    }
  }
  if (!o.arphi.empty()) {
    const std::int64_t k = static_cast<std::int64_t>(o.arphi.size());
    HostSquare ga = HostSquare::zeros(k);  // [phi, [I; 0]]
    for (std::int64_t i = 0; i < k; ++i) {
      ga.at(i, 0) = o.arphi[static_cast<std::size_t>(i)];
      if (i + 1 < k) ga.at(i, i + 1) = 1.0;
    }
    add_block(ga);
  }
  return {G.array(d), np::array(f, Shape{static_cast<std::int64_t>(f.size())}, d)};
}

std::vector<Array> filter(const Array& y, const Array& V, const Array& x0, const Array& G, const Array& F,
                          const Array& W, const Array& C0, Algorithm alg) {
  if (alg == Algorithm::assoc) return assoc_outputs(detail::assoc_filter(y, V, x0, G, F, W, C0), y, V, x0, G, F, C0);
  return detail::filter_scan(y, V, x0, G, F, W, C0);
}

namespace detail {
namespace {
using FC = std::pair<Array, Array>;  // x, C (predictions for the current step)
// One step of the prediction-form filter from (x, C): F x, the innovation v = y − F x and its
// variance Cp = F C Fᵀ + V² (observed steps; v, K zero when missing), the gain K = G C Fᵀ / Cp,
// and the next prediction (G x + K v, G C Lᵀ + W with L = G − K F).
struct KalmanStep {
  Array Fx, v, Cp, K, L;  // L = G − K F
  FC next;
};
KalmanStep kalman_step(const FC& c, const Array& yt, const Array& vt, const Array& ot, const Array& Ft, const Array& G,
                       const Array& W) {
  const auto& [x, C] = c;
  KalmanStep k;
  k.Fx = np::dot(Ft, x);
  k.v = ot * (yt - k.Fx);
  Array CF = np::matmul(C, Ft);           // C Fᵀ
  k.Cp = np::dot(Ft, CF) + ot * vt * vt;  // F C Fᵀ + V² (observed steps only)
  k.K = np::matmul(G, CF) * (ot / k.Cp);  // G C Fᵀ / Cp, zero when missing
  k.L = G - outer(k.K, Ft);
  k.next = {np::matmul(G, x) + k.K * k.v, np::matmul(np::matmul(G, C), np::transpose(k.L)) + W};
  return k;
}
}  // namespace

OutputTerms output_terms(const Array& y, const Array& obs, const Array& Fx, const Array& v, const Array& Cp,
                         const Array& V) {
  OutputTerms o;
  o.yhat = Fx;
  o.resid0 = y - Fx;
  o.resid = o.resid0 / V;
  o.v = np::where(obs, v, NAN);
  o.resid2 = np::where(obs, v / np::sqrt(Cp), NAN);
  o.terms = {v * v / Cp + np::log(Cp), o.resid0 * o.resid0, o.resid * o.resid, o.resid2 * o.resid2,
             np::abs(o.resid2) / y};
  return o;
}

std::vector<Array> filter_scan(const Array& y, const Array& V, const Array& x0, const Array& G, const Array& F,
                               const Array& W, const Array& C0) {
  const DType d = y.dtype();
  Array obs = np::logical_not(np::isnan(y));
  Array obsf = np::astype(obs, d);
  Array yz = np::where(obs, y, 0.0);
  auto fstep = [&](const FC& c, const std::vector<Array>& in) {
    const Array& Ft = in.size() > 3 ? in[3] : F;  // this step's observation row
    KalmanStep k = kalman_step(c, in[0], in[1], in[2], Ft, G, W);
    return std::pair{k.next, std::vector<Array>{c.first, c.second, k.v, k.Cp, k.K}};
  };
  std::vector<Array> xs{yz, V, obsf};
  if (F.ndim() == 2) xs.push_back(F);
  auto [last, ys] = lax::scan(fstep, FC{x0, C0}, xs);
  ys.push_back(last.first);  // the prediction one step past the data
  ys.push_back(last.second);
  return ys;
}

std::vector<Array> filter_scan_outputs(const Array& y, const Array& V, const Array& x0, const Array& G, const Array& F,
                                       const Array& W, const Array& C0) {
  const DType d = y.dtype();
  Array obs = np::logical_not(np::isnan(y));
  Array obsf = np::astype(obs, d);
  Array yz = np::where(obs, y, 0.0);
  using Carry = std::pair<FC, Array>;  // the prediction, and the summary's sums so far [5]
  auto fstep = [&](const Carry& c, const std::vector<Array>& in) {
    const Array& Ft = in.size() > 4 ? in[4] : F;
    KalmanStep k = kalman_step(c.first, in[0], in[1], in[2], Ft, G, W);
    const Array& yt = in[3];
    const Array ot = np::logical_not(np::isnan(yt));
    OutputTerms o = output_terms(yt, ot, k.Fx, k.v, k.Cp, in[1]);
    Array sums = c.second + np::where(ot, np::stack(o.terms), 0.0);
    return std::pair{Carry{k.next, sums}, std::vector<Array>{c.first.first, c.first.second, k.v, k.Cp, k.K, o.yhat,
                                                             o.resid0, o.resid, o.v, o.resid2}};
  };
  std::vector<Array> xs{yz, V, obsf, y};
  if (F.ndim() == 2) xs.push_back(F);
  auto [last, ys] = lax::scan(fstep, Carry{FC{x0, C0}, np::zeros({5}, d)}, xs);
  ys.insert(ys.begin() + 5, {last.first.first, last.first.second});
  ys.push_back(last.second);
  return ys;
}

// The backward recursion unrolled: with P_t = L₁ᵀ⋯L_{t−1}ᵀ (P₁ = I), r₀ = Σ_t P_t Fᵀ v_t/Cp_t and
// N₀ = Σ_t (P_t Fᵀ)(P_t Fᵀ)ᵀ/Cp_t over observed steps, so both add up going forward with the
// filter (the fixed-point smoother of the first step). P decays where the filter forgets its
// start; its entries below the dtype's smallest normal number are flushed to zero (as FTZ
// hardware would: a term they would add is below the last bit of any (r, N) past ~1e-290 in
// float64), so P reaches exactly zero, stays there, and no later step changes (r, N).
std::vector<Array> first_state_scan(const Array& y, const Array& V, const Array& G, const Array& F, const Array& W,
                                    const std::vector<Array>& carry) {
  const DType d = y.dtype();
  Array obs = np::logical_not(np::isnan(y));
  Array obsf = np::astype(obs, d);
  Array yz = np::where(obs, y, 0.0);
  const double tiny = d == DType::float32 ? std::numeric_limits<float>::min() : std::numeric_limits<double>::min();
  auto fstep = [&](const std::vector<Array>& c, const std::vector<Array>& in) {
    const Array& Ft = in.size() > 3 ? in[3] : F;
    const Array &P = c[2], &ot = in[2];
    KalmanStep k = kalman_step({c[0], c[1]}, in[0], in[1], ot, Ft, G, W);
    Array u = np::matmul(P, Ft);  // P Fᵀ
    Array PL = np::matmul(P, np::transpose(k.L));
    return std::pair{
        std::vector<Array>{k.next.first, k.next.second, np::where(np::less(np::abs(PL), np::scalar(tiny, d)), 0.0, PL),
                           c[3] + u * (ot * k.v / k.Cp), c[4] + outer(u, u) * (ot / k.Cp)},
        std::vector<Array>{}};
  };
  std::vector<Array> xs{yz, V, obsf};
  if (F.ndim() == 2) xs.push_back(F);
  return lax::scan(fstep, carry, xs).first;
}

std::vector<Array> first_state_start(const Model& md) {
  const std::int64_t m = md.G.shape()[0];
  const DType d = md.y.dtype();
  return {md.x0, md.C0, np::identity(m, d), np::zeros({m}, d), np::zeros({m, m}, d)};
}
}  // namespace detail

Array minus2_log_lik(const Array& y, const Array& V, const Array& x0, const Array& G, const Array& F, const Array& W,
                     const Array& C0, Algorithm alg) {
  auto fo = filter(y, V, x0, G, F, W, C0, alg);
  Array obs = np::logical_not(np::isnan(y));
  const Array &v = fo[2], &Cp = fo[3];
  return np::sum(np::where(obs, v * v / Cp + np::log(Cp), 0.0));
}

std::pair<Array, Array> smoothed_states(const Array& y, const Array& V, const Array& x0, const Array& G, const Array& F,
                                        const Array& W, const Array& C0, Algorithm alg) {
  if (alg == Algorithm::assoc) return detail::assoc_smoother(detail::assoc_filter(y, V, x0, G, F, W, C0), G);
  const std::int64_t m = G.shape()[0];
  auto sm = detail::rn_smoother(filter(y, V, x0, G, F, W, C0), np::astype(np::logical_not(np::isnan(y)), y.dtype()), G,
                                F, np::zeros({m}, y.dtype()), np::zeros({m, m}, y.dtype()));
  return {sm.xs, sm.Cs};
}

Fit smooth(const Array& y, const Array& V, const Array& x0, const Array& G, const Array& F, const Array& W,
           const Array& C0, Algorithm alg) {
  const DType d = y.dtype();
  const std::int64_t m = G.shape()[0];
  Array obsf = np::astype(np::logical_not(np::isnan(y)), d);
  std::vector<Array> fo;
  Array xs, Cs;
  if (alg == Algorithm::assoc) {
    auto af = detail::assoc_filter(y, V, x0, G, F, W, C0);
    fo = assoc_outputs(af, y, V, x0, G, F, C0);
    std::tie(xs, Cs) = detail::assoc_smoother(af, G);
  } else {
    fo = filter(y, V, x0, G, F, W, C0);
    auto sm = detail::rn_smoother(fo, obsf, G, F, np::zeros({m}, d), np::zeros({m, m}, d));
    xs = sm.xs;
    Cs = sm.Cs;
  }
  // ---- outputs, with the toolbox's layouts ----
  const detail::FilterOutputs fl = detail::filter_outputs(fo, y, V, F);
  Fit out;
  out.xf = np::transpose(fo[0]);
  out.Cf = np::moveaxis(fo[1], 0, -1);
  out.x = np::transpose(xs);
  out.C = np::moveaxis(Cs, 0, -1);
  std::tie(out.xstd, out.ystd) = detail::smoother_outputs(Cs, V, F);
  out.yhat = fl.yhat;
  out.resid0 = fl.resid0;
  out.resid = fl.resid;
  out.v = fl.v;
  out.Cp = fl.Cp;
  out.resid2 = fl.resid2;
  out.nobs = static_cast<int>(np::sum(obsf).item<double>());
  const std::vector<double> sums = fl.sums.to_vector<double>();
  out.lik = sums[0];
  out.ssy = sums[1];
  out.s2 = sums[2] / out.nobs;
  out.mse = sums[3] / out.nobs;
  out.mape = sums[4] / out.nobs;
  out.G = G;
  out.F = F;
  out.W = W;
  out.V = V;
  out.x0 = x0;
  out.C0 = C0;
  out.y = y;
  return out;
}

namespace {
// [F, X_t] per step: F [mb] broadcast over the rows of X [k,q]
Array with_covariates(const Array& F, const Array& X) {
  const std::int64_t k = X.shape()[0], mb = F.shape()[0];
  return np::concatenate({np::broadcast_to(F, {k, mb}), np::astype(X, F.dtype())}, 1);
}
void check_covariates(const Array& X, std::int64_t rows, const char* what) {
  if (X.ndim() != 2 || X.shape()[0] != rows || X.shape()[1] < 1)
    throw ShapeError(
        fmt::format("dlm: {} must be [{}, q] (a row per step, q >= 1), got {}", what, rows, X.aval().str()));
  if (np::sum(np::astype(np::isfinite(X), DType::int32)).item<double>() != static_cast<double>(X.size()))
    throw ShapeError(fmt::format("dlm: {} holds a value that is NaN or infinite", what));
}
}  // namespace

Array observation_rows(const Fit& f) { return f.X ? with_covariates(f.F, *f.X) : f.F; }

namespace detail {

Model model(const Array& y0, const Array& s, const std::vector<double>& w, const Options& o,
            const std::optional<Array>& X) {
  if (y0.ndim() != 1) throw ShapeError(fmt::format("dlm: y must be a vector of observations, got {}", y0.aval().str()));
  const DType d = is_floating(y0.dtype()) ? y0.dtype() : DType::float64;
  Model md;
  md.y = np::astype(y0, d);
  const std::int64_t n = md.y.shape()[0];
  if (n == 0) throw ShapeError("dlm: y is empty");
  // the checks and the initial state read the series once on the host (no kernel launches)
  std::vector<double> copy;  // float64 in host memory is read in place
  const std::byte* host = d == DType::float64 ? md.y.backend().host_data(md.y.slot()) : nullptr;
  if (!host) copy = md.y.to_vector<double>();
  const std::span<const double> yv(host ? reinterpret_cast<const double*>(host) : copy.data(),
                                   static_cast<std::size_t>(n));
  // missing values are NaN; an infinity is an error, and so is a series with nothing observed
  if (std::any_of(yv.begin(), yv.end(), [](double v) { return std::isinf(v); }))
    throw ShapeError("dlm: y holds an infinite value (missing values are NaN)");
  md.observed = std::count_if(yv.begin(), yv.end(), [](double v) { return !std::isnan(v); });
  if (md.observed == 0) throw ShapeError(fmt::format("dlm: y has no observed value (all {} are missing)", n));
  if (!(s.ndim() == 0 || (s.ndim() == 1 && (s.shape()[0] == n || s.shape()[0] == 1))))
    throw ShapeError(fmt::format("dlm: s must be a scalar or one std per observation ({}), got {}", n, s.aval().str()));
  auto [G0, F0] = system_matrices(o, d);
  const std::int64_t mb = G0.shape()[0];
  if (static_cast<std::int64_t>(w.size()) > mb)
    throw ShapeError(fmt::format("dlm: {} process stds given for a model with {} states", w.size(), mb));
  // covariates: q static β states after the model's own (identity in G, no noise)
  if (X) check_covariates(*X, n, "X");
  const std::int64_t q = X ? X->shape()[1] : 0;
  md.G = q ? stack_blocks(G0, np::eye(q, {}, 0, d)) : G0;
  md.F = q ? with_covariates(F0, *X) : F0;
  md.F0 = F0;
  if (q) md.X = np::astype(*X, d);
  const std::int64_t m = mb + q;
  // V: one std per step (a scalar s repeated)
  const std::vector<double> sv = s.to_vector<double>();
  md.V = np::array(sv.size() == 1 ? std::vector<double>(static_cast<std::size_t>(n), sv[0]) : sv, Shape{n}, d);
  // W = diag(w²), the states past the w given (and the β states) noise-free
  std::vector<double> wd(static_cast<std::size_t>(m * m), 0.0);
  for (std::size_t i = 0; i < w.size(); ++i) wd[i * static_cast<std::size_t>(m) + i] = w[i] * w[i];
  md.W = np::array(wd, Shape{m, m}, d);
  // x0: the mean level of the first season's observed values; C0 = diag((|x0₁|/2)²), 1e7 where
  // that is 0 (none observed among them: level 0, and so the diffuse C0, as dlm-js does)
  const std::size_t k = static_cast<std::size_t>(std::min<std::int64_t>(n, o.ns));
  double total = 0, observed = 0;
  for (std::size_t t = 0; t < k; ++t)
    if (!std::isnan(yv[t])) total += yv[t], observed += 1;
  const double level = observed > 0 ? total / observed : 0.0;
  std::vector<double> x0v(static_cast<std::size_t>(m), 0.0), c0v(static_cast<std::size_t>(m * m), 0.0);
  x0v[0] = level;
  const double c = std::pow(std::abs(level) * 0.5, 2);
  for (std::int64_t i = 0; i < m; ++i) c0v[static_cast<std::size_t>(i * m + i)] = c == 0.0 ? 1e7 : c;
  md.x0 = np::array(x0v, Shape{m}, d);
  md.C0 = np::array(c0v, Shape{m, m}, d);
  return md;
}

namespace {
using RN = std::pair<Array, Array>;
// One backward step of the r/N recursion: L = G − K F, r ← Lᵀ r + Fᵀ v/Cp, N ← Lᵀ N L + Fᵀ F/Cp
// (the observation terms only where observed).
RN rn_step(const RN& rn, const Array& G, const Array& Ft, const Array& vt, const Array& cpt, const Array& kt,
           const Array& ot) {
  const auto& [r, N] = rn;
  Array L = G - outer(kt, Ft);
  return {np::matmul(np::transpose(L), r) + Ft * (ot * vt / cpt),
          np::matmul(np::matmul(np::transpose(L), N), L) + outer(Ft, Ft) * (ot / cpt)};
}
// The smoothed state of a step from its prediction (x, C) and the updated (r, N).
RN smoothed(const Array& xt, const Array& Ct, const RN& rn) {
  Array xs = xt + np::matmul(Ct, rn.first);
  Array Cs = Ct - np::matmul(np::matmul(Ct, rn.second), Ct);
  // float32: C − C N C cancels to a non-symmetric, possibly indefinite matrix; its symmetric
  // part is what the next pass's C0 = 100·C₁ needs (dlm-js does the same; float64 keeps the
  // toolbox's arithmetic)
  if (Ct.dtype() == DType::float32) Cs = (Cs + np::transpose(Cs)) * 0.5;
  return {xs, Cs};
}
}  // namespace

Smoothed rn_smoother(const std::vector<Array>& fo, const Array& obsf, const Array& G, const Array& F, const Array& r0,
                     const Array& N0, const std::optional<Array>& V) {
  const Array &xf = fo[0], &Cf = fo[1], &v = fo[2], &Cp = fo[3], &K = fo[4];
  const bool row_per_step = F.ndim() == 2;
  auto bstep = [&](const RN& rn, const std::vector<Array>& in) {
    const Array& Ft = row_per_step ? in[6] : F;  // this step's observation row
    RN next = rn_step(rn, G, Ft, in[2], in[3], in[4], in[5]);
    auto [xs, Cs] = smoothed(in[0], in[1], next);
    if (!V) return std::pair{next, std::vector<Array>{xs, Cs}};
    // the smoother's outputs in the loop: √diag(Cs) and √(F Cs Fᵀ + V²)
    const Array& Vt = in.back();
    return std::pair{next, std::vector<Array>{xs, Cs, np::sqrt(np::diagonal(Cs)),
                                              np::sqrt(np::dot(Ft, np::matmul(Cs, Ft)) + Vt * Vt)}};
  };
  std::vector<Array> xs{xf, Cf, v, Cp, K, obsf};
  if (row_per_step) xs.push_back(F);
  if (V) xs.push_back(*V);
  auto [rn, so] = lax::scan(bstep, RN{r0, N0}, xs, {.reverse = true});
  Smoothed r{so[0], so[1], rn.first, rn.second, {}, {}};
  if (V) r.xstd = so[2], r.ystd = so[3];
  return r;
}

std::pair<Array, Array> smoothed_first(const Array& x0, const Array& C0, const Array& r, const Array& N) {
  return smoothed(x0, C0, {r, N});
}

FilterOutputs filter_outputs(const std::vector<Array>& fo, const Array& y, const Array& V, const Array& F) {
  const Array &xf = fo[0], &v = fo[2], &Cp = fo[3];
  Array obs = np::logical_not(np::isnan(y));
  OutputTerms o = output_terms(y, obs, rows_dot(F, xf), v, Cp, V);
  FilterOutputs r{o.yhat, o.resid0, o.resid, o.v, Cp, o.resid2, {}};
  std::vector<Array> sums;
  for (const Array& t : o.terms) sums.push_back(np::sum(np::where(obs, t, 0.0)));
  r.sums = np::stack(sums);
  return r;
}

std::pair<Array, Array> smoother_outputs(const Array& Cs, const Array& V, const Array& F) {
  return {np::sqrt(np::diagonal(Cs, 0, 1, 2)), np::sqrt(rows_quad(F, Cs) + V * V)};
}

}  // namespace detail

namespace {
// dlmfit's first pass: the smoothed first state from (x0, C0), and 100 times its covariance (the
// second pass's start). The assoc algorithm takes it from its parallel smoother; the scan
// algorithm from the fixed-point smoother of the first step, one forward scan (the streamed fit's
// first pass too).
std::pair<Array, Array> first_pass(const detail::Model& md, Algorithm alg) {
  if (alg == Algorithm::assoc) {
    Fit first = smooth(md.y, md.V, md.x0, md.G, md.F, md.W, md.C0, alg);
    return {np::index(first.x, {np::Slice{}, std::int64_t{0}}),
            np::index(first.C, {np::Slice{}, np::Slice{}, std::int64_t{0}}) * 100.0};
  }
  const std::vector<Array> c = detail::first_state_scan(md.y, md.V, md.G, md.F, md.W, detail::first_state_start(md));
  auto [x1, C1] = detail::smoothed_first(md.x0, md.C0, c[3], c[4]);
  return {x1, C1 * 100.0};
}
}  // namespace

Fit fit(const Array& y0, const Array& s, const std::vector<double>& w, const Options& o,
        const std::optional<Array>& X) {
  const detail::Model md = detail::model(y0, s, w, o, X);
  auto [x1, C1] = first_pass(md, o.algorithm);
  Fit out = smooth(md.y, md.V, x1, md.G, md.F, md.W, C1, o.algorithm);
  if (md.X) {
    out.F = md.F0;
    out.X = md.X;
  }
  return out;
}

Forecast forecast(const Fit& f, std::int64_t h, const std::optional<Array>& X_future) {
  if (h < 0) throw ShapeError(fmt::format("dlm: forecast horizon {} must be >= 0", h));
  if (f.X && !X_future)
    throw ShapeError(fmt::format("dlm: the model has {} covariates: the forecast needs their future values ({} rows)",
                                 f.X->shape()[1], h));
  if (!f.X && X_future) throw ShapeError("dlm: future covariates given for a model without covariates");
  if (f.X) {
    check_covariates(*X_future, h, "the future covariates");
    if (X_future->shape()[1] != f.X->shape()[1])
      throw ShapeError(fmt::format("dlm: the future covariates have {} columns; the model has {}", X_future->shape()[1],
                                   f.X->shape()[1]));
  }
  auto fo = filter(f.y, f.V, f.x0, f.G, observation_rows(f), f.W, f.C0);
  const Array &xn = fo[5], &Cn = fo[6];
  const std::int64_t n = f.V.shape()[0];
  Array v_last = np::index(f.V, {std::int64_t{n - 1}});
  using XC = std::pair<Array, Array>;
  auto step = [&](const XC& c) {
    const auto& [x, C] = c;
    XC next{np::matmul(f.G, x), np::matmul(np::matmul(f.G, C), np::transpose(f.G)) + f.W};
    return std::pair{next, std::vector<Array>{x, C}};
  };
  auto [last, ys] = lax::scan(step, XC{xn, Cn}, h);
  (void)last;
  Forecast r{ys[0], ys[1], {}, {}};
  const Array Fh = f.X ? with_covariates(f.F, *X_future) : f.F;
  r.yhat = rows_dot(Fh, ys[0]);
  r.ystd = np::sqrt(rows_quad(Fh, ys[1]) + v_last * v_last);
  return r;
}

namespace {

// Where an optimizer stands: θ, −2 log L at θ and its gradient; every accepted value in history.
struct MleState {
  Array th, g;
  double cur;
};

double value_of(const Array& a) { return a.item<double>(); }

bool relative_change_done(double next, double cur, const MleOptions& mo, Mle& r) {
  if (!(std::abs(next - cur) <= mo.rtol * std::abs(cur))) return false;
  r.converged = true;
  r.stop_reason = fmt::format("relative change of -2 log L <= {:g}", mo.rtol);
  return true;
}

// Adam (β 0.9 / 0.999, ε 1e-8, bias-corrected moments) until the relative change of −2 log L is
// at most rtol, or max_iter steps.
template <class VG>
void adam_steps(VG& vg, MleState& st, const MleOptions& mo, Mle& r) {
  Array mom = np::zeros_like(st.th), vel = np::zeros_like(st.th);
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  for (int it = 1; it <= mo.max_iter; ++it) {
    mom = mom * b1 + st.g * (1 - b1);
    vel = vel * b2 + st.g * st.g * (1 - b2);
    Array mh = mom / (1 - std::pow(b1, it)), vh = vel / (1 - std::pow(b2, it));
    st.th = st.th - mh / (np::sqrt(vh) + eps) * mo.learning_rate;
    auto [v, gn] = vg(st.th);
    const double next = value_of(v);
    st.g = gn;
    r.history.push_back(next);
    r.iterations = it;
    const bool done = relative_change_done(next, st.cur, mo, r);
    st.cur = next;
    if (done) return;
  }
}

// The Hessian by central differences of the gradient (h = 1e-5), symmetrized.
template <class VG>
Array fd_hessian(VG& vg, const Array& t) {
  const std::int64_t n = t.size();
  std::vector<Array> cols;
  const double h = 1e-5;
  for (std::int64_t i = 0; i < n; ++i) {
    std::vector<double> e(static_cast<std::size_t>(n), 0.0);
    e[i] = h;
    Array de = np::array(e, std::nullopt, t.dtype());
    cols.push_back((vg(t + de).second - vg(t - de).second) / (2 * h));
  }
  Array H = np::stack(cols, 1);
  return (H + np::transpose(H)) * 0.5;
}

// Damped Newton (Levenberg–Marquardt on the Hessian, exact or by differences): a step is taken
// where −2 log L does not rise, the damping λ shrinking 10× after it and growing 10× after a
// refusal (30 tries a step); stops at a relative change of at most rtol, when no descent step is
// left, or after max_iter steps.
template <class VG, class H>
void newton_steps(VG& vg, H& hess, MleState& st, const MleOptions& mo, Mle& r) {
  double lambda = 1e-3;
  const std::int64_t n = st.th.size();
  const DType d = st.th.dtype();
  for (int it = 1; it <= mo.max_iter; ++it) {
    Array Hm = mo.exact_hessian ? hess(st.th) : fd_hessian(vg, st.th);
    bool accepted = false;
    double next = st.cur;
    for (int tries = 0; tries < 30 && !accepted; ++tries) {
      Array step = np::linalg::solve(Hm + np::eye(n, {}, 0, d) * lambda, st.g);
      Array cand = st.th - step;
      auto [v, gn] = vg(cand);
      next = value_of(v);
      if (std::isfinite(next) && next <= st.cur) {
        st.th = cand;
        st.g = gn;
        accepted = true;
        lambda = std::max(lambda * 0.1, 1e-12);
      } else {
        lambda *= 10;
      }
    }
    r.iterations = it;
    if (!accepted) {  // no descent step left: at the optimum to working precision if the gradient is small
      const double gmax = value_of(np::max(np::abs(st.g)));
      r.converged = gmax <= std::sqrt(mo.rtol) * std::max(1.0, std::abs(st.cur));
      r.stop_reason = fmt::format("no descent step (largest gradient component {:g})", gmax);
      return;
    }
    r.history.push_back(next);
    const bool done = relative_change_done(next, st.cur, mo, r);
    st.cur = next;
    if (done) return;
  }
}

}  // namespace

Mle mle(const Array& y0, const Array& s, const std::vector<double>& w, const Options& o, const MleOptions& mo,
        const std::optional<Array>& X) {
  const auto t0 = std::chrono::steady_clock::now();
  double compile_ms = 0;
  trace::Subscription sub([&](const trace::Event& e) {
    if (e.kind == trace::EventKind::compile && e.name != "cc") compile_ms += e.ms;  // jit compiles include cc time
  });
  Fit init = fit(y0, s, w, o, X);
  const Array Frows = observation_rows(init);
  const std::int64_t m = init.G.shape()[0], k = static_cast<std::int64_t>(w.size());
  const DType d = init.V.dtype();
  Array y = np::astype(y0, d);
  // θ = (log V factor, log w_1..w_k)
  auto loss = [y, V = init.V, x0 = init.x0, C0 = init.C0, G = init.G, F = Frows, m, k,
               alg = o.algorithm](const Array& th) {
    Array sd = np::exp(th);
    Array wv = np::square(np::index(sd, {np::Slice{1, {}}}));
    if (m > k) wv = np::concatenate({wv, np::zeros({m - k}, wv.dtype())});
    Array W = np::eye(m, {}, 0, wv.dtype()) * wv;
    return minus2_log_lik(y, V * np::index(sd, {std::int64_t{0}}), x0, G, F, W, C0, alg);
  };
  auto vg = jit(value_and_grad(loss));
  auto hess = jit(hessian(loss));
  std::vector<double> th0{0.0};
  for (double wi : w) th0.push_back(std::log(std::max(wi, 1e-8)));
  const Array th_start = np::array(th0, std::nullopt, d);
  Mle r;
  auto [v0, g0] = vg(th_start);
  MleState st{th_start, g0, v0.item<double>()};
  r.history.push_back(st.cur);
  if (mo.optimizer == MleOptions::Optimizer::adam)
    adam_steps(vg, st, mo, r);
  else
    newton_steps(vg, hess, st, mo, r);
  if (r.stop_reason.empty()) r.stop_reason = fmt::format("iteration cap {} reached", mo.max_iter);
  auto tv = st.th.to_vector<double>();
  r.obs_std_factor = std::exp(tv[0]);
  for (std::size_t i = 1; i < tv.size(); ++i) r.w.push_back(std::exp(tv[i]));
  r.lik = st.cur;
  std::vector<double> wd(static_cast<std::size_t>(m), 0.0);
  for (std::size_t i = 0; i < r.w.size(); ++i) wd[i] = r.w[i] * r.w[i];
  r.fit = smooth(y, init.V * r.obs_std_factor, init.x0, init.G, Frows,
                 np::eye(m, {}, 0, d) * np::array(wd, Shape{m}, d), init.C0, o.algorithm);
  r.fit.F = init.F;
  r.fit.X = init.X;
  r.elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  r.compile_ms = compile_ms;
  return r;
}

}  // namespace jx::dlm
