#pragma once
#include <vector>

#include "core/prim/prim.h"

namespace jx {

// Output avals of `p` applied to inputs of avals `in`. Total over Prim; validates everything a
// backend relies on (shapes, dtypes, axes, bounds) and throws ShapeError naming the primitive
// and its operands. Backends may assume their inputs passed this check.
std::vector<AVal> abstract_eval(Prim p, const std::vector<AVal>& in, const PrimParams& params);

}  // namespace jx
