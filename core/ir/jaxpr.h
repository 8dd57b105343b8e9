#pragma once
#include <string>
#include <vector>

#include "core/array/array.h"
#include "core/prim/prim.h"

namespace jx {

// An operand: a variable, or a rank-0 literal printed inline.
struct Atom {
  int var = -1;
  Array literal;
  bool is_literal() const { return var < 0; }
};

struct Eqn {
  Prim prim;
  Params params;
  std::vector<Atom> in;
  std::vector<int> out;
};

// A jaxpr in A-normal form. Variables are ids into `avals`; every id is defined once (as an
// invar, a constvar or one equation output) before its uses.
struct Jaxpr {
  std::vector<AVal> avals;
  std::vector<int> invars, constvars;
  std::vector<Eqn> eqns;
  std::vector<Atom> outs;

  int new_var(const AVal& a) {
    avals.push_back(a);
    return static_cast<int>(avals.size()) - 1;
  }
  const AVal& aval_of(const Atom& a) const { return a.is_literal() ? a.literal.aval() : avals[a.var]; }
  // JAX style: "{ lambda a:f32[2,2]; . let b:f32[2,2] = mul a a in (b) }" (invars; constvars).
  std::string str() const;
};

// A jaxpr with the values of its constvars; owns them (they are the residuals of a linearized
// function, or the captured constants of a traced one).
struct ClosedJaxpr {
  Jaxpr jaxpr;
  std::vector<Array> consts;
  std::string str() const { return jaxpr.str(); }
};

// Re-derives every equation's output avals with abstract_eval and checks them, plus
// define-before-use and the input/output lists. Throws jx::Error("typecheck: ...").
void typecheck(const Jaxpr& j);

// Binds each equation in order: concrete values evaluate, tracers are traced further.
std::vector<Array> eval_jaxpr(const Jaxpr& j, const std::vector<Array>& consts, const std::vector<Array>& args);

}  // namespace jx
