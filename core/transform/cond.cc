// lax.cond / lax.switch as a primitive: operands index (int32[], clamped into range) | ops;
// branches[k](ops...) -> outs, every branch of one signature. Only the chosen branch runs, so
// a branch that would produce inf or nan on these operands neither shows in the value nor, as a
// zero cotangent times its derivative, in the gradient (a select over all branches would).
//   jvp        y = cond(i, ops); ẏ = cond(i, ops, ȯps) whose branch k is the jvp of branch k
//   transpose  cond(i, constants, cotangents) whose branch k is branch k's backward pass
//   vmap       index unbatched: the branches vmapped; batched: every branch, then per example
//              select (as JAX does)
// Constants a branch's tracing captures become operands that every branch takes (each ignores
// the others').
#include <algorithm>
#include <fmt/format.h>

#include "core/transform/control_internal.h"
#include "core/transform/rules.h"
#include "core/trace/trace.h"

namespace jx {
namespace {

using control_detail::avals;
using control_detail::part;

const Jaxpr& branch(const PrimParams& p, std::size_t k) {
  return static_cast<const JaxprBody&>(*p.branches.at(k)).jaxpr;
}

}  // namespace

std::vector<Array> bind_cond(const Array& index, const std::vector<FlatFn>& fns, const std::vector<AVal>& in,
                             const std::vector<Array>& ops) {
  std::vector<Jaxpr> js;
  std::vector<std::vector<Array>> consts;
  for (const FlatFn& f : fns) {
    auto [j, c] = hoist(make_jaxpr_flat(f, in));
    js.push_back(std::move(j));
    consts.push_back(std::move(c));
  }
  PrimParams p;
  std::vector<Array> operands{index};
  for (const auto& c : consts) operands.insert(operands.end(), c.begin(), c.end());
  operands.insert(operands.end(), ops.begin(), ops.end());
  for (std::size_t k = 0; k < js.size(); ++k) {
    Jaxpr& j = js[k];
    std::vector<int> invars;
    for (std::size_t b = 0; b < js.size(); ++b) {
      if (b == k)
        invars.insert(invars.end(), j.invars.begin(), j.invars.begin() + static_cast<std::ptrdiff_t>(consts[k].size()));
      else
        for (const Array& c : consts[b]) invars.push_back(j.new_var(c.aval()));
    }
    invars.insert(invars.end(), j.invars.begin() + static_cast<std::ptrdiff_t>(consts[k].size()), j.invars.end());
    j.invars = std::move(invars);
    typecheck(j);
    p.branches.push_back(std::make_shared<JaxprBody>(std::move(j)));
  }
  return bind(Prim::cond, operands, p);
}

std::vector<Array> cond_flat(const Array& index, const std::vector<FlatFn>& branches, const std::vector<Array>& ops) {
  if (branches.empty()) throw ShapeError("cond: no branches");
  if (!(index.aval() == AVal{DType::int32, {}}))
    throw ShapeError(fmt::format("cond: the index must be int32[], got {}", index.aval().str()));
  return bind_cond(index, branches, avals(ops), ops);
}

std::vector<Array> cond_eval(const std::vector<Array>& ops, const PrimParams& p) {
  const auto n = static_cast<std::int64_t>(p.branches.size());
  const std::int64_t k = std::clamp(static_cast<std::int64_t>(ops.at(0).item<double>()), std::int64_t{0}, n - 1);
  return eval_jaxpr(branch(p, static_cast<std::size_t>(k)), {}, part(ops, 1, ops.size() - 1));
}

std::pair<std::vector<Array>, std::vector<Array>> cond_jvp(const std::vector<Array>& x,
                                                           const std::vector<std::optional<Array>>& t,
                                                           const PrimParams& p, bool linearizing) {
  const std::size_t n = x.size() - 1;
  const std::vector<Array> ops = part(x, 1, n);
  std::vector<Array> tans;
  for (std::size_t i = 1; i < x.size(); ++i) tans.push_back(t[i] ? *t[i] : np::zeros_like(x[i]));
  const std::vector<Array> y = bind(Prim::cond, x, p);
  std::vector<FlatFn> fns;
  for (std::size_t k = 0; k < p.branches.size(); ++k)
    fns.push_back([&p, k, n, linearizing](const std::vector<Array>& in) {
      return jvp_flat([&](const std::vector<Array>& a) { return eval_jaxpr(branch(p, k), {}, a); }, part(in, 0, n),
                      part(in, n, n), linearizing)
          .second;
    });
  std::vector<Array> all = ops;
  all.insert(all.end(), tans.begin(), tans.end());
  return {y, bind_cond(x[0], fns, avals(all), all)};
}

std::vector<std::optional<Array>> cond_transpose(const std::vector<LinearIn>& in, const std::vector<Array>& cts,
                                                 const PrimParams& p) {
  if (in.at(0).linear) throw NonlinearError("cond: the branch index is not linear");
  std::vector<std::size_t> lin, non;
  for (std::size_t i = 1; i < in.size(); ++i) (in[i].linear ? lin : non).push_back(i);
  const auto outs = p.branches.at(0)->out_avals();
  std::vector<Array> consts, ct;
  for (auto i : non) consts.push_back(in[i].value);
  for (std::size_t k = 0; k < outs.size(); ++k)
    ct.push_back(cts[k].is_empty() ? np::zeros(outs[k].shape, outs[k].dtype) : cts[k]);
  std::vector<FlatFn> fns;
  for (std::size_t k = 0; k < p.branches.size(); ++k)
    fns.push_back([&, k](const std::vector<Array>& a) {
      const Jaxpr& j = branch(p, k);
      Jaxpr lj = j;  // linear in the linear operands; the others are constants
      lj.invars.clear();
      lj.constvars.clear();
      for (auto i : lin) lj.invars.push_back(j.invars[i - 1]);
      for (auto i : non) lj.constvars.push_back(j.invars[i - 1]);
      return backward_pass(lj, part(a, 0, non.size()), part(a, non.size(), outs.size()));
    });
  std::vector<Array> ops = consts;
  ops.insert(ops.end(), ct.begin(), ct.end());
  const auto r = bind_cond(in[0].value, fns, avals(ops), ops);
  std::vector<std::optional<Array>> res(in.size());
  for (std::size_t i = 0; i < lin.size(); ++i) res[lin[i]] = r[i];
  return res;
}

std::vector<std::pair<Array, std::optional<std::int64_t>>> cond_batch(
    const std::vector<Array>& vals, const std::vector<std::optional<std::int64_t>>& bd, std::int64_t size,
    const PrimParams& p) {
  std::vector<Array> ops;
  std::vector<std::optional<std::int64_t>> axes;
  for (std::size_t i = 1; i < vals.size(); ++i) {
    ops.push_back(bd[i] ? batch_axis_at(vals[i], bd[i], 0, size) : vals[i]);
    axes.push_back(bd[i] ? std::optional<std::int64_t>(0) : std::nullopt);
  }
  std::vector<FlatFn> fns;
  for (std::size_t k = 0; k < p.branches.size(); ++k)
    fns.push_back(
        vmap_flat([&p, k](const std::vector<Array>& a) { return eval_jaxpr(branch(p, k), {}, a); }, axes, {0}));
  std::vector<Array> out;
  if (!bd[0]) {
    out = bind_cond(vals[0], fns, avals(ops), ops);
  } else {  // a batched index: every branch, then each example's own
    const Array idx = batch_axis_at(vals[0], bd[0], 0, size);
    std::vector<std::vector<Array>> each;
    for (const FlatFn& f : fns) each.push_back(f(ops));
    const std::size_t nb = each.size();
    for (std::size_t o = 0; o < each[0].size(); ++o) {
      Array r = each[nb - 1][o];
      for (std::size_t k = nb - 1; k-- > 0;) {
        Shape s(r.ndim(), 1);
        s[0] = size;
        const Array hit = np::broadcast_to(
            lax::reshape(lax::le(idx, np::full(idx.shape(), static_cast<double>(k), DType::int32)), s), r.shape());
        r = lax::select(hit, each[k][o], r);
      }
      out.push_back(r);
    }
  }
  std::vector<std::pair<Array, std::optional<std::int64_t>>> res;
  for (const Array& o : out) res.push_back({o, 0});
  return res;
}

}  // namespace jx
