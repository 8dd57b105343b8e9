// linearize = jvp whose tangents are the arguments of a jaxpr under construction: primal work
// runs at the levels below (eagerly, or in outer transformations), tangent work is recorded.
// Everything the tangent equations read from the primal computation becomes a constant of that
// jaxpr: these are the residuals, owned by the LinearFn (never by user handles).
#include <fmt/format.h>

#include "core/replay/policy.h"
#include "core/np/np.h"
#include "core/transform/rules.h"
#include "core/trace/builder.h"
#include "core/trace/trace.h"

namespace jx {

std::pair<std::vector<Array>, LinearFn> linearize_flat(const FlatFn& fn, const std::vector<Array>& primals) {
  auto builder = std::make_shared<JaxprBuilder>();
  MainScope scope(builder);
  std::vector<Array> tangents_in;
  for (const Array& p : primals) tangents_in.push_back(builder->new_arg(p.aval()));
  auto [y, ty] = jvp_flat(fn, primals, tangents_in, /*linearizing=*/true);
  ClosedJaxpr lin = builder->finish(ty);
  if (replay::policy().borrowed_residuals) clear_borrows();
  return {y, LinearFn(std::move(lin))};
}

void LinearFn::check() const {
  if (disposed_) throw UseAfterDispose("linear function (pullback) used after dispose(): its residuals were released");
  for (std::size_t i = 0; i < j_.borrowed.size(); ++i)  // replay borrowed_residuals
    if (j_.borrowed[i] && !*j_.borrowed[i]) {
      std::string msg = fmt::format("Referenced tracer Array:{} has been disposed", j_.consts[i].aval().str());
      if (!dynamic_trace()) throw UseAfterDispose(msg);
      defer_disposal_error(std::move(msg));  // traced under jit: the tracer still holds the value
      return;
    }
}

std::vector<Array> LinearFn::operator()(const std::vector<Array>& tangents) const {
  check();
  return eval_jaxpr(j_.jaxpr, j_.consts, tangents);
}

std::vector<Array> LinearFn::transpose(const std::vector<Array>& cotangents) const {
  check();
  if (cotangents.size() != j_.jaxpr.outs.size())
    throw ShapeError(fmt::format("pullback: expected {} cotangents, got {}", j_.jaxpr.outs.size(), cotangents.size()));
  for (std::size_t i = 0; i < cotangents.size(); ++i)
    if (!cotangents[i].is_empty() && !(cotangents[i].aval() == j_.jaxpr.aval_of(j_.jaxpr.outs[i])))
      throw ShapeError(fmt::format("pullback: cotangent {} is {}, the output is {}", i, cotangents[i].aval().str(),
                                   j_.jaxpr.aval_of(j_.jaxpr.outs[i]).str()));
  return backward_pass(j_.jaxpr, j_.consts, cotangents);
}

void LinearFn::dispose() {
  check();
  j_ = {};
  disposed_ = true;
}

std::vector<Array> backward_pass(const Jaxpr& j, const std::vector<Array>& consts, const std::vector<Array>& cts_out) {
  const std::size_t nv = j.avals.size();
  std::vector<bool> linear(nv, false);
  std::vector<Array> env(nv);
  for (int v : j.invars) linear[v] = true;
  for (std::size_t i = 0; i < consts.size(); ++i) env[j.constvars[i]] = consts[i];
  auto value = [&](const Atom& a) { return a.is_literal() ? literal_array(a) : env[a.var]; };
  // Forward: evaluate equations that do not depend on the linear inputs.
  std::vector<bool> eqn_linear(j.eqns.size(), false);
  for (std::size_t i = 0; i < j.eqns.size(); ++i) {
    const Eqn& e = j.eqns[i];
    for (const Atom& a : e.in) eqn_linear[i] = eqn_linear[i] || (!a.is_literal() && linear[a.var]);
    if (eqn_linear[i]) {
      for (int o : e.out) linear[o] = true;
      continue;
    }
    std::vector<Array> in;
    for (const Atom& a : e.in) in.push_back(value(a));
    auto out = bind(e.prim, in, e.params);
    for (std::size_t k = 0; k < out.size(); ++k) env[e.out[k]] = std::move(out[k]);
  }
  // Backward: accumulate cotangents of linear variables.
  std::vector<std::optional<Array>> ct(nv);
  auto accumulate = [&](int v, Array c) { ct[v] = ct[v] ? lax::add(*ct[v], c) : std::move(c); };
  for (std::size_t i = 0; i < j.outs.size(); ++i)  // an empty handle is a zero cotangent
    if (!cts_out[i].is_empty() && !j.outs[i].is_literal() && linear[j.outs[i].var])
      accumulate(j.outs[i].var, cts_out[i]);
  for (std::size_t i = j.eqns.size(); i-- > 0;) {
    if (!eqn_linear[i]) continue;
    const Eqn& e = j.eqns[i];
    std::vector<Array> c(e.out.size());  // empty: zero cotangent
    bool any = false;
    for (std::size_t k = 0; k < e.out.size(); ++k)
      if (ct[e.out[k]]) {
        c[k] = std::move(*ct[e.out[k]]);
        ct[e.out[k]].reset();
        any = true;
      }
    if (!any) continue;
    std::vector<LinearIn> in;
    for (const Atom& a : e.in) {
      const bool lin = !a.is_literal() && linear[a.var];
      in.push_back({lin, lin ? Array() : value(a), j.aval_of(a)});
    }
    auto cts_in = transpose_rule(e.prim, in, c, e.params);
    for (std::size_t k = 0; k < e.in.size(); ++k)
      if (in[k].linear && cts_in[k]) accumulate(e.in[k].var, std::move(*cts_in[k]));
  }
  std::vector<Array> out;
  for (int v : j.invars) out.push_back(ct[v] ? *ct[v] : np::zeros(j.avals[v].shape, j.avals[v].dtype));
  return out;
}

}  // namespace jx
