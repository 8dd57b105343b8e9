// lax.while_loop as a primitive: operands cond consts | body consts | carry;
//   while cond(cond consts, carry): carry = body(body consts, carry)
// Evaluation is a host loop (the predicate is read each step). jvp: one while over (carry,
// tangent) pairs, stopping on the primal predicate. transpose: none (the trip count is data:
// reverse mode needs the forward iterates, as in JAX, which refuses it too). vmap: every carry
// batched; the loop runs while any example's predicate holds, and an example whose predicate is
// false keeps its carry (select), as JAX's batching rule does.
#include <fmt/format.h>

#include "core/transform/control_internal.h"
#include "core/transform/rules.h"
#include "core/trace/trace.h"

namespace jx {
namespace {

using control_detail::avals;
using control_detail::part;

const Jaxpr& jaxpr_of(const std::shared_ptr<const SubProgram>& s) { return static_cast<const JaxprBody&>(*s).jaxpr; }

template <class V>
V cat(V a, const V& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Traces cond and body on avals (cond consts..., carry...) and (body consts..., carry...) and
// binds the loop; constants the tracing captured lead each list.
std::vector<Array> bind_while(const FlatFn& cond, const std::vector<AVal>& cond_in, const FlatFn& body,
                              const std::vector<AVal>& body_in, const std::vector<Array>& cc,
                              const std::vector<Array>& bc, const std::vector<Array>& init) {
  auto [cj, ch] = hoist(make_jaxpr_flat(cond, cond_in));
  auto [bj, bh] = hoist(make_jaxpr_flat(body, body_in));
  PrimParams p;
  p.cond = std::make_shared<JaxprBody>(std::move(cj));
  p.body = std::make_shared<JaxprBody>(std::move(bj));
  p.cond_consts = static_cast<int>(ch.size() + cc.size());
  p.num_consts = static_cast<int>(bh.size() + bc.size());
  std::vector<Array> ops = cat(cat(cat(cat(ch, cc), bh), bc), init);
  return bind(Prim::while_loop, ops, p);
}

}  // namespace

std::vector<Array> while_loop_flat(const FlatFn& cond, const FlatFn& body, const std::vector<Array>& init) {
  const auto in = avals(init);
  FlatFn checked_cond = [&](const std::vector<Array>& c) {
    auto r = cond(c);
    if (r.size() != 1 || !(r[0].aval() == AVal{DType::bool_, {}}))
      throw ShapeError(fmt::format("while_loop: cond must return one bool[] array, got {}",
                                   r.empty() ? "nothing" : r[0].aval().str()));
    return r;
  };
  FlatFn checked_body = [&](const std::vector<Array>& c) {
    auto r = body(c);
    if (avals(r) != in) throw ShapeError("while_loop: the body must return the carry's types");
    return r;
  };
  return bind_while(checked_cond, in, checked_body, in, {}, {}, init);
}

std::vector<Array> while_eval(const std::vector<Array>& ops, const PrimParams& p) {
  const std::size_t cc = p.cond_consts, bc = p.num_consts;
  const auto cconsts = part(ops, 0, cc), bconsts = part(ops, cc, bc);
  std::vector<Array> carry = part(ops, cc + bc, ops.size() - cc - bc);
  const Jaxpr &cond = jaxpr_of(p.cond), &body = jaxpr_of(p.body);
  while (eval_jaxpr(cond, {}, cat(cconsts, carry))[0].item<bool>()) carry = eval_jaxpr(body, {}, cat(bconsts, carry));
  return carry;
}

std::pair<std::vector<Array>, std::vector<Array>> while_jvp(const std::vector<Array>& x,
                                                            const std::vector<std::optional<Array>>& t,
                                                            const PrimParams& p, bool linearizing) {
  const std::size_t cc = p.cond_consts, bc = p.num_consts, nk = x.size() - cc - bc;
  std::vector<Array> tan;
  for (std::size_t i = 0; i < x.size(); ++i) tan.push_back(t[i] ? *t[i] : np::zeros_like(x[i]));
  const Jaxpr &cond = jaxpr_of(p.cond), &body = jaxpr_of(p.body);
  const auto cconsts = part(x, 0, cc), bconsts = part(x, cc, bc), carry = part(x, cc + bc, nk);
  const auto tb = part(tan, cc, bc), tc = part(tan, cc + bc, nk);
  // cond on (cond consts | carry | tangent carry): the primal predicate
  FlatFn cond2 = [&](const std::vector<Array>& in) { return eval_jaxpr(cond, {}, part(in, 0, cc + nk)); };
  // body on (body consts | their tangents | carry | tangent carry)
  FlatFn body2 = [&](const std::vector<Array>& in) {
    auto [y, ty] = jvp_flat([&](const std::vector<Array>& a) { return eval_jaxpr(body, {}, a); },
                            cat(part(in, 0, bc), part(in, 2 * bc, nk)),
                            cat(part(in, bc, bc), part(in, 2 * bc + nk, nk)), linearizing);
    return cat(y, ty);
  };
  const auto ca = avals(carry);
  auto out = bind_while(cond2, cat(cat(avals(cconsts), ca), ca), body2,
                        cat(cat(cat(avals(bconsts), avals(tb)), ca), ca), cconsts, cat(bconsts, tb), cat(carry, tc));
  return {part(out, 0, nk), part(out, nk, nk)};
}

std::vector<std::pair<Array, std::optional<std::int64_t>>> while_batch(
    const std::vector<Array>& vals, const std::vector<std::optional<std::int64_t>>& bd, std::int64_t size,
    const PrimParams& p) {
  const std::size_t cc = p.cond_consts, bc = p.num_consts, nk = vals.size() - cc - bc;
  const Jaxpr &cond = jaxpr_of(p.cond), &body = jaxpr_of(p.body);
  std::vector<Array> ops;
  std::vector<std::optional<std::int64_t>> axes;
  std::vector<AVal> in;
  for (std::size_t i = 0; i < vals.size(); ++i) {  // consts keep their batching; carries all batched on axis 0
    const bool b = i >= cc + bc || bd[i].has_value();
    ops.push_back(b ? batch_axis_at(vals[i], bd[i], 0, size) : vals[i]);
    axes.push_back(b ? std::optional<std::int64_t>(0) : std::nullopt);
    in.push_back(ops.back().aval());
  }
  const auto cax = cat(part(axes, 0, cc), part(axes, cc + bc, nk)), bax = part(axes, cc, cc + bc + nk);
  FlatFn pred = vmap_flat([&](const std::vector<Array>& a) { return eval_jaxpr(cond, {}, a); }, cax, {0});
  FlatFn step =
      vmap_flat([&](const std::vector<Array>& a) { return eval_jaxpr(body, {}, a); }, part(axes, cc, bc + nk), {0});
  // any example still running
  FlatFn cond2 = [&](const std::vector<Array>& a) {
    const Array pb = pred(a)[0];
    return std::vector<Array>{
        lax::gt(lax::reduce_max(lax::convert_element_type(pb, DType::int32), {0}), np::zeros({}, DType::int32))};
  };
  (void)bax;
  // body on (cond consts | body consts | carry): examples whose predicate is false keep their carry
  FlatFn body2 = [&](const std::vector<Array>& a) {
    const auto carry = part(a, cc + bc, nk);
    const Array pb = pred(cat(part(a, 0, cc), carry))[0];
    auto next = step(part(a, cc, bc + nk));
    for (std::size_t k = 0; k < nk; ++k)
      next[k] = lax::select(np::broadcast_to(lax::reshape(pb,
                                                          [&] {
                                                            Shape s(carry[k].ndim(), 1);
                                                            s[0] = size;
                                                            return s;
                                                          }()),
                                             carry[k].shape()),
                            next[k], carry[k]);
    return next;
  };
  const auto cin = cat(part(in, 0, cc), part(in, cc + bc, nk));
  auto out = bind_while(cond2, cin, body2, in, part(ops, 0, cc), part(ops, 0, cc + bc), part(ops, cc + bc, nk));
  std::vector<std::pair<Array, std::optional<std::int64_t>>> res;
  for (const Array& o : out) res.push_back({o, 0});
  return res;
}

}  // namespace jx
