#pragma once
#include <functional>
#include <map>

#include "core/ir/jaxpr.h"
#include "core/trace/make_jaxpr.h"
#include "core/trace/trace.h"

namespace jx {

// Records every primitive applied to its tracers as a jaxpr equation. Operands that are not its
// own tracers (concrete arrays, tracers of lower-level transformations) become constants, owned
// by the resulting ClosedJaxpr; rank-0 concrete ones become inline literals.
class JaxprBuilder final : public MainTrace {
 public:
  explicit JaxprBuilder(const Target* target = nullptr) : target_(target) {}
  std::string_view kind() const override { return "jaxpr"; }
  const Target* target() const override { return target_; }
  std::vector<Array> process(Prim p, const std::vector<Array>& args, const PrimParams& params) override;
  Array new_arg(const AVal& aval);
  Atom atom(const Array& x);
  ClosedJaxpr finish(const std::vector<Array>& outs);

 private:
  Jaxpr jaxpr_;
  std::vector<Array> consts_;
  std::map<std::pair<int, std::uintptr_t>, int> const_ids_;
  const Target* target_;
};

// Traces fn on abstract arguments of avals `in` (typechecked), staged for `target` (jit's): the
// transformations in fn read it through staging_target().
ClosedJaxpr make_jaxpr_flat(const FlatFn& fn, const std::vector<AVal>& in, const Target* target);

// replay borrowed_residuals: the jvp trace notes which tracer each primal value came from; a
// builder constant made from such a value borrows that tracer's liveness.
void note_borrow(const Array& primal, const std::shared_ptr<Tracer>& from);
std::shared_ptr<bool> borrowed_liveness(const Array& x);
void clear_borrows();
// Under jit a dead borrowed residual is found while tracing; the JS runtime reported it only
// after the jitted computation ran. The check defers the error here; jit throws it after the run.
void defer_disposal_error(std::string message);
std::string take_deferred_disposal_error();  // "" when none; clears it

}  // namespace jx
