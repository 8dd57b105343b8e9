#pragma once
// A traced function's flat form and its jaxpr (the builder itself: core/trace/builder.h).
#include <functional>
#include <vector>

#include "core/ir/jaxpr.h"

namespace jx {

using FlatFn = std::function<std::vector<Array>(const std::vector<Array>&)>;

// Traces fn on abstract arguments of avals `in` (typechecked). (Staged for a compile target, as
// jit traces: core/trace/builder.h.)
ClosedJaxpr make_jaxpr_flat(const FlatFn& fn, const std::vector<AVal>& in);

}  // namespace jx
