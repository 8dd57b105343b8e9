#pragma once
#include "core/ir/jaxpr.h"

namespace jx {

// Each pass returns a new jaxpr with the same inputs/outputs and runs typecheck on it.
Jaxpr drop_identities(const Jaxpr& j);  // reshape/transpose/convert/... that change nothing; scalar literal folding
Jaxpr cse(const Jaxpr& j);              // one equation per (primitive, params, operands)
Jaxpr dce(const Jaxpr& j);              // equations whose outputs are never used
Jaxpr simplify(const Jaxpr& j);         // all of the above, in that order
// Primitives that are one equation for differentiation but steps for a backend (inv: lu and two
// triangular solves, np::linalg::inv_by_lu), replaced by those steps; lower() runs it first.
// Returns j itself, unchanged, where it has none.
bool has_composites(const Jaxpr& j);
Jaxpr expand_composites(const Jaxpr& j);

}  // namespace jx
