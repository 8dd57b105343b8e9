// Reverse mode through lax.associative_scan without differentiating its odd/even recursion.
// With y_0 = x_0 and y_i = y_{i-1} ∘ x_i (in scan order) the tangents are the scan of (element,
// tangent) pairs that forward mode binds (assoc_jvp). Linear in the tangents, it transposes to
//   g_i = ȳ_i + Σ_{i' > i} (∂y_{i'}/∂y_i)ᵀ·ȳ_{i'},   x̄_i = (∂(a ∘ b)/∂b)ᵀ·g_i,   c̄ = Σ_i (∂(a ∘ b)/∂c)ᵀ·g_i
// (derivatives at (y_{i-1}, x_i); x̄_0 = g_0), and the sums are a reverse associative scan: for a
// segment [j..m] take (y_{j-1}, S = x_j ∘ … ∘ x_m, w = Σ_{i=j..m} (∂y_i/∂y_{j-1})ᵀ·ȳ_i). Since
// y_m = y_{j-1} ∘ S, the chain rule joins segment [j..m] with the next one [m+1..k] as
//   (y_{j-1}, S ∘ S', w + (∂(a ∘ b)/∂a at (y_{j-1}, S))ᵀ·w'),
// an element three leaves wide whose combine is one combine and one vjp of it: no Jacobian is
// formed. The pair scan is bound where that reverse scan runs in a few dispatches (launch-bound
// backends); elsewhere linearize goes through the fold (a lax.scan, one combine per step), whose
// jvp and transpose are the scan's, or, for a jit under a buffer budget on a sequential backend
// (whose compiled loops bind every operand at once), the odd/even recursion.
#include <fmt/format.h>

#include "core/backends/backend.h"
#include "core/np/np.h"
#include "core/trace/autodiff.h"
#include "core/trace/control_internal.h"

namespace jx {
namespace {

Array slice_axis(const Array& x, int ax, std::int64_t start, std::int64_t stop) {
  std::vector<std::int64_t> lo(x.ndim(), 0), hi = x.shape();
  lo[ax] = start;
  hi[ax] = stop;
  return lax::slice(x, lo, hi);
}

// Cotangents of fn's inputs at primals, for cotangents of its outputs (empty: zero).
std::vector<Array> vjp_at(const FlatFn& fn, const std::vector<Array>& primals, const std::vector<Array>& cts) {
  auto lin = linearize_flat(fn, primals).second;
  return lin.transpose(cts);
}

[[noreturn]] void nonlinear(const char* why) {
  throw NonlinearError(fmt::format("Nonlinear operation in backward pass for associative_scan ({})", why));
}

}  // namespace

AssocGradForm assoc_grad_form(const std::vector<Array>& x) {
  const Backend* b = staging_backend();
  for (const Array& a : x)
    if (!b && !a.is_tracer()) b = &a.backend();
  if (!b) b = &default_backend();
  if (b->info().limits.launch_bound) return AssocGradForm::pairs;
  // a compiled loop binds all its operands at once: under a buffer budget, the recursion's kernels
  return staging_budget() > 0 ? AssocGradForm::recursion : AssocGradForm::fold;
}

std::pair<std::vector<Array>, std::vector<Array>> assoc_linearize_fold(const std::vector<Array>& x, const std::vector<std::optional<Array>>& t,
                                                                       const Params& p) {
  std::vector<Array> all;
  for (std::size_t i = 0; i < x.size(); ++i) all.push_back(t[i] ? *t[i] : np::zeros_like(x[i]));
  return jvp_flat([&](const std::vector<Array>& in) { return assoc_fold(in, p); }, x, all, true);
}

std::vector<std::optional<Array>> assoc_transpose(const std::vector<LinearIn>& in, const std::vector<Array>& cts, const Params& p) {
  if (!p.tangent_of) nonlinear("only a scan of tangent pairs is linear");
  const Jaxpr& j = static_cast<const JaxprBody&>(*p.tangent_of).jaxpr;  // the combine: consts | a | b -> c
  const std::size_t k = j.outs.size(), nc = j.invars.size() - 2 * k;
  const std::vector<std::int64_t>&tc = p.tangent_consts, &fl = p.tangent_leaves;
  const std::size_t nf = fl.size(), ntc = tc.size();
  // operands: hoisted | consts (nc) | tangents of consts (ntc) | elements (k) | tangents (nf)
  const std::size_t c0 = static_cast<std::size_t>(p.num_consts) - nc - ntc, tc0 = c0 + nc, e0 = tc0 + ntc, te0 = e0 + k;
  if (in.size() != te0 + nf || cts.size() != k + nf) throw Error("associative_scan transpose: operands do not match the pair layout");
  for (std::size_t i = 0; i < e0 + k; ++i)
    if (in[i].linear && (i < tc0 || i >= e0)) nonlinear("the elements or consts depend on the linear input");
  for (std::size_t l = 0; l < k; ++l)
    if (!cts[l].is_empty()) nonlinear("the scanned elements themselves are not linear");
  std::vector<std::optional<Array>> res(in.size());
  bool any = false;
  for (std::size_t i = tc0; i < e0; ++i) any = any || in[i].linear;
  for (std::size_t i = te0; i < in.size(); ++i) any = any || in[i].linear;
  if (!any) return res;

  const int ax = static_cast<int>(p.axis);
  std::vector<Array> consts, x;
  for (std::size_t i = c0; i < tc0; ++i) consts.push_back(in[i].value);
  for (std::size_t l = 0; l < k; ++l) x.push_back(in[e0 + l].value);
  const std::int64_t n = x[0].shape()[ax];
  auto in_order = [&](const Array& a) { return p.reverse ? np::flip(a, std::vector<std::int64_t>{ax}) : a; };
  std::vector<Array> g;  // per float leaf, in scan order: ȳ, then g once the later outputs are added
  for (std::size_t q = 0; q < nf; ++q) {
    const AVal& a = in[te0 + q].aval;
    g.push_back(in_order(cts[k + q].is_empty() ? np::zeros(a.shape, a.dtype) : cts[k + q]));
  }
  auto float_cts = [&](const std::vector<Array>& per_float) {  // one per leaf, empty (zero) for the others
    std::vector<Array> c(k);
    for (std::size_t q = 0; q < nf; ++q) c[fl[q]] = per_float[q];
    return c;
  };
  std::vector<Array> x_bar, c_bar;  // x̄ of positions 1.. (every leaf), c̄ of the tangent consts
  if (n >= 2) {
    Params pp;  // the primal scan again: its prefixes y
    pp.num_consts = static_cast<int>(nc);
    pp.axis = p.axis;
    pp.reverse = p.reverse;
    pp.body = p.tangent_of;
    std::vector<Array> ops = consts;
    ops.insert(ops.end(), x.begin(), x.end());
    const auto y = bind(Prim::associative_scan, ops, pp);
    std::vector<Array> ystart, xr;  // (y_{j-1}, x_j) for j = 1 .. n-1
    for (std::size_t l = 0; l < k; ++l) {
      ystart.push_back(slice_axis(in_order(y[l]), ax, 0, n - 1));
      xr.push_back(slice_axis(in_order(x[l]), ax, 1, n));
    }
    const lax::AssocFn comb = assoc_combine_fn(j, consts, ax);
    auto floats = [&](const std::vector<Array>& all, std::size_t from) {
      std::vector<Array> r;
      for (std::int64_t l : fl) r.push_back(all[from + static_cast<std::size_t>(l)]);
      return r;
    };
    std::vector<Array> g_rest;
    for (const Array& gq : g) g_rest.push_back(slice_axis(gq, ax, 1, n));
    // one-element segments: w_j = (∂(a ∘ b)/∂a)ᵀ·ȳ_j at (y_{j-1}, x_j)
    auto w = floats(vjp_at([&](const std::vector<Array>& a) { return comb(a, xr); }, ystart, float_cts(g_rest)), 0);
    std::vector<Array> elems = ystart;
    elems.insert(elems.end(), xr.begin(), xr.end());
    elems.insert(elems.end(), w.begin(), w.end());
    auto seg = lax::associative_scan_flat(
        [&](const std::vector<Array>& later, const std::vector<Array>& earlier) {
          const std::vector<Array> y0(earlier.begin(), earlier.begin() + k), s(earlier.begin() + k, earlier.begin() + 2 * k),
              s2(later.begin() + k, later.begin() + 2 * k), w2(later.begin() + 2 * k, later.end());
          auto back = floats(vjp_at([&](const std::vector<Array>& a) { return comb(a, s); }, y0, float_cts(w2)), 0);
          std::vector<Array> r = y0;
          for (const Array& c : comb(s, s2)) r.push_back(c);
          for (std::size_t q = 0; q < nf; ++q) r.push_back(lax::add(earlier[2 * k + q], back[q]));
          return r;
        },
        elems, /*reverse=*/true, ax);
    for (std::size_t q = 0; q < nf; ++q) {  // g_j = ȳ_j + w of the segment [j+1 .. n-1]
      Shape zs = g[q].shape();
      zs[ax] = 1;
      g[q] = lax::add(g[q], lax::concatenate({seg[2 * k + q], np::zeros(zs, g[q].dtype())}, ax));
      g_rest[q] = slice_axis(g[q], ax, 1, n);
    }
    // x̄_j and c̄ through the combine's other operands, at (y_{j-1}, x_j), j ≥ 1
    std::vector<Array> prims;
    for (std::int64_t i : tc) prims.push_back(consts[static_cast<std::size_t>(i)]);
    prims.insert(prims.end(), xr.begin(), xr.end());
    auto bars = vjp_at(
        [&](const std::vector<Array>& v) {
          std::vector<Array> c = consts;
          for (std::size_t q = 0; q < ntc; ++q) c[static_cast<std::size_t>(tc[q])] = v[q];
          return assoc_combine_fn(j, c, ax)(ystart, std::vector<Array>(v.begin() + static_cast<std::ptrdiff_t>(ntc), v.end()));
        },
        prims, float_cts(g_rest));
    c_bar.assign(bars.begin(), bars.begin() + static_cast<std::ptrdiff_t>(ntc));
    x_bar.assign(bars.begin() + static_cast<std::ptrdiff_t>(ntc), bars.end());
  }
  for (std::size_t q = 0; q < nf; ++q)
    if (in[te0 + q].linear) {
      Array xb = n >= 2 ? lax::concatenate({slice_axis(g[q], ax, 0, 1), x_bar[static_cast<std::size_t>(fl[q])]}, ax) : g[q];
      res[te0 + q] = in_order(xb);
    }
  for (std::size_t q = 0; q < ntc; ++q)
    if (in[tc0 + q].linear) res[tc0 + q] = n >= 2 ? c_bar[q] : np::zeros(in[tc0 + q].aval.shape, in[tc0 + q].aval.dtype);
  return res;
}

}  // namespace jx
