#pragma once
#include <string>
#include <vector>

#include "core/array/array.h"
#include "core/prim/prim.h"

namespace jx {

// An operand: a variable, or a rank-0 literal printed inline. Literals are host scalars, so a
// jaxpr (and every compiled program cached from it) holds no device memory of its own.
struct Atom {
  int var = -1;
  double value = 0.0;  // literal
  DType dtype = DType::float32;
  bool is_literal() const { return var < 0; }
  static Atom lit(double v, DType d) { return {-1, v, d}; }
};

// A literal as JAX prints it ("2.0:f32[]"), and as a rank-0 array on the default backend.
std::string literal_str(const Atom& a);
Array literal_array(const Atom& a);

struct Eqn {
  Prim prim;
  PrimParams params;
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
  AVal aval_of(const Atom& a) const { return a.is_literal() ? AVal{a.dtype, {}} : avals[a.var]; }
  // As JAX prints it: "{ lambda ; a:f32[2,2]. let b:f32[2,2] = mul a 2.0:f32[] in (b,) }"
  // (constvars; invars). The text loader (core/text) reads it back: parse(str()) == str().
  std::string str() const;
};

// A jaxpr with the values of its constvars; owns them (they are the residuals of a linearized
// function, or the captured constants of a traced one).
struct ClosedJaxpr {
  Jaxpr jaxpr;
  std::vector<Array> consts;
  // replay borrowed_residuals: per constant, the liveness of the user handle it borrows (or null)
  std::vector<std::shared_ptr<bool>> borrowed;
  std::string str() const { return jaxpr.str(); }
};

// Re-derives every equation's output avals with abstract_eval and checks them, plus
// define-before-use and the input/output lists. Throws jx::Error("typecheck: ...").
void typecheck(const Jaxpr& j);

}  // namespace jx
