#pragma once
// The transformations' rule tables (jvp_rules.cc, transpose_rules.cc, batching.cc, the control
// primitives' rules) and what the rules share; internal to core/transform and the JIT.
#include <optional>
#include <vector>

#include "core/trace/builder.h"
#include "core/transform/autodiff.h"

namespace jx {

class MainTrace;
// A jvp trace not under linearize: its tangent work is evaluated, never transposed.
bool is_forward_jvp(const MainTrace& m);

// Transposes a linear jaxpr: cotangents of its invars from cotangents of its outputs.
std::vector<Array> backward_pass(const Jaxpr& j, const std::vector<Array>& consts, const std::vector<Array>& cts_out);

// Rule tables. jvp is total over Prim; transpose is partial (linear primitives only).
struct LinearIn {
  bool linear;  // true: an undefined primal (the cotangent flows to it); false: a constant
  Array value;  // the constant when !linear
  AVal aval;
};
std::vector<std::optional<Array>> jvp_rule(Prim p, const std::vector<Array>& x,
                                           const std::vector<std::optional<Array>>& t, const std::vector<Array>& y,
                                           const PrimParams& params);
// cts: one per output; an empty handle is a zero cotangent (single-output rules get a real one).
std::vector<std::optional<Array>> transpose_rule(Prim p, const std::vector<LinearIn>& in, const std::vector<Array>& cts,
                                                 const PrimParams& params);

// ---- control flow (core/transform/scan.cc) ----
// JVP of a control primitive: primal outputs and their tangents (zeros instantiated).
std::pair<std::vector<Array>, std::vector<Array>> control_jvp(Prim p, const std::vector<Array>& x,
                                                              const std::vector<std::optional<Array>>& t,
                                                              const PrimParams& params, bool linearizing);
std::vector<std::optional<Array>> control_transpose(Prim p, const std::vector<LinearIn>& in,
                                                    const std::vector<Array>& cts, const PrimParams& params);
// vmap of a control primitive: values with their batch dims (nullopt: unbatched), batch size.
std::vector<std::pair<Array, std::optional<std::int64_t>>> control_batch(
    Prim p, const std::vector<Array>& vals, const std::vector<std::optional<std::int64_t>>& bdims, std::int64_t size,
    const PrimParams& params);

// The aval with a batch axis of `size` inserted at `at`; a value with its batch axis `b` moved to
// `at` (nullopt: unbatched, broadcast along a new axis there).
AVal with_batch_axis(AVal a, std::int64_t at, std::int64_t size);
Array batch_axis_at(const Array& v, std::optional<std::int64_t> b, std::int64_t at, std::int64_t size);
// fn mapped over axis in_axes[i] of argument i, `size` long; each output with its batch axis, or
// nullopt where it does not depend on a mapped argument (then it is not broadcast).
std::vector<std::pair<Array, std::optional<std::int64_t>>> vmap_partial(
    const FlatFn& fn, const std::vector<std::optional<std::int64_t>>& in_axes, std::int64_t size,
    const std::vector<Array>& args);

}  // namespace jx
