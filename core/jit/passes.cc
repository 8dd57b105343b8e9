#include "core/jit/passes.h"

#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <mutex>
#include <optional>

#include "core/np/np.h"
#include "core/trace/make_jaxpr.h"
#include "core/trace/trace.h"

namespace jx {
namespace {

bool is_identity(const Eqn& e, const Jaxpr& j) {
  if (e.out.size() != 1 || e.in.empty()) return false;
  const AVal& in = j.aval_of(e.in[0]);
  const AVal& out = j.avals[e.out[0]];
  if (!(in == out)) return false;
  switch (e.prim) {
    case Prim::reshape:
    case Prim::convert:
    case Prim::broadcast_in_dim:
    case Prim::stop_gradient:
    case Prim::slice:
    case Prim::pad: return true;  // same aval: the op moved nothing
    case Prim::transpose:
      for (std::size_t i = 0; i < e.params.perm.size(); ++i)
        if (e.params.perm[i] != static_cast<std::int64_t>(i)) return false;
      return true;
    case Prim::rev:
    case Prim::reduce_sum:
    case Prim::reduce_max:
    case Prim::reduce_min:
    case Prim::reduce_prod: return e.params.axes.empty();
    default: return false;
  }
}

// Rewrites operands through `sub` (old var -> replacement atom).
Atom subst(const Atom& a, const std::vector<std::optional<Atom>>& sub) {
  if (!a.is_literal() && sub[a.var]) return *sub[a.var];
  return a;
}

Jaxpr checked(Jaxpr j) {
  typecheck(j);
  return j;
}

std::string atom_key(const Atom& a) {
  if (!a.is_literal()) return fmt::format("v{}", a.var);
  return fmt::format("l{}:{}", dtype_name(a.dtype), a.value);
}

}  // namespace

Jaxpr drop_identities(const Jaxpr& j) {
  Jaxpr r = j;
  r.eqns.clear();
  std::vector<std::optional<Atom>> sub(j.avals.size());
  for (const Eqn& e0 : j.eqns) {
    Eqn e = e0;
    bool all_literal = true;
    for (auto& a : e.in) {
      a = subst(a, sub);
      all_literal = all_literal && a.is_literal();
    }
    if (is_identity(e, j)) {
      sub[e.out[0]] = e.in[0];
      continue;
    }
    if (all_literal && !e.in.empty() && e.out.size() == 1 && j.avals[e.out[0]].ndim() == 0 &&
        prim_kind(e.prim) == PrimKind::elementwise) {
      std::vector<Array> vals;
      for (auto& a : e.in) vals.push_back(literal_array(a));
      Array r = eval_bind(e.prim, vals, e.params)[0];  // fold now
      sub[e.out[0]] = Atom::lit(r.item<double>(), r.dtype());
      continue;
    }
    r.eqns.push_back(std::move(e));
  }
  for (auto& a : r.outs) a = subst(a, sub);
  return checked(std::move(r));
}

Jaxpr cse(const Jaxpr& j) {
  Jaxpr r = j;
  r.eqns.clear();
  std::vector<std::optional<Atom>> sub(j.avals.size());
  std::map<std::string, std::vector<int>> seen;
  for (const Eqn& e0 : j.eqns) {
    Eqn e = e0;
    std::string key = fmt::format("{}[{}]", prim_name(e.prim), e.params.str(e.prim));
    for (auto& a : e.in) {
      a = subst(a, sub);
      key += " " + atom_key(a);
    }
    if (auto it = seen.find(key); it != seen.end()) {
      for (std::size_t k = 0; k < e.out.size(); ++k) sub[e.out[k]] = Atom{it->second[k]};
      continue;
    }
    seen.emplace(key, e.out);
    r.eqns.push_back(std::move(e));
  }
  for (auto& a : r.outs) a = subst(a, sub);
  return checked(std::move(r));
}

Jaxpr dce(const Jaxpr& j) {
  std::vector<bool> live(j.avals.size(), false);
  for (const Atom& a : j.outs)
    if (!a.is_literal()) live[a.var] = true;
  std::vector<bool> keep(j.eqns.size(), false);
  for (std::size_t i = j.eqns.size(); i-- > 0;) {
    const Eqn& e = j.eqns[i];
    for (int o : e.out) keep[i] = keep[i] || live[o];
    if (keep[i])
      for (const Atom& a : e.in)
        if (!a.is_literal()) live[a.var] = true;
  }
  Jaxpr r = j;
  r.eqns.clear();
  for (std::size_t i = 0; i < j.eqns.size(); ++i)
    if (keep[i]) r.eqns.push_back(j.eqns[i]);
  return checked(std::move(r));
}

Jaxpr simplify(const Jaxpr& j) { return dce(cse(drop_identities(j))); }

namespace {

// What each composite primitive runs as (nullptr: not a composite).
using Steps = Array (*)(const Array&);
Steps steps_of(Prim p) { return p == Prim::inv ? &np::linalg::inv_by_lu : nullptr; }

// The steps of one composite equation on its operands' avals, traced once per signature.
const Jaxpr& expansion_of(const Eqn& e, const Jaxpr& j) {
  static std::mutex mu;
  static std::map<std::string, Jaxpr> cache;
  const AVal a = j.aval_of(e.in.at(0));
  const std::string key = fmt::format("{}|{}", prim_name(e.prim), a.str());
  std::lock_guard lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const Steps steps = steps_of(e.prim);
  ClosedJaxpr cj =
      make_jaxpr_flat([steps](const std::vector<Array>& in) { return std::vector<Array>{steps(in[0])}; }, {a});
  if (!cj.consts.empty() || cj.jaxpr.outs.size() != 1 || cj.jaxpr.outs[0].is_literal())
    throw Error(fmt::format("expand_composites: {} on {} traced to an unexpected program", prim_name(e.prim), a.str()));
  return cache.emplace(key, std::move(cj.jaxpr)).first->second;
}

// Appends the steps of `x` to r, reading x's inputs from `in` and defining x's output as `out`.
void splice(Jaxpr& r, const Jaxpr& x, const std::vector<Atom>& in, int out) {
  std::vector<std::optional<Atom>> at(x.avals.size());
  for (std::size_t i = 0; i < x.invars.size(); ++i) at[x.invars[i]] = in[i];
  at[x.outs[0].var] = Atom{out};
  auto map = [&](const Atom& a) {
    if (a.is_literal()) return a;
    if (!at[a.var]) at[a.var] = Atom{r.new_var(x.avals[a.var])};
    return *at[a.var];
  };
  for (const Eqn& e0 : x.eqns) {
    Eqn e = e0;
    for (Atom& a : e.in) a = map(a);
    for (int& o : e.out) o = map(Atom{o}).var;
    r.eqns.push_back(std::move(e));
  }
}

}  // namespace

bool has_composites(const Jaxpr& j) {
  return std::any_of(j.eqns.begin(), j.eqns.end(), [](const Eqn& e) { return steps_of(e.prim) != nullptr; });
}

Jaxpr expand_composites(const Jaxpr& j) {
  if (!has_composites(j)) return j;
  Jaxpr r = j;
  r.eqns.clear();
  for (const Eqn& e : j.eqns) {
    if (steps_of(e.prim))
      splice(r, expansion_of(e, j), e.in, e.out[0]);
    else
      r.eqns.push_back(e);
  }
  return checked(std::move(r));
}

}  // namespace jx
