#pragma once
#include <span>
#include <vector>

#include "core/array/array.h"
#include "core/prim/prim.h"

namespace jx {

class Backend;

// Applies a primitive. Today this is the eval path: abstract_eval validates, the operands'
// backend (or the default one for nullary primitives) prepares and dispatches. The trace stack
// of the transformations issue intercepts exactly here.
std::vector<Array> bind(Prim p, const std::vector<Array>& args, const Params& params = {});
Array bind1(Prim p, const std::vector<Array>& args, const Params& params = {});

// Uploads host bytes (row-major, aval.bytes() long) to a fresh slot.
Array array_from_bytes(std::span<const std::byte> bytes, const AVal& aval, Backend* on = nullptr);

}  // namespace jx
