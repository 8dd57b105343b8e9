// lax.associative_scan as a primitive, so that jit keeps it whole and a backend may run it in a
// few dispatches (vulkan: Kogge-Stone rounds):
//   operands  consts (num_consts) | elems (leaves of one length n along `axis`)
//   body      (consts..., a..., b...) -> c...  the combine fn traced on single elements (each
//             leaf with `axis` of length 1); a holds the earlier elements
//   outputs   the inclusive scans of the leaves
// Every application binds the primitive (vmap: the combine vmapped; jvp: a scan of (element,
// tangent) pairs; linearize: that pair scan, the fold's lax.scan or the recursion, see
// assoc_transpose.cc).
#include <fmt/format.h>

#include <cstdlib>
#include <functional>
#include <utility>

#include "core/backends/target.h"
#include "core/base/env.h"
#include "core/transform/control.h"
#include "core/replay/policy.h"
#include "core/transform/control_internal.h"
#include "core/transform/rules.h"

namespace jx {
namespace {

using Leaves = std::vector<Array>;

// JAX's recursive odd/even scheme, elementwise along `ax`. With `levels` ≥ 0, only that many
// levels: the scan of the pairs' reductions at that depth (positions 2^levels - 1, 2·2^levels - 1,
// ... of the scan, in order) is `inner`'s.
std::vector<Array> assoc_tree(const lax::AssocFn& fn, const std::vector<Array>& elems0, bool reverse, int ax,
                              int levels = -1, const std::function<Leaves(const Leaves&)>& inner = {}) {
  std::vector<Array> elems;
  for (const Array& e : elems0) elems.push_back(reverse ? np::flip(e, std::vector<std::int64_t>{ax}) : e);
  auto slice = [&](const Array& x, std::int64_t start, std::int64_t stop, std::int64_t step) {
    return jx::lax::slice_in_dim(x, start, stop, step, ax);
  };
  auto slices = [&](const std::vector<Array>& xs, std::int64_t start, std::int64_t stop, std::int64_t step) {
    std::vector<Array> r;
    for (const Array& x : xs) r.push_back(slice(x, start, stop, step));
    return r;
  };
  // interleave a (even positions) and b (odd positions) along ax
  auto interleave = [&](const Array& a, const Array& b) {
    const std::int64_t na = a.shape()[ax], nb = b.shape()[ax];
    Shape sa = a.shape();
    sa.insert(sa.begin() + ax + 1, 1);
    Array ea = jx::lax::reshape(a, sa);
    Shape sb = b.shape();
    sb.insert(sb.begin() + ax + 1, 1);
    Array eb = jx::lax::reshape(b, sb);
    if (nb < na) {  // pad b with one slot
      std::vector<std::int64_t> lo(eb.ndim(), 0), hi(eb.ndim(), 0);
      hi[ax] = 1;
      eb = jx::lax::pad(eb, lo, hi, 0.0);
    }
    Array both = jx::lax::concatenate({ea, eb}, ax + 1);
    Shape flat = a.shape();
    flat[ax] = 2 * na;
    Array f = jx::lax::reshape(both, flat);
    return slice(f, 0, na + nb, 1);
  };
  std::function<Leaves(const Leaves&, int)> scan = [&](const Leaves& xs, int depth) -> Leaves {
    const std::int64_t m = xs[0].shape()[ax];
    if (m < 2) return xs;
    if (depth == levels) return inner(xs);
    auto reduced = fn(slices(xs, 0, m - 1, 2), slices(xs, 1, m, 2));  // pairs (0,1), (2,3), ...
    auto odd = scan(reduced, depth + 1);                              // prefix at positions 1, 3, 5, ...
    std::vector<Array> even;
    if (m % 2 == 0)
      even = fn(slices(odd, 0, static_cast<std::int64_t>(odd[0].shape()[ax]) - 1, 1), slices(xs, 2, m, 2));
    else
      even = fn(odd, slices(xs, 2, m, 2));
    std::vector<Array> first = slices(xs, 0, 1, 1), out;
    for (std::size_t k = 0; k < xs.size(); ++k) {
      Array ev = even[k].shape()[ax] > 0 ? jx::lax::concatenate({first[k], even[k]}, ax) : first[k];
      out.push_back(interleave(ev, odd[k]));
    }
    return out;
  };
  auto out = scan(elems, 0);
  if (reverse)
    for (Array& o : out) o = np::flip(o, std::vector<std::int64_t>{ax});
  return out;
}

}  // namespace

// The combine from the body: leaves of length L along ax are split into [L, 1] and the body is
// vmapped over the L axis.
lax::AssocFn assoc_combine_fn(const Jaxpr& j, const std::vector<Array>& consts, int ax) {
  return [&j, consts, ax](const std::vector<Array>& a, const std::vector<Array>& b) {
    const std::int64_t len = a[0].shape()[ax];
    if (len == 0) return b;  // nothing to combine: the leaves keep their (empty) shapes
    std::vector<Array> in = consts;
    std::vector<std::optional<std::int64_t>> axes(consts.size(), std::nullopt);
    for (const auto* side : {&a, &b})
      for (const Array& x : *side) {
        Shape s = x.shape();
        s.insert(s.begin() + ax + 1, 1);
        in.push_back(lax::reshape(x, s));
        axes.push_back(ax);
      }
    auto r = vmap_flat([&j](const std::vector<Array>& v) { return eval_jaxpr(j, {}, v); }, axes,
                       std::vector<std::int64_t>(a.size(), ax))(in);
    for (Array& x : r) {
      Shape s = x.shape();
      s.erase(s.begin() + ax + 1);
      x = lax::reshape(x, s);
    }
    return r;
  };
}

namespace {

// The primitive's meaning in other primitives (ops: consts | elems).
// With `levels` ≥ 0, that many levels of the recursion around the primitive bound again on the
// rest (a 2^levels times shorter scan).
std::vector<Array> decompose(const std::vector<Array>& ops, const PrimParams& p, int levels = -1) {
  const std::vector<Array> consts(ops.begin(), ops.begin() + p.num_consts),
      elems(ops.begin() + p.num_consts, ops.end());
  PrimParams in_order = p;  // assoc_tree has put the elements in scan order
  in_order.reverse = false;
  auto inner = [&](const Leaves& xs) {
    Leaves all = consts;
    all.insert(all.end(), xs.begin(), xs.end());
    return bind(Prim::associative_scan, all, in_order);
  };
  return assoc_tree(assoc_combine_fn(assoc_body_jaxpr(p), consts, static_cast<int>(p.axis)), elems, p.reverse,
                    static_cast<int>(p.axis), levels, inner);
}

// Set while the recursion or the levels form is linearized: an associative scan bound inside it
// (the levels form's inner scan) takes the pair scan.
thread_local bool t_inner_of_levels = false;

}  // namespace

// The same as a fold: carry = the first element, one combine per later element (a lax.scan).
std::vector<Array> assoc_fold(const std::vector<Array>& ops, const PrimParams& p) {
  const int ax = static_cast<int>(p.axis);
  const std::size_t nc = p.num_consts;
  const Jaxpr& j = assoc_body_jaxpr(p);
  std::vector<Array> consts(ops.begin(), ops.begin() + nc), elems, first, rest;
  const std::int64_t n = ops[nc].shape()[ax];
  if (n < 2) return std::vector<Array>(ops.begin() + nc, ops.end());
  std::vector<Shape> elem_shape;
  for (std::size_t i = nc; i < ops.size(); ++i) {
    Array m = np::moveaxis(p.reverse ? np::flip(ops[i], std::vector<std::int64_t>{ax}) : ops[i], ax, 0);  // [n, R...]
    Shape es = ops[i].shape();
    es[ax] = 1;
    elem_shape.push_back(es);
    first.push_back(lax::reshape(np::index(m, {std::int64_t{0}}), es));
    rest.push_back(np::index(m, {np::Slice{1, n}}));
  }
  const std::size_t k = first.size();
  FlatFn step = [&](const std::vector<Array>& in) {  // consts | carry | x
    std::vector<Array> args(in.begin(), in.begin() + nc + k);
    for (std::size_t l = 0; l < k; ++l) args.push_back(lax::reshape(in[nc + k + l], elem_shape[l]));
    auto c = eval_jaxpr(j, {}, args);
    std::vector<Array> out = c;
    for (std::size_t l = 0; l < k; ++l) {
      Shape r = elem_shape[l];
      r.erase(r.begin() + ax);
      out.push_back(lax::reshape(c[l], r));
    }
    return out;
  };
  FlatFn body = [&](const std::vector<Array>& in) {  // scan_flat's body sees carry | x: consts are closed over
    std::vector<Array> a = consts;
    a.insert(a.end(), in.begin(), in.end());
    return step(a);
  };
  auto r = scan_flat(body, k, first, rest);
  std::vector<Array> out;
  for (std::size_t l = 0; l < k; ++l) {
    Shape r1 = elem_shape[l];
    r1.erase(r1.begin() + ax);
    r1.insert(r1.begin(), 1);
    Array all = lax::concatenate({lax::reshape(first[l], r1), r[k + l]}, 0);
    all = np::moveaxis(all, 0, ax);
    out.push_back(p.reverse ? np::flip(all, std::vector<std::int64_t>{ax}) : all);
  }
  return out;
}

const Jaxpr& assoc_body_jaxpr(const PrimParams& p) { return static_cast<const JaxprBody&>(*p.body).jaxpr; }

Jaxpr assoc_decomposition(const PrimParams& p, const std::vector<AVal>& in, bool use_fold) {
  return hoist(
             make_jaxpr_flat(
                 [&](const std::vector<Array>& ops) { return use_fold ? assoc_fold(ops, p) : decompose(ops, p); }, in))
      .first;
}

std::vector<Array> assoc_eval(const std::vector<Array>& ops, const PrimParams& p) { return decompose(ops, p); }

std::pair<std::vector<Array>, std::vector<Array>> assoc_jvp(const std::vector<Array>& x,
                                                            const std::vector<std::optional<Array>>& t,
                                                            const PrimParams& p, bool linearizing) {
  auto tan = [&](std::size_t i) { return t[i] ? *t[i] : np::zeros_like(x[i]); };
  const AssocGradForm form = !linearizing ? AssocGradForm::pairs
                             : replay::policy().models_recursive_assoc_grad()
                                 ? AssocGradForm::recursion  // the JS runtime's way
                             : t_inner_of_levels ? AssocGradForm::pairs
                                                 : assoc_grad_form(x, p);
  if (form == AssocGradForm::fold) return assoc_linearize_fold(x, t, p);
  if (form == AssocGradForm::recursion || form == AssocGradForm::levels) {
    std::vector<Array> all;
    for (std::size_t i = 0; i < x.size(); ++i) all.push_back(tan(i));
    const int levels = form == AssocGradForm::levels ? assoc_grad_levels(x, p) : -1;
    const bool was = std::exchange(t_inner_of_levels, true);
    struct Restore {
      bool v;
      ~Restore() { t_inner_of_levels = v; }
    } restore{was};
    return jvp_flat([&](const std::vector<Array>& in) { return decompose(in, p, levels); }, x, all, true);
  }
  // (e, ė) ∘ (f, ḟ) = (e ∘ f, D₁∘·ė + D₂∘·ḟ) is associative when ∘ is (the chain rule applied to
  // (e ∘ f) ∘ g = e ∘ (f ∘ g)), and its inclusive scan holds the scan's tangents. Pair scan:
  //   operands  consts | tangents of the consts that have one | e (k) | ė (float leaves)
  //   body      (consts, ċonsts, a, ȧ, b, ḃ) -> (c, ċ)
  const std::size_t nc = p.num_consts, k = x.size() - nc;
  const Jaxpr& j = assoc_body_jaxpr(p);
  std::vector<std::size_t> tc, fl;  // consts with tangents, float leaves
  for (std::size_t i = 0; i < nc; ++i)
    if (t[i] && is_floating(x[i].dtype())) tc.push_back(i);
  for (std::size_t l = 0; l < k; ++l)
    if (is_floating(x[nc + l].dtype())) fl.push_back(l);
  const auto bin = p.body->in_avals();  // consts | a (k) | b (k)
  std::vector<AVal> in;
  for (std::size_t i = 0; i < nc; ++i) in.push_back(bin[i]);
  for (std::size_t i : tc) in.push_back(bin[i]);
  for (int side = 0; side < 2; ++side) {
    for (std::size_t l = 0; l < k; ++l) in.push_back(bin[nc + side * k + l]);
    for (std::size_t l : fl) in.push_back(bin[nc + side * k + l]);
  }
  const std::size_t nt = nc + tc.size(), side_n = k + fl.size();
  auto [body, consts] = hoist(make_jaxpr_flat(
      [&](const std::vector<Array>& v) {
        std::vector<Array> prim(v.begin(), v.begin() + nc), dot;
        for (std::size_t i = 0; i < nc; ++i) dot.push_back(np::zeros_like(v[i]));
        for (std::size_t q = 0; q < tc.size(); ++q) dot[tc[q]] = v[nc + q];
        for (int side = 0; side < 2; ++side) {
          const std::size_t base = nt + side * side_n;
          for (std::size_t l = 0; l < k; ++l) {
            prim.push_back(v[base + l]);
            dot.push_back(np::zeros_like(v[base + l]));
          }
          for (std::size_t q = 0; q < fl.size(); ++q) dot[nc + side * k + fl[q]] = v[base + k + q];
        }
        auto [c, c_dot] = jvp_flat([&](const std::vector<Array>& a) { return eval_jaxpr(j, {}, a); }, prim, dot);
        for (std::size_t l : fl) c.push_back(c_dot[l]);
        return c;
      },
      in));
  std::vector<Array> ops = consts;
  ops.insert(ops.end(), x.begin(), x.begin() + nc);
  for (std::size_t i : tc) ops.push_back(*t[i]);
  ops.insert(ops.end(), x.begin() + nc, x.end());
  for (std::size_t l : fl) ops.push_back(tan(nc + l));
  PrimParams q = p;
  q.num_consts = static_cast<int>(consts.size() + nt);
  q.body = std::make_shared<JaxprBody>(std::move(body));
  q.unbatched = nullptr;  // a vmapped scan's unbatched body is not its pair scan's
  q.batch_size = 0;
  q.batched.clear();
  q.tangent_of = p.body;
  q.tangent_consts.assign(tc.begin(), tc.end());
  q.tangent_leaves.assign(fl.begin(), fl.end());
  auto out = bind(Prim::associative_scan, ops, q);
  // under linearize the pair scan is tangent work (recorded, then transposed): the primal values
  // come from the primitive bound on the primal elements
  std::vector<Array> y = linearizing ? bind(Prim::associative_scan, x, p)
                                     : std::vector<Array>(out.begin(), out.begin() + k),
                     ty;
  for (std::size_t l = 0, q2 = 0; l < k; ++l)
    ty.push_back(q2 < fl.size() && fl[q2] == l ? out[k + q2++] : np::zeros_like(y[l]));
  return {y, ty};
}

// The most bytes of broadcasts that batch a vmapped scan's shared leaves for a per-series
// backend: 256 MiB, or JX_SERIES_BROADCAST_MAX (read at each trace; tests set it small).
std::int64_t series_broadcast_max() { return env_int("JX_SERIES_BROADCAST_MAX", std::int64_t{256} << 20); }

std::vector<std::pair<Array, std::optional<std::int64_t>>> assoc_batch(
    const std::vector<Array>& vals, const std::vector<std::optional<std::int64_t>>& bd, std::int64_t size,
    const PrimParams& p) {
  // The primitive stays whole: a batched leaf carries its batch axis right after the scan axis
  // (every leaf still scans along `axis`), a batched const in front, and the body is the combine
  // vmapped over those axes. Per series (below) every leaf is batched and carries the batch axis
  // right before the scan axis instead (the primitive then scans along axis + 1): each series'
  // positions lie together, so a per-series scan's neighbouring invocations read neighbouring
  // elements, and vmap's usual batch axis 0 needs no transpose around a scan along axis 0.
  // A leaf is batched when its operand is, or when the combine makes its
  // result depend on a batched value (its operand is then broadcast): a fixpoint over the leaves,
  // reached in at most k + 1 traces of the body. Staged for a backend that runs a vmapped scan
  // per series (BackendLimits::series_scans), every leaf is batched from the start: that form
  // needs each series' leaves of its own, and an unbatched leaf broadcast once costs less than
  // the scan of whole-batch elements it would otherwise take; but not where the broadcasts would
  // take more than series_broadcast_max() (a large leaf shared by 1024 series, made 1024 copies).
  const std::size_t nc = p.num_consts, k = vals.size() - nc;
  const std::int64_t ax = p.axis;
  const Jaxpr& j = assoc_body_jaxpr(p);
  const auto bin = p.body->in_avals();
  const Target* target = staging_target();
  std::int64_t broadcast_bytes = 0;
  for (std::size_t l = 0; l < k; ++l)
    if (!bd[nc + l]) broadcast_bytes += static_cast<std::int64_t>(vals[nc + l].aval().bytes()) * size;
  const bool per_series = target && target->limits.series_scans && broadcast_bytes <= series_broadcast_max();
  std::vector<bool> leaf(k);
  for (std::size_t l = 0; l < k; ++l) leaf[l] = per_series || bd[nc + l].has_value();
  const std::int64_t at = per_series ? ax : ax + 1;  // a batched leaf's batch axis
  std::pair<Jaxpr, std::vector<Array>> traced;
  for (bool grew = true; grew;) {
    grew = false;
    std::vector<std::optional<std::int64_t>> in_axes;
    std::vector<AVal> avals;
    for (std::size_t i = 0; i < nc; ++i) {
      in_axes.push_back(bd[i] ? std::optional<std::int64_t>(0) : std::nullopt);
      avals.push_back(bd[i] ? with_batch_axis(bin[i], 0, size) : bin[i]);
    }
    for (int side = 0; side < 2; ++side)
      for (std::size_t l = 0; l < k; ++l) {
        in_axes.push_back(leaf[l] ? std::optional<std::int64_t>(at) : std::nullopt);
        avals.push_back(leaf[l] ? with_batch_axis(bin[nc + side * k + l], at, size) : bin[nc + side * k + l]);
      }
    std::vector<bool> next = leaf;
    traced = hoist(make_jaxpr_flat(
        [&](const std::vector<Array>& v) {
          auto outs =
              vmap_partial([&j](const std::vector<Array>& a) { return eval_jaxpr(j, {}, a); }, in_axes, size, v);
          std::vector<Array> r;
          for (std::size_t l = 0; l < k; ++l) {
            auto& [o, b] = outs[l];
            if (b && !leaf[l]) next[l] = grew = true;  // traced again with this leaf batched
            r.push_back(!leaf[l] || grew ? o : batch_axis_at(o, b, at, size));
          }
          return r;
        },
        avals));
    leaf = next;
  }
  auto& [body, hoisted] = traced;
  std::vector<Array> ops = hoisted;
  for (std::size_t i = 0; i < nc; ++i) ops.push_back(bd[i] ? batch_axis_at(vals[i], bd[i], 0, size) : vals[i]);
  for (std::size_t l = 0; l < k; ++l)
    ops.push_back(leaf[l] ? batch_axis_at(vals[nc + l], bd[nc + l], at, size) : vals[nc + l]);
  PrimParams q = p;
  q.axis = per_series ? ax + 1 : ax;
  q.num_consts = static_cast<int>(hoisted.size() + nc);
  q.body = std::make_shared<JaxprBody>(std::move(body));
  q.tangent_of = nullptr;  // a batched pair scan's layout is not the one its transpose reads
  q.tangent_consts.clear();
  q.tangent_leaves.clear();
  // per series it is the scan vmap was given (PrimParams::unbatched): leaves batched right before
  // the scan axis (only there: the backend reads that layout)
  q.unbatched = per_series ? p.body : nullptr;
  q.batch_size = size;
  q.batched.clear();
  for (std::size_t i = 0; i < nc; ++i) q.batched.push_back(bd[i] ? 1 : 0);
  for (std::size_t l = 0; l < k; ++l) q.batched.push_back(leaf[l] ? 1 : 0);
  auto out = bind(Prim::associative_scan, ops, q);
  std::vector<std::pair<Array, std::optional<std::int64_t>>> r;
  for (std::size_t l = 0; l < k; ++l) r.push_back({out[l], leaf[l] ? std::optional<std::int64_t>(at) : std::nullopt});
  return r;
}

namespace lax {

std::vector<Array> associative_scan_flat(const AssocFn& fn, const std::vector<Array>& elems, bool reverse,
                                         std::int64_t axis) {
  if (elems.empty()) return {};
  const int ax = normalize_axis(axis, elems[0].ndim(), "associative_scan", "axis");
  const std::int64_t n = elems[0].shape()[ax];
  for (const Array& e : elems)
    if (static_cast<int>(e.ndim()) <= ax || e.shape()[ax] != n)
      throw ShapeError(fmt::format("associative_scan: all elements need the same length {} along axis {}, got {}", n,
                                   ax, e.aval().str()));
  std::vector<AVal> avals;
  for (int side = 0; side < 2; ++side)
    for (const Array& e : elems) {
      AVal a = e.aval();
      a.shape[ax] = 1;
      avals.push_back(a);
    }
  const std::size_t k = elems.size();
  auto [j, consts] = hoist(make_jaxpr_flat(
      [&](const std::vector<Array>& in) {
        auto out = fn(std::vector<Array>(in.begin(), in.begin() + k), std::vector<Array>(in.begin() + k, in.end()));
        if (out.size() != k)
          throw ShapeError(fmt::format("associative_scan: fn returns {} leaves for {} elements", out.size(), k));
        for (std::size_t l = 0; l < k; ++l)
          if (!(out[l].aval() == avals[l]))
            throw ShapeError(fmt::format("associative_scan: fn returns leaf {} as {}, the element is {}", l,
                                         out[l].aval().str(), avals[l].str()));
        return out;
      },
      avals));
  PrimParams p;
  p.num_consts = static_cast<int>(consts.size());
  p.axis = ax;
  p.reverse = reverse;
  p.body = std::make_shared<JaxprBody>(std::move(j));
  std::vector<Array> ops = consts;
  ops.insert(ops.end(), elems.begin(), elems.end());
  return bind(Prim::associative_scan, ops, p);
}

}  // namespace lax
}  // namespace jx
