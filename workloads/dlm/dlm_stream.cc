#include "workloads/dlm/dlm_stream.h"

#include "workloads/dlm/dlm_io.h"
#include "workloads/dlm/dlm_steps.h"

namespace jx::dlm {
namespace {

// The output arrays a fit streams, in fields(Fit)'s names and toolbox layouts.
enum Out { xf, Cf, x, C, xstd, yhat, ystd, resid0, resid, v, Cp, resid2, kOuts };

struct Chunk {
  std::int64_t t0, t1;
};

using Fn = std::function<std::vector<Array>(const std::vector<Array>&)>;
template <class F>
Fn jitted(F f) {
  auto j = jit(std::move(f));
  return [j](const std::vector<Array>& a) { return j(a); };
}

// One chunk forward: (y, V, x, C, F) -> the filter's (x, C, v, Cp, K per step, x and C after
// the last), then with outputs: xf [m,c], Cf [m,m,c], [yhat, resid0, resid, v, Cp, resid2] [6,c]
// and the summary's sums [5].
Fn forward_fn(const detail::Model& md, bool outputs) {
  return jitted([G = md.G, W = md.W, outputs](const std::vector<Array>& a) {
    std::vector<Array> fo = filter(a[0], a[1], a[2], G, a[4], W, a[3]);
    if (!outputs) return fo;
    const detail::FilterOutputs fl = detail::filter_outputs(fo, a[0], a[1], a[4]);
    fo.push_back(np::transpose(fo[0]));
    fo.push_back(np::moveaxis(fo[1], 0, -1));
    fo.push_back(np::stack({fl.yhat, fl.resid0, fl.resid, fl.v, fl.Cp, fl.resid2}));
    fo.push_back(fl.sums);
    return fo;
  });
}

// One chunk backward: (x, C, v, Cp, K per step, y, V, F, r, N) -> the first step's smoothed
// mean and covariance, the carry (r, N) before the chunk; with outputs: x [m,c], C [m,m,c],
// xstd [c,m], ystd [c].
Fn backward_fn(const detail::Model& md, bool outputs) {
  return jitted([G = md.G, outputs](const std::vector<Array>& a) {
    const std::vector<Array> fo(a.begin(), a.begin() + 5);
    const Array &y = a[5], &V = a[6], &F = a[7];
    auto sm = detail::rn_smoother(fo, np::astype(np::logical_not(np::isnan(y)), y.dtype()), G, F, a[8], a[9]);
    std::vector<Array> r{np::index(sm.xs, {std::int64_t{0}}), np::index(sm.Cs, {std::int64_t{0}}), sm.r, sm.N};
    if (!outputs) return r;
    auto [sd, ys] = detail::smoother_outputs(sm.Cs, V, F);
    r.insert(r.end(), {np::transpose(sm.xs), np::moveaxis(sm.Cs, 0, -1), sd, ys});
    return r;
  });
}

class StreamedPass {
 public:
  StreamedPass(const detail::Model& md, std::int64_t chunk) : md_(md), n_(md.y.shape()[0]), m_(md.G.shape()[0]) {
    for (std::int64_t t0 = 0; t0 < n_; t0 += chunk) chunks_.push_back({t0, std::min(n_, t0 + chunk)});
  }
  // Runs filter and smoother from (x0, C0); with ids, writes every output and sums the summary.
  // Returns the smoothed mean and covariance of the first step.
  std::pair<Array, Array> run(const Array& x0, const Array& C0, ResultWriter* out, const std::vector<int>& ids) {
    out_ = out;
    ids_ = ids;
    const Fn fwd = forward_fn(md_, out != nullptr), bwd = backward_fn(md_, out != nullptr);
    std::vector<std::pair<Array, Array>> checkpoints;
    std::vector<Array> fo;
    std::pair<Array, Array> carry{x0, C0};
    for (const Chunk& c : chunks_) {
      checkpoints.push_back(carry);
      fo = fwd({slice(md_.y, c), slice(md_.V, c), carry.first, carry.second, rows(c)});
      carry = {fo[5], fo[6]};
      if (out_) forward_outputs(c, fo);
    }
    const DType d = md_.y.dtype();
    Array r = np::zeros({m_}, d), N = np::zeros({m_, m_}, d);
    std::pair<Array, Array> first;
    for (std::size_t k = chunks_.size(); k-- > 0;) {
      const Chunk& c = chunks_[k];
      // the last chunk's filter outputs are still at hand; the others run again from their checkpoint
      if (k + 1 < chunks_.size()) fo = fwd({slice(md_.y, c), slice(md_.V, c), checkpoints[k].first, checkpoints[k].second, rows(c)});
      std::vector<Array> b = bwd({fo[0], fo[1], fo[2], fo[3], fo[4], slice(md_.y, c), slice(md_.V, c), rows(c), r, N});
      r = b[2];
      N = b[3];
      if (out_) backward_outputs(c, b);
      if (k == 0) first = {b[0], b[1]};
    }
    return first;
  }
  const std::vector<double>& sums() const { return sums_; }

 private:
  static Array slice(const Array& a, const Chunk& c) {
    return c.t0 == 0 && c.t1 == a.shape()[0] ? a : np::index(a, {np::Slice{c.t0, c.t1}});
  }
  Array rows(const Chunk& c) const { return md_.F.ndim() == 2 ? slice(md_.F, c) : md_.F; }
  // [k, c] values (k runs of the chunk's c steps) into an output laid out [k, n]
  void put_runs(int out, const Chunk& c, const Array& a) {
    const std::int64_t len = c.t1 - c.t0;
    const std::vector<double> v = np::astype(a, DType::float64).to_vector<double>();
    for (std::size_t run = 0; run * len < v.size(); ++run)
      out_->write(ids_[out], static_cast<std::int64_t>(run) * n_ + c.t0, v.data() + run * len, len);
  }
  // [c, k] values into an output laid out [n, k]: one run
  void put_rows(int out, const Chunk& c, const Array& a) {
    const std::vector<double> v = np::astype(a, DType::float64).to_vector<double>();
    const std::int64_t per_step = static_cast<std::int64_t>(v.size()) / (c.t1 - c.t0);
    out_->write(ids_[out], c.t0 * per_step, v.data(), static_cast<std::int64_t>(v.size()));
  }
  void forward_outputs(const Chunk& c, const std::vector<Array>& fo) {
    put_runs(xf, c, fo[7]);
    put_runs(Cf, c, fo[8]);
    // the six per-step series, one run each, into their own outputs
    const std::int64_t len = c.t1 - c.t0;
    const std::vector<double> six = np::astype(fo[9], DType::float64).to_vector<double>();
    int k = 0;
    for (int o : {yhat, resid0, resid, v, Cp, resid2}) out_->write(ids_[o], c.t0, six.data() + len * k++, len);
    const std::vector<double> s = np::astype(fo[10], DType::float64).to_vector<double>();
    sums_.resize(s.size(), 0.0);
    for (std::size_t i = 0; i < s.size(); ++i) sums_[i] += s[i];
  }
  void backward_outputs(const Chunk& c, const std::vector<Array>& b) {
    put_runs(x, c, b[4]);
    put_runs(C, c, b[5]);
    put_rows(xstd, c, b[6]);
    put_rows(ystd, c, b[7]);
  }

  const detail::Model& md_;
  std::int64_t n_, m_;
  std::vector<Chunk> chunks_;
  ResultWriter* out_ = nullptr;
  std::vector<int> ids_;
  std::vector<double> sums_;
};

}  // namespace

StreamedFit fit_streamed(const Array& y, const Array& s, const std::vector<double>& w, const Options& o, const std::optional<Array>& X,
                         ResultWriter& out, std::int64_t chunk) {
  if (o.algorithm != Algorithm::scan) throw Error("dlm: the streamed fit runs the scan algorithm only");
  if (chunk < 1) throw Error(fmt::format("dlm: chunk length {} must be positive", chunk));
  const detail::Model md = detail::model(y, s, w, o, X);
  const std::int64_t n = md.y.shape()[0], m = md.G.shape()[0];
  StreamedPass pass(md, chunk);
  // first pass: the smoothed first state only; the second starts from x1 and 100·C1 (dlmfit)
  auto [x1, C1] = pass.run(md.x0, md.C0, nullptr, {});
  C1 = C1 * 100.0;
  const std::vector<int> ids = out.reserve({{"xf", {m, n}}, {"Cf", {m, m, n}}, {"x", {m, n}}, {"C", {m, m, n}}, {"xstd", {n, m}},
                                            {"yhat", {n}}, {"ystd", {n}}, {"resid0", {n}}, {"resid", {n}}, {"v", {n}}, {"Cp", {n}},
                                            {"resid2", {n}}});
  pass.run(x1, C1, &out, ids);
  Fit summary;  // the scalars and small arrays of fields(Fit); its big arrays are the regions
  summary.nobs = static_cast<int>(np::sum(np::logical_not(np::isnan(md.y))).item<double>());
  const std::vector<double>& sums = pass.sums();
  summary.lik = sums[0];
  summary.ssy = sums[1];
  summary.s2 = sums[2] / summary.nobs;
  summary.mse = sums[3] / summary.nobs;
  summary.mape = sums[4] / summary.nobs;
  summary.X = md.X;
  StreamedFit r;
  auto region = [&](Out o) { return out.reserved(ids[o]); };
  r.fields = {region(xf), region(Cf), region(x), region(C), region(xstd), Field::array("G", md.G), Field::array("F", md.X ? md.F0 : md.F),
              Field::array("W", md.W), Field::array("y", md.y), Field::array("V", md.V), Field::array("x0", x1), Field::array("C0", C1),
              region(yhat), region(ystd), region(resid0), region(resid), region(v), region(Cp), region(resid2)};
  summary_fields(summary, r.fields);
  r.lik = summary.lik;
  r.s2 = summary.s2;
  r.nobs = summary.nobs;
  return r;
}

}  // namespace jx::dlm
