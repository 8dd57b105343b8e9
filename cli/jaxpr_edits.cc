// The edits jxlab reduce tries on a program: delete, bypass or cut an equation, make an input a
// constant, resize a dimension everywhere (through the program's text).
#include "cli/jaxpr_edits.h"

#include <algorithm>
#include <set>

#include "core/text/load.h"
#include "core/transform/control_internal.h"

namespace jx::lab {

bool used_after(const Jaxpr& j, int var, std::size_t from) {
  for (std::size_t k = from; k < j.eqns.size(); ++k)
    for (const jx::Atom& a : j.eqns[k].in)
      if (!a.is_literal() && a.var == var) return true;
  for (const jx::Atom& a : j.outs)
    if (!a.is_literal() && a.var == var) return true;
  return false;
}

// Equations none of whose outputs is read go (the runtime's primitives have no side effects).
void drop_dead(Jaxpr& j) {
  for (std::size_t i = j.eqns.size(); i-- > 0;) {
    bool live = false;
    for (int o : j.eqns[i].out) live = live || used_after(j, o, i + 1);
    if (!live) j.eqns.erase(j.eqns.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

// Equation i deleted: its outputs that something reads become inputs of the same type.
Jaxpr without_eqn(const Jaxpr& j, std::size_t i) {
  Jaxpr k = j;
  for (int o : k.eqns[i].out)
    if (used_after(k, o, i + 1)) k.invars.push_back(o);
  k.eqns.erase(k.eqns.begin() + static_cast<std::ptrdiff_t>(i));
  drop_dead(k);
  return k;
}

// Equation i bypassed: its one output replaced everywhere by its operand k of the same type (a
// wrong value then flows past the equations that only carried it); nullopt when none fits.
std::optional<Jaxpr> bypassed(const Jaxpr& j, std::size_t i, std::size_t k) {
  const Eqn& e = j.eqns[i];
  if (e.out.size() != 1 || k >= e.in.size() || e.in[k].is_literal() || !(j.avals[e.in[k].var] == j.avals[e.out[0]]))
    return std::nullopt;
  Jaxpr b = j;
  const int from = e.out[0], to = e.in[k].var;
  b.eqns.erase(b.eqns.begin() + static_cast<std::ptrdiff_t>(i));
  auto redirect = [&](jx::Atom& a) {
    if (!a.is_literal() && a.var == from) a.var = to;
  };
  for (Eqn& x : b.eqns)
    for (jx::Atom& a : x.in) redirect(a);
  for (jx::Atom& a : b.outs) redirect(a);
  drop_dead(b);
  return b;
}

// Input k replaced by a constant (ones of its type, made by a broadcast equation at the front).
Jaxpr input_as_constant(const Jaxpr& j, std::size_t k) {
  Jaxpr c = j;
  const int v = c.invars.at(k);
  const AVal a = c.avals[v];
  c.invars.erase(c.invars.begin() + static_cast<std::ptrdiff_t>(k));
  Eqn e;
  e.prim = Prim::broadcast_in_dim;
  e.params.shape = a.shape;
  e.in = {jx::Atom::lit(a.dtype == DType::bool_ ? 1.0 : 1.0, a.dtype)};
  e.out = {v};
  c.eqns.insert(c.eqns.begin(), e);
  drop_dead(c);
  return c;
}

// The dimension sizes of the program's types but not of its constvars (whose values are fixed),
// largest first.
std::vector<std::int64_t> sizes_of(const Jaxpr& j) {
  std::set<std::int64_t> all, fixed;
  for (int v : j.constvars) fixed.insert(j.avals[v].shape.begin(), j.avals[v].shape.end());
  for (const AVal& a : j.avals)
    for (auto d : a.shape)
      if (d > 1 && !fixed.count(d)) all.insert(d);
  return std::vector<std::int64_t>(all.rbegin(), all.rend());
}

// Every dimension n made m (types, shape tuples, scan lengths, in bodies too); nullopt when the
// text no longer types (a reshape or slice that needs n).
std::optional<Jaxpr> resized(const Jaxpr& j, std::int64_t n, std::int64_t m) {
  try {
    return text::load_program(text::substitute(text::with_placeholder(j.str(), n, "size"), {{"size", m}}), "resized")
        .jaxpr;
  } catch (const Error&) {
    return std::nullopt;
  }
}

// The bodies of a control equation (scan, associative_scan, while's body and cond, cond's
// branches), to edit in place.
std::vector<std::shared_ptr<const SubProgram>*> bodies(Eqn& e) {
  std::vector<std::shared_ptr<const SubProgram>*> v;
  if (e.params.tangent_of) return v;  // a pair scan's body is derived from its combine: left alone
  for (auto* s : {&e.params.body, &e.params.cond})
    if (*s) v.push_back(s);
  for (auto& b : e.params.branches) v.push_back(&b);
  return v;
}

// In body `which` of equation `e`, equation `k` replaced by zeros of its outputs' types (what
// only it fed then goes); nullopt when that changes nothing or no longer types.
std::optional<Jaxpr> body_cut(const Jaxpr& j, std::size_t e, std::size_t which, std::size_t k) {
  Jaxpr out = j;
  auto subs = bodies(out.eqns[e]);
  if (which >= subs.size()) return std::nullopt;
  Jaxpr b = static_cast<const JaxprBody&>(**subs[which]).jaxpr;
  if (k >= b.eqns.size()) return std::nullopt;
  const auto& in = b.eqns[k].in;
  if (std::all_of(in.begin(), in.end(), [](const jx::Atom& a) { return a.is_literal(); })) return std::nullopt;
  std::vector<Eqn> zeros;
  for (int o : b.eqns[k].out) {
    Eqn z;
    z.prim = Prim::broadcast_in_dim;
    z.params.shape = b.avals[o].shape;
    z.in = {jx::Atom::lit(0.0, b.avals[o].dtype)};
    z.out = {o};
    zeros.push_back(z);
  }
  b.eqns.erase(b.eqns.begin() + static_cast<std::ptrdiff_t>(k));
  b.eqns.insert(b.eqns.begin() + static_cast<std::ptrdiff_t>(k), zeros.begin(), zeros.end());
  drop_dead(b);
  try {
    typecheck(b);
    *subs[which] = std::make_shared<JaxprBody>(std::move(b));
    PrimParams& p = out.eqns[e].params;  // vmap's hint (the body before batching) no longer matches
    p.unbatched = nullptr;
    p.batch_size = 0;
    p.batched.clear();
    typecheck(out);
  } catch (const Error&) {
    return std::nullopt;
  }
  return out;
}

// Equations that read a variable (constants, equations of literals only, are counted apart), and
// all of them with the bodies of control primitives.
std::size_t count_eqns(const Jaxpr& j) {
  std::size_t n = 0;
  for (const Eqn& e : j.eqns)
    n += !std::all_of(e.in.begin(), e.in.end(), [](const jx::Atom& a) { return a.is_literal(); });
  return n;
}
std::size_t count_all(const Jaxpr& j) {
  std::size_t n = j.eqns.size();
  for (const Eqn& e : j.eqns) {
    std::vector<const SubProgram*> subs{e.params.body.get(), e.params.tangent_of.get(), e.params.cond.get()};
    for (const auto& b : e.params.branches) subs.push_back(b.get());
    for (const SubProgram* s : subs)
      if (s) n += count_all(static_cast<const JaxprBody&>(*s).jaxpr);
  }
  return n;
}

}  // namespace jx::lab
