#include "workloads/dlm/dlm.h"

#include <cmath>

namespace jx::dlm {
namespace {

Array outer(const Array& a, const Array& b) { return np::einsum("i,j->ij", a, b); }

// Block-diagonal stack of two square matrices (either may be empty).
Array stack_blocks(const Array& a, const Array& b) {
  if (a.size() == 0) return b;
  if (b.size() == 0) return a;
  const std::int64_t na = a.shape()[0], nb = b.shape()[0];
  return np::concatenate({np::pad(a, {{0, 0}, {0, nb}}), np::pad(b, {{0, 0}, {na, 0}})}, 0);
}

}  // namespace

std::pair<Array, Array> system_matrices(const Options& o, DType d) {
  if (o.order < 0) throw ShapeError(fmt::format("dlm: trend order {} must be >= 0", o.order));
  if (o.ns < 2) throw ShapeError(fmt::format("dlm: season length ns = {} must be >= 2", o.ns));
  if (o.trig < 0 || 2 * o.trig > o.ns) throw ShapeError(fmt::format("dlm: trig = {} must be between 0 and ns/2 = {}", o.trig, o.ns / 2.0));
  // local polynomial trend: ones on the diagonal and the superdiagonal
  const std::int64_t mt = o.order + 1;
  Array G = np::eye(mt, {}, 0, d) + np::eye(mt, {}, 1, d);
  std::vector<double> f(static_cast<std::size_t>(mt), 0.0);
  f[0] = 1.0;
  if (o.fullseas) {
    const std::int64_t k = o.ns - 1;  // first row -1, subdiagonal ones
    Array gs = np::where(np::equal(lax::iota(DType::int32, {k, k}, 0), 0.0), np::full({k, k}, -1.0, d), np::eye(k, {}, -1, d));
    G = stack_blocks(G, gs);
    f.push_back(1.0);
    for (std::int64_t i = 1; i < k; ++i) f.push_back(0.0);
  } else {
    for (int i = 1; i <= o.trig; ++i) {
      const double a = 2.0 * M_PI * i / o.ns, c = std::cos(a), s = std::sin(a);
      const bool last = 2 * i == o.ns;  // the redundant sine state of the Nyquist harmonic is dropped
      G = stack_blocks(G, last ? np::array({{c}}, d) : np::array({{c, s}, {-s, c}}, d));
      f.push_back(1.0);
      if (!last) f.push_back(0.0);
    }
  }
  if (!o.arphi.empty()) {
    const std::int64_t k = static_cast<std::int64_t>(o.arphi.size());
    Array phi = np::reshape(np::array(o.arphi, Shape{k}, d), {k, 1});  // [phi, [I; 0]]
    Array ga = k == 1 ? phi : np::concatenate({phi, np::eye(k, k - 1, 0, d)}, 1);
    G = stack_blocks(G, ga);
    f.push_back(1.0);
    for (std::int64_t i = 1; i < k; ++i) f.push_back(0.0);
  }
  return {G, np::array(f, Shape{static_cast<std::int64_t>(f.size())}, d)};
}

Fit smooth(const Array& y, const Array& V, const Array& x0, const Array& G, const Array& F, const Array& W, const Array& C0) {
  const DType d = y.dtype();
  const std::int64_t n = y.shape()[0];
  Array obs = np::logical_not(np::isnan(y));
  Array obsf = np::astype(obs, d);
  Array yz = np::where(obs, y, 0.0);
  // ---- forward: prediction-form filter ----
  using FC = std::pair<Array, Array>;  // x, C (predictions for the current step)
  auto fstep = [&](const FC& c, const std::vector<Array>& in) {
    const auto& [x, C] = c;
    const Array &yt = in[0], &vt = in[1], &ot = in[2];
    Array v = ot * (yt - np::dot(F, x));
    Array CF = np::matmul(C, F);                 // C Fᵀ
    Array Cp = np::dot(F, CF) + ot * vt * vt;    // F C Fᵀ + V² (observed steps only)
    Array K = np::matmul(G, CF) * (ot / Cp);     // G C Fᵀ / Cp, zero when missing
    Array L = G - outer(K, F);
    FC next{np::matmul(G, x) + K * v, np::matmul(np::matmul(G, C), np::transpose(L)) + W};
    return std::pair{next, std::vector<Array>{x, C, v, Cp, K}};
  };
  auto [last, fo] = lax::scan(fstep, FC{x0, C0}, std::vector<Array>{yz, V, obsf});
  (void)last;
  const Array &xf = fo[0], &Cf = fo[1], &v = fo[2], &Cp = fo[3], &K = fo[4];  // [n,m], [n,m,m], [n], [n], [n,m]
  // ---- backward: r/N smoother ----
  auto bstep = [&](const FC& rn, const std::vector<Array>& in) {
    const auto& [r, N] = rn;
    const Array &xt = in[0], &Ct = in[1], &vt = in[2], &cpt = in[3], &kt = in[4], &ot = in[5];
    Array L = G - outer(kt, F);
    Array r2 = np::matmul(np::transpose(L), r) + F * (ot * vt / cpt);
    Array N2 = np::matmul(np::matmul(np::transpose(L), N), L) + outer(F, F) * (ot / cpt);
    Array xs = xt + np::matmul(Ct, r2);
    Array Cs = Ct - np::matmul(np::matmul(Ct, N2), Ct);
    return std::pair{FC{r2, N2}, std::vector<Array>{xs, Cs}};
  };
  const std::int64_t m = G.shape()[0];
  auto [rn, so] = lax::scan(bstep, FC{np::zeros({m}, d), np::zeros({m, m}, d)}, std::vector<Array>{xf, Cf, v, Cp, K, obsf},
                            {.reverse = true});
  (void)rn;
  const Array &xs = so[0], &Cs = so[1];
  // ---- outputs, with the toolbox's layouts ----
  Fit out;
  out.xf = np::transpose(xf);
  out.Cf = np::moveaxis(Cf, 0, -1);
  out.x = np::transpose(xs);
  out.C = np::moveaxis(Cs, 0, -1);
  out.xstd = np::sqrt(np::diagonal(Cs, 0, 1, 2));
  out.yhat = np::matmul(xf, F);
  out.ystd = np::sqrt(np::einsum("i,nij,j->n", F, Cs, F) + V * V);
  out.resid0 = y - out.yhat;
  out.resid = out.resid0 / V;
  Array nan = np::full({n}, NAN, d);
  out.v = np::where(obs, v, nan);
  out.Cp = Cp;
  out.resid2 = np::where(obs, v / np::sqrt(Cp), nan);
  out.nobs = static_cast<int>(np::sum(obs).item<double>());
  auto nansum = [&](const Array& a) { return np::sum(np::where(obs, a, 0.0)).item<double>(); };
  out.lik = nansum(v * v / Cp + np::log(Cp));
  out.ssy = nansum(out.resid0 * out.resid0);
  out.s2 = nansum(out.resid * out.resid) / out.nobs;
  out.mse = nansum(out.resid2 * out.resid2) / out.nobs;
  out.mape = nansum(np::abs(out.resid2) / y) / out.nobs;
  out.G = G;
  out.F = F;
  out.W = W;
  out.V = V;
  out.x0 = x0;
  out.C0 = C0;
  return out;
}

Fit fit(const Array& y0, const Array& s, const std::vector<double>& w, const Options& o) {
  if (y0.ndim() != 1) throw ShapeError(fmt::format("dlm: y must be a vector of observations, got {}", y0.aval().str()));
  const DType d = is_floating(y0.dtype()) ? y0.dtype() : DType::float64;
  Array y = np::astype(y0, d);
  const std::int64_t n = y.shape()[0];
  if (n == 0) throw ShapeError("dlm: y is empty");
  if (!(s.ndim() == 0 || (s.ndim() == 1 && (s.shape()[0] == n || s.shape()[0] == 1))))
    throw ShapeError(fmt::format("dlm: s must be a scalar or one std per observation ({}), got {}", n, s.aval().str()));
  auto [G, F] = system_matrices(o, d);
  const std::int64_t m = G.shape()[0];
  if (static_cast<std::int64_t>(w.size()) > m)
    throw ShapeError(fmt::format("dlm: {} process stds given for a model with {} states", w.size(), m));
  std::vector<double> wd(static_cast<std::size_t>(m), 0.0);
  for (std::size_t i = 0; i < w.size(); ++i) wd[i] = w[i] * w[i];
  Array W = np::eye(m, {}, 0, d) * np::array(wd, Shape{m}, d);
  Array V = np::broadcast_to(np::reshape(np::astype(s, d), {-1}), {n}) * 1.0;
  // x0: the first season's mean level; C0 = diag((|x0₁|/2)²), 1e7 where that is 0
  const std::int64_t k = std::min<std::int64_t>(n, o.ns);
  Array head = np::index(y, {np::Slice{0, k}});
  Array ok = np::logical_not(np::isnan(head));
  const double level = np::sum(np::where(ok, head, 0.0)).item<double>() / np::sum(ok).item<double>();
  std::vector<double> x0v(static_cast<std::size_t>(m), 0.0);
  x0v[0] = level;
  const double c = std::pow(std::abs(level) * 0.5, 2);
  Array x0 = np::array(x0v, Shape{m}, d);
  Array C0 = np::eye(m, {}, 0, d) * (c == 0.0 ? 1e7 : c);
  Fit first = smooth(y, V, x0, G, F, W, C0);
  Array x1 = np::index(first.x, {np::Slice{}, std::int64_t{0}});
  Array C1 = np::index(first.C, {np::Slice{}, np::Slice{}, std::int64_t{0}}) * 100.0;
  return smooth(y, V, x1, G, F, W, C1);
}

}  // namespace jx::dlm
