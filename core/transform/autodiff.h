#pragma once
// The transformations on flat functions (lists of arrays): jvp, linearize/vjp, vmap. Their rule
// tables: rules.h; typed versions over pytrees: core/transforms.h.
#include <optional>
#include <vector>

#include "core/trace/make_jaxpr.h"

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

// ---- batching ----
// fn mapped over axis in_axes[i] of argument i (nullopt: not mapped); outputs stacked on
// out_axes[j] (a single entry applies to every output).
FlatFn vmap_flat(FlatFn fn, std::vector<std::optional<std::int64_t>> in_axes, std::vector<std::int64_t> out_axes = {0});

}  // namespace jx
