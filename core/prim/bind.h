#pragma once
#include <span>
#include <vector>

#include "core/array/array.h"
#include "core/prim/prim.h"

namespace jx {

class Backend;

// Applies a primitive: to the highest-level transformation among the operands' tracers, or,
// with concrete operands only, eval_bind: abstract_eval validates, the operands' backend (or
// the default one for nullary primitives) prepares and dispatches.
std::vector<Array> bind(Prim p, const std::vector<Array>& args, const Params& params = {});
// The bottom of the stack: evaluates on concrete arrays.
std::vector<Array> eval_bind(Prim p, const std::vector<Array>& args, const Params& params);
Array bind1(Prim p, const std::vector<Array>& args, const Params& params = {});

// Control primitives (scan) evaluate sub-jaxprs; the layer that owns jaxprs registers the
// implementation here so that this layer does not depend on it.
using ControlImpl = std::vector<Array> (*)(Prim, const std::vector<Array>&, const Params&);
void set_control_impl(ControlImpl f);
// Backends that run only kernels (vulkan) return no executable for an elementwise, reduction or
// view primitive: the JIT layer registers how to run it as a one-equation program.
class Backend;
struct Op;
using OpRunner = std::vector<Array> (*)(const Op& op, const std::vector<Array>& args, Backend& be);
void set_op_runner(OpRunner f);

// Copies a concrete array to another backend (or returns it when already there).
Array device_put(const Array& x, const std::string& backend_name);

// Uploads host bytes (row-major, aval.bytes() long) to a fresh slot.
Array array_from_bytes(std::span<const std::byte> bytes, const AVal& aval, Backend* on = nullptr);

}  // namespace jx
