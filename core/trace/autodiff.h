#pragma once
#include <optional>
#include <vector>

#include "core/trace/builder.h"

namespace jx {

// ---- forward mode ----
// (outputs, output tangents) of fn at primals along tangents (one per primal, same avals).
// linearizing: called by linearize_flat (tangent work is recorded for transposition).
std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(const FlatFn& fn, const std::vector<Array>& primals,
                                                           const std::vector<Array>& tangents,
                                                           bool linearizing = false);
// Outputs of fn at x and d outputs[0] / d x (one array per input, x's shapes) by forward mode:
// one jvp vmapped over the scalars of x (each tangent a basis vector), the primal work once.
std::pair<std::vector<Array>, std::vector<Array>> value_and_grad_forward_flat(const FlatFn& fn,
                                                                              const std::vector<Array>& x);
class MainTrace;
// A jvp trace not under linearize: its tangent work is evaluated, never transposed.
bool is_forward_jvp(const MainTrace& m);

// ---- linearize / reverse mode ----
// The linear map x_dot -> y_dot of fn at the primals, as a jaxpr whose constants are the
// residuals. It owns them: they live until the LinearFn is disposed or destroyed.
class LinearFn {
 public:
  LinearFn() = default;
  explicit LinearFn(ClosedJaxpr j) : j_(std::move(j)) {}
  std::vector<Array> operator()(const std::vector<Array>& tangents) const;  // jvp direction
  // vjp direction; an empty (default-constructed) cotangent stands for zeros
  std::vector<Array> transpose(const std::vector<Array>& cotangents) const;
  const ClosedJaxpr& jaxpr() const { return j_; }
  void dispose();
  bool disposed() const { return disposed_; }

 private:
  void check() const;
  ClosedJaxpr j_;
  bool disposed_ = false;
};

std::pair<std::vector<Array>, LinearFn> linearize_flat(const FlatFn& fn, const std::vector<Array>& primals);
// vjp = linearize + transpose; the pullback is LinearFn::transpose.
inline std::pair<std::vector<Array>, LinearFn> vjp_flat(const FlatFn& fn, const std::vector<Array>& primals) {
  return linearize_flat(fn, primals);
}

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
                                           const Params& params);
// cts: one per output; an empty handle is a zero cotangent (single-output rules get a real one).
std::vector<std::optional<Array>> transpose_rule(Prim p, const std::vector<LinearIn>& in, const std::vector<Array>& cts,
                                                 const Params& params);

// ---- control flow (core/trace/scan.cc) ----
// JVP of a control primitive: primal outputs and their tangents (zeros instantiated).
std::pair<std::vector<Array>, std::vector<Array>> control_jvp(Prim p, const std::vector<Array>& x,
                                                              const std::vector<std::optional<Array>>& t,
                                                              const Params& params, bool linearizing);
std::vector<std::optional<Array>> control_transpose(Prim p, const std::vector<LinearIn>& in,
                                                    const std::vector<Array>& cts, const Params& params);
// vmap of a control primitive: values with their batch dims (nullopt: unbatched), batch size.
std::vector<std::pair<Array, std::optional<std::int64_t>>> control_batch(
    Prim p, const std::vector<Array>& vals, const std::vector<std::optional<std::int64_t>>& bdims, std::int64_t size,
    const Params& params);

// ---- batching ----
// fn mapped over axis in_axes[i] of argument i (nullopt: not mapped); outputs stacked on
// out_axes[j] (a single entry applies to every output).
FlatFn vmap_flat(FlatFn fn, std::vector<std::optional<std::int64_t>> in_axes, std::vector<std::int64_t> out_axes = {0});
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
