#pragma once
// Shared by the control primitives (scan.cc, assoc_scan.cc): bodies as constant-free jaxprs and
// the associative scan's rules.
#include <optional>

#include "core/ir/jaxpr.h"
#include "core/lax/control.h"
#include "core/trace/builder.h"

namespace jx {

// A closed jaxpr with no constants, as a control primitive's body.
struct JaxprBody final : SubProgram {
  explicit JaxprBody(Jaxpr j) : jaxpr(std::move(j)) {}
  std::vector<AVal> in_avals() const override {
    std::vector<AVal> v;
    for (int i : jaxpr.invars) v.push_back(jaxpr.avals[i]);
    return v;
  }
  std::vector<AVal> out_avals() const override {
    std::vector<AVal> v;
    for (const Atom& a : jaxpr.outs) v.push_back(jaxpr.aval_of(a));
    return v;
  }
  std::string str() const override { return jaxpr.str(); }
  Jaxpr jaxpr;
};

// Turns a closed jaxpr's constants into leading inputs: returns the jaxpr and the constants.
std::pair<Jaxpr, std::vector<Array>> hoist(ClosedJaxpr cj);

std::vector<Array> assoc_eval(const std::vector<Array>& ops, const Params& p);
// Forward mode: one associative scan of (element, tangent) pairs whose body is the jvp of the
// combine. Under linearize: the odd/even decomposition (its tangent equations transpose).
std::pair<std::vector<Array>, std::vector<Array>> assoc_jvp(const std::vector<Array>& x, const std::vector<std::optional<Array>>& t,
                                                            const Params& p, bool linearizing);
// vmap: the primitive with the combine vmapped (batched leaves carry the batch axis after `axis`).
std::vector<std::pair<Array, std::optional<std::int64_t>>> assoc_batch(const std::vector<Array>& vals,
                                                                        const std::vector<std::optional<std::int64_t>>& bd, std::int64_t size,
                                                                        const Params& p);

}  // namespace jx
