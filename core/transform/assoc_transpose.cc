// Reverse mode through lax.associative_scan without differentiating its odd/even recursion.
// With y_0 = x_0 and y_i = y_{i-1} ∘ x_i (in scan order) the tangents are the scan of (element,
// tangent) pairs that forward mode binds (assoc_jvp). Linear in the tangents, it transposes to
//   g_i = ȳ_i + Σ_{i' > i} (∂y_{i'}/∂y_i)ᵀ·ȳ_{i'},   x̄_i = (∂(a ∘ b)/∂b)ᵀ·g_i,   c̄ = Σ_i (∂(a ∘ b)/∂c)ᵀ·g_i
// (derivatives at (y_{i-1}, x_i); x̄_0 = g_0), and g is a reverse associative scan: for a segment
// [j..m] take (y_j, T = x_{j+1} ∘ … ∘ x_{m+1}, w = Σ_{i=j..m} (∂y_i/∂y_j)ᵀ·ȳ_i). Since
// y_{m+1} = y_j ∘ T, the chain rule joins segment [j..m] with the next one [m+1..k] as
//   (y_j, T ∘ T', w + (∂(a ∘ b)/∂a at (y_j, T))ᵀ·w'),
// a position's own element is (y_j, x_{j+1}, ȳ_j) and g_j is w of [j..n-1]: an element three
// leaves wide whose combine is one combine and one vjp of it, no Jacobian formed. The pair scan
// is bound where that reverse scan runs in a few dispatches (launch-bound backends; for large
// elements at many positions, inside a few levels of the recursion: assoc_grad_form); elsewhere
// linearize goes through the fold (a lax.scan, one combine per step), whose jvp and transpose are
// the scan's, or, for a jit under a buffer budget on a sequential backend (whose compiled loops
// bind every operand at once), the odd/even recursion.
#include <fmt/format.h>

#include <array>
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "core/backends/backend.h"
#include "core/backends/target.h"
#include "core/base/env.h"
#include "core/np/np.h"
#include "core/transform/rules.h"
#include "core/transform/control_internal.h"

namespace jx {
namespace {

// Cotangents of fn's inputs at primals, for cotangents of its outputs (empty: zero).
std::vector<Array> vjp_at(const FlatFn& fn, const std::vector<Array>& primals, const std::vector<Array>& cts) {
  return vjp_flat(fn, primals).second.transpose(cts);
}

// The triple scan's three groups of leaves (prefix, segment, cotangent), each as one [L, Σ s_l]
// array along axis 0 when every leaf has one dtype and the budget cannot bind the 3k leaves'
// inputs and outputs (2·3k + 1 buffers: the backend would pack them itself): the scan then binds
// 3 buffers each way instead of 3k (7 under a budget of 8). Otherwise the leaves stay as they are
// (no packing copies: at 1024 series, m = 2, the three concatenations of [L, 16] took 0.66 ms of
// the gradient's 6.1 ms on the H200).
struct TripleLayout {
  int ax;
  bool flat;
  std::vector<Shape> elem, welem;  // element shapes (the scanned axis removed) of the leaves, of the w leaves

  static Shape without(Shape s, int ax) {
    s.erase(s.begin() + ax);
    return s;
  }
  Array pack(const std::vector<Array>& leaves) const {
    std::vector<Array> r;
    for (const Array& x : leaves) {
      const std::int64_t L = x.shape()[ax];
      r.push_back(lax::reshape(np::moveaxis(x, ax, 0), {L, L == 0 ? 0 : x.size() / L}));
    }
    return r.size() == 1 ? r[0] : lax::concatenate(r, 1);
  }
  std::vector<Array> unpack(const Array& a, const std::vector<Shape>& shapes) const {
    std::vector<Array> r;
    const std::int64_t L = a.shape()[0];
    std::int64_t off = 0;
    for (const Shape& e : shapes) {
      std::int64_t sz = 1;
      for (auto d : e) sz *= d;
      Shape s = e;
      s.insert(s.begin(), L);
      r.push_back(np::moveaxis(lax::reshape(lax::slice(a, {0, off}, {L, off + sz}), s), 0, ax));
      off += sz;
    }
    return r;
  }
  std::vector<Array> to_elems(const std::vector<Array>& y0, const std::vector<Array>& s,
                              const std::vector<Array>& w) const {
    if (flat) return {pack(y0), pack(s), pack(w)};
    std::vector<Array> r = y0;
    r.insert(r.end(), s.begin(), s.end());
    r.insert(r.end(), w.begin(), w.end());
    return r;
  }
  // (prefix, segment, cotangent) leaves of scan elements
  std::array<std::vector<Array>, 3> from_elems(const std::vector<Array>& e) const {
    if (flat) return {unpack(e[0], elem), unpack(e[1], elem), unpack(e[2], welem)};
    const std::size_t k = elem.size();
    return {std::vector<Array>(e.begin(), e.begin() + k), std::vector<Array>(e.begin() + k, e.begin() + 2 * k),
            std::vector<Array>(e.begin() + 2 * k, e.end())};
  }
};

// The backend a scan over x runs on: the staged target's, else the first concrete element's,
// else the default one.
const Backend& backend_of(const std::vector<Array>& x) {
  if (const Target* t = staging_target(); t && t->backend) return *t->backend;
  for (const Array& a : x)
    if (!a.is_tracer()) return a.backend();
  return default_backend();
}

// Whether one kernel may bind `buffers`: under the budget of the target being staged, else
// (eager) of the backend the scan runs on.
bool binds_all(std::int64_t buffers, const std::vector<Array>& x) {
  const Target* t = staging_target();
  const int budget = t ? t->budget : backend_of(x).info().limits.max_buffers_per_kernel;
  return budget <= 0 || buffers <= budget;
}

[[noreturn]] void nonlinear(const char* why) {
  throw NonlinearError(fmt::format("Nonlinear operation in backward pass for associative_scan ({})", why));
}

}  // namespace

namespace {

// Positions times floats per position of the scan's elements x (consts first).
std::int64_t scan_work(const std::vector<Array>& x, const PrimParams& p) {
  std::int64_t w = 0;
  for (std::size_t i = static_cast<std::size_t>(p.num_consts); i < x.size(); ++i) w += x[i].size();
  return w;
}

}  // namespace

// JX_ASSOC_GRAD_LEVELS, else the fewest levels (at least 1) that leave the inner pair scan at most
// JX_ASSOC_GRAD_INNER_WORK positions × floats (default 2^20). Each level halves that scan's work
// (~10 combine-units a position against the level's ~4) and adds ~20 dispatches. H200, float32,
// N = 102400, the DLM gradient (bench/results/2026-11-29-h200-assoc-grad-depth and
// 2026-11-28-h200-assoc-grad-levels): fastest at 3 levels for m = 4 (work 5.7·10^6), 5 for m = 8
// (21·10^6), 6 for m = 13 (55·10^6), 7 for m = 16 (82·10^6): the work left each time 0.6–0.9·10^6.
int assoc_grad_levels(const std::vector<Array>& x, const PrimParams& p) {
  if (const char* e = std::getenv("JX_ASSOC_GRAD_LEVELS"); e && *e)
    return static_cast<int>(std::max<std::int64_t>(0, env_int("JX_ASSOC_GRAD_LEVELS", 0)));
  const std::int64_t inner = std::max<std::int64_t>(1, env_int("JX_ASSOC_GRAD_INNER_WORK", std::int64_t{1} << 20));
  int levels = 1;
  for (std::int64_t w = (scan_work(x, p) + 1) / 2; w > inner && levels < 62; w = (w + 1) / 2) ++levels;
  return levels;
}

namespace {

// JX_ASSOC_GRAD=pairs|levels|recursion|fold: a form chosen by hand (measurements); else none.
std::optional<AssocGradForm> forced_form() {
  const char* e = std::getenv("JX_ASSOC_GRAD");
  if (!e || !*e) return std::nullopt;
  const std::string_view v(e);
  if (v == "pairs") return AssocGradForm::pairs;
  if (v == "levels") return AssocGradForm::levels;
  if (v == "recursion") return AssocGradForm::recursion;
  if (v == "fold") return AssocGradForm::fold;
  throw Error(fmt::format("JX_ASSOC_GRAD={}: expected pairs, levels, recursion or fold", v));
}

}  // namespace

// Launch-bound backends: the pair scan (its transpose, the triple scan, in a few dispatches) or,
// for a batch of one series whose positions × floats per position reach JX_ASSOC_GRAD_MIN_WORK
// (default 2·10^6), the levels form. Its recursion levels do ~4 combine-units a position (the
// combine, its vjp) in elementwise kernels; the triple scan does ~10 (a composition, a recomputed
// combine and its vjp), but the levels cost ~30 dispatches each. H200, float32, N = 102400
// (bench/results/2026-11-28-h200-assoc-grad-levels): the DLM gradient at m = 4, 8, 13, 16 takes
// 0.70, 0.77, 0.40, 0.47 times the triple scan's time with 5 levels; at m = 13, N = 1600
// (n·e = 0.85·10^6) the triple scan is faster (1.53 against 2.25 ms). The depth: assoc_grad_levels.
AssocGradForm assoc_grad_form(const std::vector<Array>& x, const PrimParams& p) {
  if (const auto f = forced_form()) return *f;
  const Target* t = staging_target();
  const BackendLimits& lim = t ? t->limits : backend_of(x).info().limits;
  if (lim.launch_bound)
    return !p.unbatched && scan_work(x, p) >= env_int("JX_ASSOC_GRAD_MIN_WORK", 2'000'000) ? AssocGradForm::levels
                                                                                           : AssocGradForm::pairs;
  // a compiled loop binds all its operands at once: under a buffer budget, the recursion's kernels
  if (t && t->budget > 0) return AssocGradForm::recursion;
  // combines on threads: the pair scan's 2x work spread over them beats one sequential fold
  return lim.parallel_assoc_scans ? AssocGradForm::pairs : AssocGradForm::fold;
}

std::pair<std::vector<Array>, std::vector<Array>> assoc_linearize_fold(const std::vector<Array>& x,
                                                                       const std::vector<std::optional<Array>>& t,
                                                                       const PrimParams& p) {
  std::vector<Array> all;
  for (std::size_t i = 0; i < x.size(); ++i) all.push_back(t[i] ? *t[i] : np::zeros_like(x[i]));
  return jvp_flat([&](const std::vector<Array>& in) { return assoc_fold(in, p); }, x, all, true);
}

namespace {

// The transpose of a pair scan (see assoc_transpose below): its layout and the two steps, the
// reverse scan of (prefix, segment, cotangent) triples that gives g, and the vjp of the combine's
// other operands that gives x̄ and c̄.
struct PairTranspose {
  const PrimParams& p;
  const Jaxpr& j;                           // the combine: consts | a | b -> c
  std::size_t k, nc;                        // leaves, combine constants
  const std::vector<std::int64_t>&tc, &fl;  // tangent consts, float leaves
  std::size_t nf, ntc;
  int ax;
  std::vector<Array> consts, x;  // the primal constants and elements
  std::int64_t n = 0;

  Array in_order(const Array& a) const { return p.reverse ? np::flip(a, std::vector<std::int64_t>{ax}) : a; }
  std::vector<Array> float_cts(const std::vector<Array>& per_float) const {  // one per leaf, empty (zero) elsewhere
    std::vector<Array> c(k);
    for (std::size_t q = 0; q < nf; ++q) c[fl[q]] = per_float[q];
    return c;
  }
  std::vector<Array> floats(const std::vector<Array>& all) const {
    std::vector<Array> r;
    for (std::int64_t l : fl) r.push_back(all[static_cast<std::size_t>(l)]);
    return r;
  }

  // g from ȳ (per float leaf, in scan order): segments [j..m] as (y_j, T = x_{j+1} ∘ … ∘ x_{m+1},
  // w = Σ_{i=j..m} (∂y_i/∂y_j)ᵀ·ȳ_i), so a position's own element is (y_j, x_{j+1}, ȳ_j) and the
  // segment [j..n-1] gives g_j = w. (The last element's x_{n-1} stands in for x_n: only T of
  // segments ending at n-1 sees it, and no segment lies after those.) Sets xr (x_j) and ystart
  // (y_{j-1}), j ≥ 1, for bars().
  std::vector<Array> reverse_scan(const std::vector<Array>& g, std::vector<Array>& xr,
                                  std::vector<Array>& ystart) const {
    PrimParams pp;  // the primal scan again: its prefixes y
    pp.num_consts = static_cast<int>(nc);
    pp.axis = p.axis;
    pp.reverse = p.reverse;
    pp.body = p.tangent_of;
    std::vector<Array> ops = consts;
    ops.insert(ops.end(), x.begin(), x.end());
    const auto y = bind(Prim::associative_scan, ops, pp);
    std::vector<Array> yo, xnext;  // y_j and x_{j+1} (x_{n-1} again at the end)
    for (std::size_t l = 0; l < k; ++l) {
      yo.push_back(in_order(y[l]));
      const Array xo = in_order(x[l]);
      xr.push_back(lax::slice_in_dim(xo, 1, n, 1, ax));
      xnext.push_back(lax::concatenate({xr.back(), lax::slice_in_dim(xo, n - 1, n, 1, ax)}, ax));
      ystart.push_back(lax::slice_in_dim(yo.back(), 0, n - 1, 1, ax));
    }
    const lax::AssocFn comb = assoc_combine_fn(j, consts, ax);
    TripleLayout lay{ax, !binds_all(6 * static_cast<std::int64_t>(k) + 1, x), {}, {}};
    for (std::size_t l = 0; l < k; ++l) {
      lay.flat = lay.flat && x[l].dtype() == x[0].dtype();
      lay.elem.push_back(TripleLayout::without(x[l].shape(), ax));
    }
    for (std::int64_t l : fl) lay.welem.push_back(lay.elem[static_cast<std::size_t>(l)]);
    return lay.from_elems(lax::associative_scan_flat(
        [&](const std::vector<Array>& later_e, const std::vector<Array>& earlier_e) {
          const auto earlier = lay.from_elems(earlier_e);  // (no structured bindings: a lambda below reads them)
          const std::vector<Array>&y0 = earlier[0], &t = earlier[1], &w = earlier[2];
          const auto later = lay.from_elems(later_e);
          auto back = floats(vjp_at([&](const std::vector<Array>& a) { return comb(a, t); }, y0, float_cts(later[2])));
          std::vector<Array> w_new;
          for (std::size_t q = 0; q < nf; ++q) w_new.push_back(lax::add(w[q], back[q]));
          return lay.to_elems(y0, comb(t, later[1]), w_new);
        },
        lay.to_elems(yo, xnext, g), /*reverse=*/true, lay.flat ? 0 : ax))[2];
  }

  // c̄ (the tangent consts') then x̄_j (every leaf's), through the combine's other operands at
  // (y_{j-1}, x_j), j ≥ 1
  std::vector<Array> bars(const std::vector<Array>& g, const std::vector<Array>& xr,
                          const std::vector<Array>& ystart) const {
    std::vector<Array> g_rest;
    for (const Array& gq : g) g_rest.push_back(lax::slice_in_dim(gq, 1, n, 1, ax));
    std::vector<Array> prims;
    for (std::int64_t i : tc) prims.push_back(consts[static_cast<std::size_t>(i)]);
    prims.insert(prims.end(), xr.begin(), xr.end());
    return vjp_at(
        [&](const std::vector<Array>& v) {
          std::vector<Array> c = consts;
          for (std::size_t q = 0; q < ntc; ++q) c[static_cast<std::size_t>(tc[q])] = v[q];
          return assoc_combine_fn(j, c, ax)(ystart,
                                            std::vector<Array>(v.begin() + static_cast<std::ptrdiff_t>(ntc), v.end()));
        },
        prims, float_cts(g_rest));
  }
};

}  // namespace

std::vector<std::optional<Array>> assoc_transpose(const std::vector<LinearIn>& in, const std::vector<Array>& cts,
                                                  const PrimParams& p) {
  if (!p.tangent_of) nonlinear("only a scan of tangent pairs is linear");
  const Jaxpr& j = static_cast<const JaxprBody&>(*p.tangent_of).jaxpr;
  const std::size_t k = j.outs.size(), nc = j.invars.size() - 2 * k;
  PairTranspose pt{p,
                   j,
                   k,
                   nc,
                   p.tangent_consts,
                   p.tangent_leaves,
                   p.tangent_leaves.size(),
                   p.tangent_consts.size(),
                   static_cast<int>(p.axis),
                   {},
                   {}};
  const std::size_t nf = pt.nf, ntc = pt.ntc;
  // operands: hoisted | consts (nc) | tangents of consts (ntc) | elements (k) | tangents (nf)
  const std::size_t c0 = static_cast<std::size_t>(p.num_consts) - nc - ntc, tc0 = c0 + nc, e0 = tc0 + ntc, te0 = e0 + k;
  if (in.size() != te0 + nf || cts.size() != k + nf)
    throw Error("associative_scan transpose: operands do not match the pair layout");
  for (std::size_t i = 0; i < e0 + k; ++i)
    if (in[i].linear && (i < tc0 || i >= e0)) nonlinear("the elements or consts depend on the linear input");
  for (std::size_t l = 0; l < k; ++l)
    if (!cts[l].is_empty()) nonlinear("the scanned elements themselves are not linear");
  std::vector<std::optional<Array>> res(in.size());
  bool any = false;
  for (std::size_t i = tc0; i < e0; ++i) any = any || in[i].linear;
  for (std::size_t i = te0; i < in.size(); ++i) any = any || in[i].linear;
  if (!any) return res;

  for (std::size_t i = c0; i < tc0; ++i) pt.consts.push_back(in[i].value);
  for (std::size_t l = 0; l < k; ++l) pt.x.push_back(in[e0 + l].value);
  const std::int64_t n = pt.n = pt.x[0].shape()[pt.ax];
  std::vector<Array> g;  // per float leaf, in scan order: ȳ, then g once the later outputs are added
  for (std::size_t q = 0; q < nf; ++q) {
    const AVal& a = in[te0 + q].aval;
    g.push_back(pt.in_order(cts[k + q].is_empty() ? np::zeros(a.shape, a.dtype) : cts[k + q]));
  }
  std::vector<Array> x_bar, c_bar;  // x̄ of positions 1.. (every leaf), c̄ of the tangent consts
  if (n >= 2) {
    std::vector<Array> xr, ystart;
    g = pt.reverse_scan(g, xr, ystart);
    auto bars = pt.bars(g, xr, ystart);
    c_bar.assign(bars.begin(), bars.begin() + static_cast<std::ptrdiff_t>(ntc));
    x_bar.assign(bars.begin() + static_cast<std::ptrdiff_t>(ntc), bars.end());
  }
  const std::vector<std::int64_t>& fl = p.tangent_leaves;
  const int ax = pt.ax;
  for (std::size_t q = 0; q < nf; ++q)
    if (in[te0 + q].linear) {
      Array xb =
          n >= 2 ? lax::concatenate({lax::slice_in_dim(g[q], 0, 1, 1, ax), x_bar[static_cast<std::size_t>(fl[q])]}, ax)
                 : g[q];
      res[te0 + q] = pt.in_order(xb);
    }
  for (std::size_t q = 0; q < ntc; ++q)
    if (in[tc0 + q].linear)
      res[tc0 + q] = n >= 2 ? c_bar[q] : np::zeros(in[tc0 + q].aval.shape, in[tc0 + q].aval.dtype);
  return res;
}

}  // namespace jx
