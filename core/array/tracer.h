#pragma once
#include <memory>

#include "core/base/shape.h"

namespace jx {

class MainTrace;

// A value being traced by one transformation instance (its MainTrace). Subclasses carry what
// that transformation needs (a primal/tangent pair, a batch dimension, a jaxpr variable).
class Tracer {
 public:
  Tracer(std::shared_ptr<MainTrace> main, AVal aval) : main(std::move(main)), aval(std::move(aval)) {}
  virtual ~Tracer() = default;
  std::shared_ptr<MainTrace> main;
  AVal aval;
  // replay borrowed_residuals: set when a residual borrows this tracer's value; dispose() of a
  // handle then marks it dead for every borrower.
  std::shared_ptr<bool> alive;
};

}  // namespace jx
