// lax.scan as a primitive whose body is a closed-over-nothing jaxpr:
//   operands  consts (nc) | init carry (nk) | xs (stacked on a leading axis of `length`)
//   body      (consts..., carry..., x...) -> (carry..., y...)
//   outputs   final carry | ys (stacked)
// Evaluation on a concrete backend is the planner's choice of path; this file implements the
// host loop (fallback) and the rules: jvp, a checkpointed transpose (forward pass keeps only
// the carry entering each step; the backward scan recomputes each step's linearization) and vmap.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <cstring>
#include <mutex>

#include "core/backends/backend.h"
#include "core/instrument/instrument.h"
#include "core/transform/control.h"
#include "core/transform/control_internal.h"
#include "core/transform/rules.h"
#include "core/trace/trace.h"

namespace jx {

// Turns a closed jaxpr's constants into leading inputs: returns the jaxpr and the constants.
std::pair<Jaxpr, std::vector<Array>> hoist(ClosedJaxpr cj) {
  Jaxpr j = std::move(cj.jaxpr);
  std::vector<int> in = j.constvars;
  in.insert(in.end(), j.invars.begin(), j.invars.end());
  j.invars = std::move(in);
  j.constvars.clear();
  typecheck(j);
  return {std::move(j), std::move(cj.consts)};
}

namespace {

// A vmapped scan's unbatched body (PrimParams::unbatched, batch_size, batched).
struct SeriesHint {
  std::shared_ptr<const SubProgram> unbatched;
  std::int64_t size = 0;
  std::vector<std::int64_t> batched;
};

// Traces fn on avals and binds a scan of it over operands (leading: the traced constants).
std::vector<Array> bind_scan(const FlatFn& fn, const std::vector<AVal>& in_avals, std::vector<Array> consts,
                             const std::vector<Array>& carry, const std::vector<Array>& xs, std::int64_t length,
                             bool reverse, ScanPaths require, const SeriesHint& series = {}) {
  auto [j, hoisted] = hoist(make_jaxpr_flat(fn, in_avals));
  PrimParams p;
  p.unbatched = series.unbatched;
  p.batch_size = series.size;
  p.batched = series.batched;
  p.num_consts = static_cast<int>(hoisted.size() + consts.size());
  p.num_carry = static_cast<int>(carry.size());
  p.length = length;
  p.reverse = reverse;
  p.require_paths = require;
  p.body = std::make_shared<JaxprBody>(std::move(j));
  std::vector<Array> ops = hoisted;
  ops.insert(ops.end(), consts.begin(), consts.end());
  ops.insert(ops.end(), carry.begin(), carry.end());
  ops.insert(ops.end(), xs.begin(), xs.end());
  return bind(Prim::scan, ops, p);
}

AVal unstacked(AVal a) {
  a.shape.erase(a.shape.begin());
  return a;
}

Array zeros_of(const AVal& a) { return np::zeros(a.shape, a.dtype); }

std::mutex g_cb_mu;
std::unique_ptr<trace::Subscription> g_cb;  // set_scan_path_callback's subscription to scan_path events

}  // namespace

std::string scan_path_details(ScanPath path, std::int64_t length, const std::string& reason) {
  switch (path) {
    case ScanPath::fused: return fmt::format("{} steps in one call: {}", length, reason);
    case ScanPath::preencoded: return fmt::format("{} steps recorded into one submission: {}", length, reason);
    case ScanPath::fallback: return fmt::format("{} steps as a host loop: {}", length, reason);
  }
  return reason;
}

void report_scan_path(ScanPath path, const std::string& backend, const std::string& details) {
  debug_log(1, fmt::format("scan on {}: path {} ({})", backend, scan_path_name(path), details));
  trace::emit({trace::EventKind::scan_path, backend, std::string(scan_path_name(path)), 0, false, 0.0, details, path});
}

void require_scan_path(ScanPath path, const std::string& backend, const std::string& details, ScanPaths require) {
  if (require.allows(path)) return;
  report_scan_path(path, backend, details);
  throw ScanPathError(fmt::format("Scan require_path not satisfied: got \"{}\" but required one of [{}]",
                                  scan_path_name(path), require.str()));
}

namespace {

// xs[t] for every step t, read once and uploaded row by row. (A slice of xs per step would be a
// kernel with the step's offset in it: a backend that compiles kernels would compile one per step.)
class HostRows {
 public:
  explicit HostRows(const Array& x) : on_(&x.backend()), bytes_(x.raw_bytes()), row_(unstacked(x.aval())) {}
  Array row(std::int64_t t) const {
    const std::size_t n = row_.bytes();
    return array_from_bytes(std::span(bytes_).subspan(static_cast<std::size_t>(t) * n, n), row_, on_);
  }

 private:
  Backend* on_;
  std::vector<std::byte> bytes_;
  AVal row_;
};

// The stacked ys of a host loop. On a backend whose slots are host memory each step's row is
// copied into one host buffer as it comes and the stack is one array at the end; elsewhere the
// rows stay arrays on their device and are concatenated once. (Kept as arrays on the host, a long
// scan's rows were that many live slots and one concatenation of them all: the cpu oracle of a
// 70000-step scan spent most of its time in malloc over a heap of a few hundred thousand blocks.)
class StackedRows {
 public:
  StackedRows(AVal row, std::int64_t length, bool reverse) : row_(std::move(row)), length_(length), reverse_(reverse) {}
  void put(std::int64_t t, const Array& y) {
    const std::size_t n = row_.bytes();
    if (t == first_step()) {  // the first row decides: host rows when its slot is host memory
      const bool concrete = !y.is_tracer() && !y.is_disposed() && !y.is_empty();
      if (n > 0 && concrete && y.backend().host_data(y.slot())) {
        on_ = &y.backend();
        bytes_.resize(static_cast<std::size_t>(length_) * n);
      } else {
        rows_.resize(static_cast<std::size_t>(length_));
      }
    }
    if (on_) {  // a body's rows all come from the backend of the first
      const std::byte* host = y.backend().host_data(y.slot());
      if (!host) throw Error(fmt::format("scan: the output of step {} is not in host memory as the first was", t));
      std::memcpy(bytes_.data() + static_cast<std::size_t>(t) * n, host, n);
      return;
    }
    Shape s = row_.shape;
    s.insert(s.begin(), 1);
    rows_[static_cast<std::size_t>(t)] = lax::reshape(y, s);
  }
  Array take() {
    AVal all = row_;
    all.shape.insert(all.shape.begin(), length_);
    if (length_ == 0) return np::zeros(all.shape, all.dtype);
    if (on_) return array_from_bytes(bytes_, all, on_);
    return rows_.size() == 1 ? rows_[0] : lax::concatenate(rows_, 0);
  }

 private:
  std::int64_t first_step() const { return reverse_ ? length_ - 1 : 0; }  // the first put's step
  AVal row_;
  std::int64_t length_;
  bool reverse_;
  Backend* on_ = nullptr;         // host rows: their backend
  std::vector<std::byte> bytes_;  // host rows, step-major
  std::vector<Array> rows_;       // device rows
};

// The host loop: one body evaluation per step.
std::vector<Array> run_fallback(const FlatFn& body, const PrimParams& p, const std::vector<Array>& ops,
                                const std::vector<AVal>& y_avals) {
  const std::size_t nc = p.num_consts, nk = p.num_carry;
  std::vector<Array> consts(ops.begin(), ops.begin() + nc);
  std::vector<Array> carry(ops.begin() + nc, ops.begin() + nc + nk);
  std::vector<HostRows> xs(ops.begin() + nc + nk, ops.end());
  std::vector<StackedRows> ys;
  for (const AVal& a : y_avals) ys.emplace_back(a, p.length, p.reverse);
  for (std::int64_t i = 0; i < p.length; ++i) {
    const std::int64_t t = p.reverse ? p.length - 1 - i : i;
    std::vector<Array> in = consts;
    in.insert(in.end(), carry.begin(), carry.end());
    for (const HostRows& x : xs) in.push_back(x.row(t));
    auto out = body(in);
    for (std::size_t k = 0; k < nk; ++k) carry[k] = out[k];
    for (std::size_t k = 0; k < ys.size(); ++k) ys[k].put(t, out[nk + k]);
  }
  std::vector<Array> res = carry;
  for (StackedRows& y : ys) res.push_back(y.take());
  return res;
}

}  // namespace

std::vector<Array> control_eval(Prim prim, const std::vector<Array>& ops, const PrimParams& p,
                                const CompiledControl& compiled) {
  if (prim == Prim::while_loop) return while_eval(ops, p);
  if (prim == Prim::cond) return cond_eval(ops, p);
  if (prim != Prim::scan && prim != Prim::associative_scan)
    throw Error(fmt::format("no control implementation for {}", prim_name(prim)));
  std::string why = "no scan compiler is linked";
  if (compiled)
    if (auto r = compiled(prim, p, ops, why)) return *r;
  if (prim == Prim::associative_scan) return assoc_eval(ops, p);
  const Jaxpr& j = scan_body_jaxpr(p);
  return scan_host_loop([&](const std::vector<Array>& in) { return eval_jaxpr(j, {}, in); }, p, ops, why);
}

const Jaxpr& scan_body_jaxpr(const PrimParams& p) { return static_cast<const JaxprBody&>(*p.body).jaxpr; }
const Jaxpr* unbatched_jaxpr(const PrimParams& p) {
  return p.unbatched ? &static_cast<const JaxprBody&>(*p.unbatched).jaxpr : nullptr;
}

std::vector<Array> scan_host_loop(const FlatFn& body, const PrimParams& p, const std::vector<Array>& ops,
                                  const std::string& why) {
  const Backend& be = ops.empty() ? default_backend() : ops[0].backend();
  report_scan_path(ScanPath::fallback, be.info().backend, scan_path_details(ScanPath::fallback, p.length, why));
  auto outs = p.body->out_avals();
  std::vector<AVal> y_avals(outs.begin() + p.num_carry, outs.end());
  return run_fallback(body, p, ops, y_avals);
}

void set_scan_path_callback(ScanPathCallback cb) {
  std::lock_guard lock(g_cb_mu);
  g_cb.reset();
  if (!cb) return;
  g_cb = std::make_unique<trace::Subscription>([cb = std::move(cb)](const trace::Event& e) {
    if (e.kind == trace::EventKind::scan_path) cb(e.path, e.backend, e.detail);
  });
}

std::vector<Array> scan_flat(const FlatFn& body, std::size_t num_carry, const std::vector<Array>& init,
                             const std::vector<Array>& xs, const ScanOptions& o) {
  if (num_carry != init.size())
    throw ShapeError(fmt::format("scan: {} carries declared, {} given", num_carry, init.size()));
  std::optional<std::int64_t> length = o.length;
  for (const Array& x : xs) {
    if (x.ndim() == 0)
      throw ShapeError(fmt::format("scan: xs leaves must have a leading axis to scan over, got {}", x.aval().str()));
    if (length && *length != x.shape()[0])
      throw ShapeError(
          fmt::format("scan: xs leading axis {} does not match length {} ({})", x.shape()[0], *length, x.aval().str()));
    length = x.shape()[0];
  }
  if (!length) throw ShapeError("scan: length must be given when there are no xs");
  if (*length < 0) throw ShapeError(fmt::format("scan: negative length {}", *length));
  std::vector<AVal> avals;
  for (const Array& c : init) avals.push_back(c.aval());
  for (const Array& x : xs) avals.push_back(unstacked(x.aval()));
  FlatFn checked = [&](const std::vector<Array>& in) {
    auto out = body(in);
    if (out.size() < num_carry)
      throw ShapeError(fmt::format("scan: the body returns {} values for {} carries", out.size(), num_carry));
    for (std::size_t k = 0; k < num_carry; ++k)
      if (!(out[k].aval() == avals[k]))
        throw ShapeError(fmt::format("scan: the body returns carry {} as {} but it entered as {}", k,
                                     out[k].aval().str(), avals[k].str()));
    return out;
  };
  return bind_scan(checked, avals, {}, init, xs, *length, o.reverse, o.require_path);
}

// ---- jvp ----
std::pair<std::vector<Array>, std::vector<Array>> control_jvp(Prim prim, const std::vector<Array>& x,
                                                              const std::vector<std::optional<Array>>& t,
                                                              const PrimParams& p, bool linearizing) {
  if (prim == Prim::associative_scan) return assoc_jvp(x, t, p, linearizing);
  if (prim == Prim::while_loop) return while_jvp(x, t, p, linearizing);
  if (prim == Prim::cond) return cond_jvp(x, t, p, linearizing);
  if (prim != Prim::scan) throw Error(fmt::format("jvp: no control rule for {}", prim_name(prim)));
  const std::size_t nc = p.num_consts, nk = p.num_carry, n = x.size();
  const Jaxpr& j = scan_body_jaxpr(p);
  const auto bin = p.body->in_avals();
  const std::size_t ny = j.outs.size() - nk;
  std::vector<Array> tan;
  for (std::size_t i = 0; i < n; ++i) tan.push_back(t[i] ? *t[i] : np::zeros_like(x[i]));
  std::vector<Array> consts(x.begin(), x.begin() + nc), carry(x.begin() + nc, x.begin() + nc + nk),
      xs(x.begin() + nc + nk, x.end());
  // 1. primal scan that also stacks the carry entering each step (the only residual kept)
  FlatFn with_carries = [&](const std::vector<Array>& in) {
    auto out = eval_jaxpr(j, {}, in);
    out.insert(out.end(), in.begin() + nc, in.begin() + nc + nk);
    return out;
  };
  auto prim_out = bind_scan(with_carries, bin, consts, carry, xs, p.length, p.reverse, p.require_paths);
  std::vector<Array> y(prim_out.begin(), prim_out.begin() + nk + ny);
  std::vector<Array> cs(prim_out.begin() + nk + ny, prim_out.end());
  // 2. tangent scan: consts (consts, t_consts) | carry t_c | xs (cs, xs, t_xs); the body
  //    recomputes the primal step and returns only tangents (linear in the t_* inputs)
  FlatFn tangent_body = [&](const std::vector<Array>& in) {
    // in: consts | t_consts | t_c | c | x | t_x
    std::vector<Array> prim_in(in.begin(), in.begin() + nc), tan_in(in.begin() + nc, in.begin() + 2 * nc);
    prim_in.insert(prim_in.end(), in.begin() + 2 * nc + nk, in.begin() + 2 * nc + 2 * nk);
    tan_in.insert(tan_in.end(), in.begin() + 2 * nc, in.begin() + 2 * nc + nk);
    const std::size_t nx = n - nc - nk;
    prim_in.insert(prim_in.end(), in.begin() + 2 * nc + 2 * nk, in.begin() + 2 * nc + 2 * nk + nx);
    tan_in.insert(tan_in.end(), in.begin() + 2 * nc + 2 * nk + nx, in.end());
    return jvp_flat([&](const std::vector<Array>& a) { return eval_jaxpr(j, {}, a); }, prim_in, tan_in, linearizing)
        .second;
  };
  std::vector<Array> tconsts = consts;
  tconsts.insert(tconsts.end(), tan.begin(), tan.begin() + nc);
  std::vector<Array> tcarry(tan.begin() + nc, tan.begin() + nc + nk);
  std::vector<Array> txs = cs;
  txs.insert(txs.end(), xs.begin(), xs.end());
  txs.insert(txs.end(), tan.begin() + nc + nk, tan.end());
  // reorder avals to match (consts | t_consts | t_c | c | x | t_x)
  std::vector<AVal> order;
  for (std::size_t i = 0; i < 2 * nc; ++i) order.push_back(bin[i % nc]);
  for (std::size_t i = 0; i < nk; ++i) order.push_back(bin[nc + i]);
  for (std::size_t i = 0; i < nk; ++i) order.push_back(bin[nc + i]);
  for (std::size_t i = nc + nk; i < n; ++i) order.push_back(bin[i]);
  for (std::size_t i = nc + nk; i < n; ++i) order.push_back(bin[i]);
  auto ty = bind_scan(tangent_body, order, tconsts, tcarry, txs, p.length, p.reverse, p.require_paths);
  return {y, ty};
}

// ---- transpose ----
std::vector<std::optional<Array>> control_transpose(Prim prim, const std::vector<LinearIn>& in,
                                                    const std::vector<Array>& cts, const PrimParams& p) {
  if (prim == Prim::associative_scan) return assoc_transpose(in, cts, p);
  if (prim == Prim::cond) return cond_transpose(in, cts, p);
  if (prim == Prim::while_loop)
    throw NonlinearError(
        "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic start/stop "
        "values");
  if (prim != Prim::scan)
    throw NonlinearError(fmt::format("Nonlinear operation in backward pass for {}", prim_name(prim)));
  const std::size_t nc = p.num_consts, nk = p.num_carry, n = in.size();
  const Jaxpr& j = scan_body_jaxpr(p);
  const auto bin = p.body->in_avals(), bout = p.body->out_avals();
  // Carries are always transposed as linear: a tangent scan's carry may be an instantiated
  // zero (a constant operand), but the body is linear in it all the same.
  std::vector<std::size_t> lin_c, non_c, lin_x, non_x;
  for (std::size_t i = 0; i < nc; ++i) (in[i].linear ? lin_c : non_c).push_back(i);
  for (std::size_t i = nc + nk; i < n; ++i) (in[i].linear ? lin_x : non_x).push_back(i);
  // The body as a linear jaxpr: nonlinear inputs become constants.
  Jaxpr lj = j;
  lj.invars.clear();
  lj.constvars.clear();
  for (auto i : lin_c) lj.invars.push_back(j.invars[i]);
  for (std::size_t k = 0; k < nk; ++k) lj.invars.push_back(j.invars[nc + k]);
  for (auto i : lin_x) lj.invars.push_back(j.invars[i]);
  for (auto i : non_c) lj.constvars.push_back(j.invars[i]);
  for (auto i : non_x) lj.constvars.push_back(j.invars[i]);
  // transposed scan: consts non_c | carry (ct_c, acc over lin_c) | xs (non_x, ct_y), reversed
  std::vector<Array> consts, carry, xs;
  std::vector<AVal> avals;
  for (auto i : non_c) {
    consts.push_back(in[i].value);
    avals.push_back(bin[i]);
  }
  for (std::size_t k = 0; k < nk; ++k) {
    carry.push_back(cts[k].is_empty() ? zeros_of(bout[k]) : cts[k]);
    avals.push_back(bout[k]);
  }
  for (auto i : lin_c) {
    carry.push_back(zeros_of(bin[i]));
    avals.push_back(bin[i]);
  }
  for (auto i : non_x) {
    xs.push_back(in[i].value);
    avals.push_back(bin[i]);
  }
  const std::size_t ny = bout.size() - nk;
  for (std::size_t k = 0; k < ny; ++k) {
    AVal s = bout[nk + k];
    s.shape.insert(s.shape.begin(), p.length);
    xs.push_back(cts[nk + k].is_empty() ? zeros_of(s) : cts[nk + k]);
    avals.push_back(bout[nk + k]);
  }
  FlatFn tbody = [&](const std::vector<Array>& a) {
    // a: non_c | ct_c | acc | non_x | ct_y
    std::size_t pos = 0;
    std::vector<Array> kc(a.begin(), a.begin() + non_c.size());
    pos += non_c.size();
    std::vector<Array> ct_out(a.begin() + pos, a.begin() + pos + nk);
    pos += nk;
    std::vector<Array> acc(a.begin() + pos, a.begin() + pos + lin_c.size());
    pos += lin_c.size();
    kc.insert(kc.end(), a.begin() + pos, a.begin() + pos + non_x.size());
    pos += non_x.size();
    ct_out.insert(ct_out.end(), a.begin() + pos, a.end());
    auto g = backward_pass(lj, kc, ct_out);                                           // lin_c | carry | lin_x
    std::vector<Array> out(g.begin() + lin_c.size(), g.begin() + lin_c.size() + nk);  // ct of the previous carry
    for (std::size_t i = 0; i < lin_c.size(); ++i) out.push_back(lax::add(acc[i], g[i]));
    out.insert(out.end(), g.begin() + lin_c.size() + nk, g.end());
    return out;
  };
  auto r = bind_scan(tbody, avals, consts, carry, xs, p.length, !p.reverse, ScanPaths{});
  std::vector<std::optional<Array>> res(n);
  for (std::size_t k = 0; k < nk; ++k)
    if (in[nc + k].linear) res[nc + k] = r[k];
  for (std::size_t i = 0; i < lin_c.size(); ++i) res[lin_c[i]] = r[nk + i];
  for (std::size_t i = 0; i < lin_x.size(); ++i) res[lin_x[i]] = r[nk + lin_c.size() + i];
  return res;
}

// ---- vmap ----
std::vector<std::pair<Array, std::optional<std::int64_t>>> control_batch(
    Prim prim, const std::vector<Array>& vals, const std::vector<std::optional<std::int64_t>>& bd, std::int64_t size,
    const PrimParams& p) {
  if (prim == Prim::associative_scan) return assoc_batch(vals, bd, size, p);
  if (prim == Prim::while_loop) return while_batch(vals, bd, size, p);
  if (prim == Prim::cond) return cond_batch(vals, bd, size, p);
  if (prim != Prim::scan) throw Error(fmt::format("vmap: no control rule for {}", prim_name(prim)));
  const std::size_t nc = p.num_consts, nk = p.num_carry, n = vals.size();
  const Jaxpr& j = scan_body_jaxpr(p);
  const auto bin = p.body->in_avals();
  std::vector<Array> consts, carry, xs;
  std::vector<std::optional<std::int64_t>> in_axes;
  std::vector<AVal> avals;
  for (std::size_t i = 0; i < nc; ++i) {
    consts.push_back(bd[i] ? batch_axis_at(vals[i], bd[i], 0, size) : vals[i]);
    in_axes.push_back(bd[i] ? std::optional<std::int64_t>(0) : std::nullopt);
    avals.push_back(bd[i] ? with_batch_axis(bin[i], 0, size) : bin[i]);
  }
  for (std::size_t i = nc; i < nc + nk; ++i) {  // every carry batched (a body may batch an unbatched one)
    carry.push_back(batch_axis_at(vals[i], bd[i], 0, size));
    in_axes.push_back(0);
    avals.push_back(with_batch_axis(bin[i], 0, size));
  }
  for (std::size_t i = nc + nk; i < n; ++i) {  // xs batched on axis 1: the scan axis stays first
    xs.push_back(bd[i] ? batch_axis_at(vals[i], bd[i], 1, size) : vals[i]);
    in_axes.push_back(bd[i] ? std::optional<std::int64_t>(0) : std::nullopt);
    avals.push_back(bd[i] ? with_batch_axis(bin[i], 0, size) : bin[i]);
  }
  FlatFn body = vmap_flat([&](const std::vector<Array>& a) { return eval_jaxpr(j, {}, a); }, in_axes, {0});
  // per series, the scan is the one vmap was given: its body over one slice of every batched operand
  SeriesHint series{p.body, size, {}};
  for (const auto& ax : in_axes) series.batched.push_back(ax ? 1 : 0);
  auto out = bind_scan(body, avals, consts, carry, xs, p.length, p.reverse, p.require_paths, series);
  std::vector<std::pair<Array, std::optional<std::int64_t>>> res;
  for (std::size_t k = 0; k < out.size(); ++k) res.push_back({out[k], k < nk ? 0 : 1});
  return res;
}

}  // namespace jx
