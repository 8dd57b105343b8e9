#include "workloads/dlm/dlm_stream.h"

#include "core/backends/backend.h"
#include "workloads/dlm/background_writes.h"
#include "workloads/dlm/dlm_io.h"
#include "workloads/dlm/dlm_steps.h"

#include <algorithm>
#include <thread>

namespace jx::dlm {
namespace {

// The output arrays a fit streams, in fields(Fit)'s names and toolbox layouts; the inputs y and V
// too (written while the first chunk computes).
enum Out { xf, Cf, x, C, xstd, yhat, ystd, resid0, resid, v, Cp, resid2, y_in, V_in, kOuts };

struct Chunk {
  std::int64_t t0, t1;
};

using Fn = std::function<std::vector<Array>(const std::vector<Array>&)>;
template <class F>
Fn jitted(F f) {
  auto j = jit(std::move(f));
  return [j](const std::vector<Array>& a) { return j(a); };
}

// The initialisation pass needs the smoothed first state only: the filter carrying the first
// step's fixed-point smoother, (y, V, F, x, C, P, r, N, x0, C0) -> (x, C, P, r, N after the
// chunk, then the first step's smoothed x1 and 100·C1 from (x0, C0) and (r, N) so far, the
// output pass's start as dlmfit makes it).
Fn first_state_fn(const detail::Model& md) {
  return jitted([G = md.G, W = md.W](const std::vector<Array>& a) {
    std::vector<Array> c = detail::first_state_scan(a[0], a[1], G, a[2], W, {a[3], a[4], a[5], a[6], a[7]});
    auto [x1, C1] = detail::smoothed_first(a[8], a[9], c[3], c[4]);
    c.insert(c.end(), {x1, C1 * 100.0});
    return c;
  });
}

// The output pass's chunk functions. Forward: (y, V, x, C, F) -> the filter's (x, C, v, Cp, K per
// step, x and C after the chunk, then [yhat, resid0, resid, v (NaN where missing), resid2] per
// step and the summary's sums [5]). Backward: (x, C, v, Cp, K, y, V, F, r, N) -> (r, N before the
// chunk, x [c,m], C [c,m,m], xstd [c,m], ystd [c]). Everything per step is step-major: the
// writer lays it out.
Fn states_forward_fn(const detail::Model& md) {  // forward_fn without its outputs
  return jitted([G = md.G, W = md.W](const std::vector<Array>& a) {
    return detail::filter_scan(a[0], a[1], a[2], G, a[4], W, a[3]);
  });
}
Fn forward_fn(const detail::Model& md) {
  return jitted([G = md.G, W = md.W](const std::vector<Array>& a) {
    return detail::filter_scan_outputs(a[0], a[1], a[2], G, a[4], W, a[3]);
  });
}
Fn backward_fn(const detail::Model& md) {
  return jitted([G = md.G](const std::vector<Array>& a) {
    const std::vector<Array> fo(a.begin(), a.begin() + 5);
    const Array &y = a[5], &V = a[6], &F = a[7];
    auto sm = detail::rn_smoother(fo, np::astype(np::logical_not(np::isnan(y)), y.dtype()), G, F, a[8], a[9], V);
    return std::vector<Array>{sm.r, sm.N, sm.xs, sm.Cs, sm.xstd, sm.ystd};
  });
}

// The chunks: [t0, t1) of the series, every one run as `length` steps (the last one padded with
// missing steps: one shape, so each chunk function is traced and compiled once). Padding at the
// end changes nothing before it: a missing step leaves the r/N recursion at the zero it starts
// from, and adds nothing to the sums.
class StreamedPass {
 public:
  StreamedPass(const detail::Model& md, std::int64_t chunk, std::int64_t kept_bytes)
      : kept_forward_bytes_(kept_bytes),
        md_(md),
        n_(md.y.shape()[0]),
        m_(md.G.shape()[0]),
        length_(std::min(chunk, n_)),
        y_(md.y),
        V_(md.V),
        F_(md.F),
        forward_(forward_fn(md)),
        backward_(backward_fn(md)) {
    for (std::int64_t t0 = 0; t0 < n_; t0 += chunk) chunks_.push_back({t0, std::min(n_, t0 + chunk)});
  }
  StreamedPass(const StreamedPass&) = delete;
  StreamedPass& operator=(const StreamedPass&) = delete;
  ~StreamedPass() {
    if (warm_.joinable()) warm_.join();
  }
  // The initialisation pass from the model's (x0, C0): the smoothed mean of the first step and
  // 100 times its covariance (the output pass's start). Forward only, nothing per step kept, and
  // it stops at the chunk after which P is zero: no later step changes the result.
  std::pair<Array, Array> first_state() {
    warm_output_pass();
    const Fn step = first_state_fn(md_);
    std::vector<Array> c = detail::first_state_start(md_);
    std::vector<Array> out;
    for (std::size_t k = 0; k < chunks_.size(); ++k) {
      const Inputs in = inputs(k);
      out = step({in.y, in.V, in.F, c[0], c[1], c[2], c[3], c[4], md_.x0, md_.C0});
      c.assign(out.begin(), out.begin() + 5);
      first_pass_steps_ = chunks_[k].t1;
      const std::vector<double> P = c[2].to_vector<double>();
      if (std::all_of(P.begin(), P.end(), [](double p) { return p == 0.0; })) break;
    }
    return {plain(out[5]), plain(out[6])};
  }
  // The output pass from (x1, C1): every output to `out` (ids from its reserve), the summary's
  // sums added up. Chunks run again for the backward sweep without their outputs.
  void outputs(const Array& x1, const Array& C1, ResultWriter& out, const std::vector<int>& ids) {
    BackgroundWrites writes(out);
    out_ = &writes;
    ids_ = ids;
    if (warm_.joinable()) warm_.join();
    const Chunk all{0, n_};
    put(y_in, all, md_.y);
    put(V_in, all, md_.V);
    sweep(
        forward_, states_forward_fn(md_), 5, backward_, {x1, C1},
        [&](const Chunk& c, const std::vector<Array>& fo) { forward_outputs(c, fo); },
        [&](const Chunk& c, const std::vector<Array>& b) { backward_outputs(c, b); });
    writes.finish();
    out_ = nullptr;
  }
  const std::vector<double>& sums() const { return sums_; }
  std::int64_t first_pass_steps() const { return first_pass_steps_; }

 private:
  // A series on the host: read in place from host memory, else copied once.
  struct HostSeries {
    std::vector<double> copy;
    const double* data = nullptr;
    std::int64_t per_step = 1;
    DType dtype;
    explicit HostSeries(const Array& a) : per_step(a.ndim() == 2 ? a.shape()[1] : 1), dtype(a.dtype()) {
      const std::byte* host = a.dtype() == DType::float64 ? a.backend().host_data(a.slot()) : nullptr;
      if (!host) copy = a.to_vector<double>();
      data = host ? reinterpret_cast<const double*>(host) : copy.data();
    }
  };

  // The output pass's two chunk functions traced and compiled on a second thread while the
  // initialisation pass runs (the same shapes: every chunk is `length_` steps), without running
  // them (CompileOnly: until 2026-11-27 they ran once on the first chunk and the results were
  // dropped, which kept the first pass waiting ~1.5 ms more): on native their first call's
  // tracing, lowering and loading (~3 ms of the CLI's 102400-step fit) overlaps the first pass. Native
  // only (its memory, caches and jit are locked; a vulkan queue is not shared across threads).
  // An error there is dropped as well: the output pass meets it again and reports it. Its trace
  // events (compiles, dispatches) are emitted on that thread.
  void warm_output_pass() {
    if (md_.y.backend().info().backend != "native") return;
    const Inputs in = inputs(0);
    warm_ = std::thread([this, in] {
      try {
        const CompileOnly aot;  // traced, lowered and loaded, not run
        std::vector<Array> b = forward_({in.y, in.V, md_.x0, md_.C0, in.F});
        b.resize(5);
        b.insert(b.end(), {in.y, in.V, in.F, zeros({m_}), zeros({m_, m_})});
        (void)backward_(b);
      } catch (...) {}
    });
  }

  // Forward over the chunks from `from`, a checkpoint per chunk, then backward, last chunk first.
  // A chunk's per-step forward results are kept while all kept ones stay under kept_forward_bytes_
  // (the last chunk's always: it goes back first); any other chunk runs again from its checkpoint
  // with `again`, so memory stays O(chunk) for any n. Both return `per_step` arrays, then the
  // carry (x, C) after the chunk, then anything else; bwd takes those per-step arrays, the
  // chunk's (y, V, F) and the carry (r, N) of the step after it, and returns (r, N) before the
  // chunk first.
  template <class OnForward, class OnBackward>
  void sweep(const Fn& fwd, const Fn& again, std::size_t per_step, const Fn& bwd, std::pair<Array, Array> from,
             OnForward on_forward, OnBackward on_backward) {
    std::vector<std::pair<Array, Array>> checkpoints;
    std::vector<std::vector<Array>> kept(chunks_.size());
    std::int64_t kept_bytes = 0;
    for (std::size_t k = 0; k < chunks_.size(); ++k) {
      checkpoints.push_back(from);
      const Inputs in = inputs(k);
      std::vector<Array> fo = fwd({in.y, in.V, from.first, from.second, in.F});
      from = {fo[per_step], fo[per_step + 1]};
      on_forward(chunks_[k], fo);
      fo.resize(per_step);
      std::int64_t bytes = 0;
      for (const Array& a : fo) bytes += a.size() * static_cast<std::int64_t>(dtype_size(a.dtype()));
      if (k + 1 == chunks_.size() || kept_bytes + bytes <= kept_forward_bytes_) {
        kept[k] = std::move(fo);
        kept_bytes += bytes;
      }
    }
    Array r = zeros({m_}), N = zeros({m_, m_});
    for (std::size_t k = chunks_.size(); k-- > 0;) {
      const Chunk& c = chunks_[k];
      const Inputs ci = inputs(k);
      std::vector<Array> fo = std::move(kept[k]);
      if (fo.empty()) fo = again({ci.y, ci.V, checkpoints[k].first, checkpoints[k].second, ci.F});
      std::vector<Array> in(fo.begin(), fo.begin() + static_cast<std::ptrdiff_t>(per_step));
      in.insert(in.end(), {ci.y, ci.V, ci.F, r, N});
      const std::vector<Array> b = bwd(in);
      r = b[0];
      N = b[1];
      on_backward(c, b);
    }
  }

  // A chunk's (y, V, F) as the chunk functions take them; kept for the three sweeps that use each
  // chunk while all of them together stay under kKeptInputBytes (else made again each time).
  struct Inputs {
    Array y, V, F;
  };
  static constexpr std::int64_t kKeptInputBytes = std::int64_t{64} << 20;
  Inputs inputs(std::size_t k) {
    if (k < kept_.size() && !kept_[k].y.is_empty()) return kept_[k];
    const Chunk& c = chunks_[k];
    Inputs in{input(y_, c, NAN), input(V_, c, 1.0), rows(c)};
    const std::int64_t bytes =
        static_cast<std::int64_t>(chunks_.size()) * length_ * (2 + (md_.F.ndim() == 2 ? F_.per_step : 0)) * 8;
    if (bytes <= kKeptInputBytes) {
      kept_.resize(chunks_.size());
      kept_[k] = in;
    }
    return in;
  }
  // A chunk of a per-step series as `length_` steps (an upload, no kernel), padded with `pad`, or
  // with copies of the last real step when pad is NaN and the series is not y.
  Array input(const HostSeries& s, const Chunk& c, double pad) const {
    if (c.t0 == 0 && c.t1 == n_) return &s == &y_ ? md_.y : &s == &V_ ? md_.V : md_.F;
    std::vector<double> v(s.data + c.t0 * s.per_step, s.data + c.t1 * s.per_step);
    const auto k = static_cast<std::size_t>(s.per_step);
    const std::vector<double> last(v.end() - static_cast<std::ptrdiff_t>(k), v.end());
    while (v.size() < static_cast<std::size_t>(length_) * k) {
      if (std::isnan(pad) && &s != &y_)
        v.insert(v.end(), last.begin(), last.end());
      else
        v.push_back(pad);
    }
    return np::array(v, s.per_step == 1 ? Shape{length_} : Shape{length_, s.per_step}, s.dtype);
  }
  // Observation rows: the model's one row, or a chunk of its rows per step (padded with the last
  // real row: a zero row would make the padding's F C Fᵀ zero, and its 0/0 NaN).
  Array rows(const Chunk& c) const { return md_.F.ndim() == 2 ? input(F_, c, NAN) : md_.F; }
  // A copy of a small result as an array of its own: a jit output may be a view of a larger
  // buffer, and a program compiled for a view input is not the one warm_output_pass compiled.
  static Array plain(const Array& a) { return np::array(a.to_vector<double>(), a.shape(), a.dtype()); }
  Array zeros(Shape shape) const {
    std::int64_t k = 1;
    for (auto d : shape) k *= d;
    return np::array(std::vector<double>(static_cast<std::size_t>(k), 0.0), std::move(shape), md_.y.dtype());
  }
  // A chunk's step-major values of an output, written on the writer's thread (the padding not).
  void put(int out, const Chunk& c, const Array& a) { out_->put(ids_[out], c.t0, c.t1 - c.t0, a); }
  void forward_outputs(const Chunk& c, const std::vector<Array>& fo) {
    put(xf, c, fo[0]);
    put(Cf, c, fo[1]);
    put(Cp, c, fo[3]);
    int k = 7;
    for (int o : {yhat, resid0, resid, v, resid2}) put(o, c, fo[k++]);
    const std::vector<double> s = fo[k].to_vector<double>();
    sums_.resize(s.size(), 0.0);
    for (std::size_t i = 0; i < s.size(); ++i) sums_[i] += s[i];
  }
  void backward_outputs(const Chunk& c, const std::vector<Array>& b) {
    put(x, c, b[2]);
    put(C, c, b[3]);
    put(xstd, c, b[4]);
    put(ystd, c, b[5]);
  }

  std::int64_t kept_forward_bytes_;
  const detail::Model& md_;
  std::int64_t n_, m_, length_;
  HostSeries y_, V_, F_;
  std::vector<Chunk> chunks_;
  BackgroundWrites* out_ = nullptr;
  std::vector<Inputs> kept_;
  std::vector<int> ids_;
  std::vector<double> sums_;
  std::int64_t first_pass_steps_ = 0;
  Fn forward_, backward_;  // the output pass's (warmed by warm_)
  std::thread warm_;
};

}  // namespace

StreamedFit fit_streamed(const Array& y, const Array& s, const std::vector<double>& w, const Options& o,
                         const std::optional<Array>& X, ResultWriter& out, std::int64_t chunk,
                         std::int64_t kept_bytes) {
  if (o.algorithm != Algorithm::scan) throw Error("dlm: the streamed fit runs the scan algorithm only");
  if (chunk < 1) throw Error(fmt::format("dlm: chunk length {} must be positive", chunk));
  const detail::Model md = detail::model(y, s, w, o, X);
  const std::int64_t n = md.y.shape()[0], m = md.G.shape()[0];
  StreamedPass pass(md, chunk, kept_bytes);
  // first pass: the smoothed first state only; the second starts from x1 and 100·C1 (dlmfit)
  auto [x1, C1] = pass.first_state();
  // the toolbox's layouts: xf [m,n], Cf [m,m,n], x, C likewise, xstd [n,m], the series [n]
  auto series = [](const char* name) { return StepArray{name, {}, false}; };
  const std::vector<int> ids = out.reserve({{"xf", {m}},
                                            {"Cf", {m, m}},
                                            {"x", {m}},
                                            {"C", {m, m}},
                                            {"xstd", {m}, false},
                                            series("yhat"),
                                            series("ystd"),
                                            series("resid0"),
                                            series("resid"),
                                            series("v"),
                                            series("Cp"),
                                            series("resid2"),
                                            series("y"),
                                            series("V")},
                                           n);
  pass.outputs(x1, C1, out, ids);
  Fit summary;  // the scalars and small arrays of fields(Fit); its big arrays are the regions
  summary.nobs = static_cast<int>(md.observed);
  const std::vector<double>& sums = pass.sums();
  summary.lik = sums[0];
  summary.ssy = sums[1];
  summary.s2 = sums[2] / summary.nobs;
  summary.mse = sums[3] / summary.nobs;
  summary.mape = sums[4] / summary.nobs;
  summary.X = md.X;
  StreamedFit r;
  auto region = [&](Out o) { return out.reserved(ids[o]); };
  r.fields = {region(xf),
              region(Cf),
              region(x),
              region(C),
              region(xstd),
              Field::array("G", md.G),
              Field::array("F", md.X ? md.F0 : md.F),
              Field::array("W", md.W),
              region(y_in),
              region(V_in),
              Field::array("x0", x1),
              Field::array("C0", C1),
              region(yhat),
              region(ystd),
              region(resid0),
              region(resid),
              region(v),
              region(Cp),
              region(resid2)};
  summary_fields(summary, r.fields);
  r.lik = summary.lik;
  r.s2 = summary.s2;
  r.nobs = summary.nobs;
  r.first_pass_steps = pass.first_pass_steps();
  return r;
}

}  // namespace jx::dlm
