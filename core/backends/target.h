#pragma once
// What a program is compiled for, made once where jit (or an eager one-equation program)
// compiles and passed explicitly from there: to tracing (make_jaxpr_flat: a transformation that
// picks its formulation by the backend, associative_scan's reverse mode, reads it from the trace
// it stages into), to lowering (the fusion budget and options) and to the backend's planners
// (plan_scan, plan_associative_scan). key() is part of every compiled-program cache key.
#include <string>

#include "core/backends/devices.h"
#include "core/replay/policy.h"

namespace jx {

// The stricter of two buffer limits, where a limit ≤ 0 is none.
inline int stricter_limit(int a, int b) { return a <= 0 ? b : b <= 0 ? a : (a < b ? a : b); }

struct Target {
  Backend* backend = nullptr;
  BackendLimits limits;  // the backend's, read once
  // storage buffers one fused kernel may bind, inputs and output (0: no budget)
  int budget = 0;
  replay::Policy policy;  // the replay switches in effect when the target was made
  // replay ignore_buffer_budget under jit: the JS runtime's fusion (lower.cc: LowerOptions)
  bool inline_multi_use = false;

  // A program jit compiles: the budget is the stricter of the backend's limit and max_buffers
  // (0: the backend's); no budget, and multi-use values inlined, under ignore_buffer_budget.
  static Target for_jit(Backend& be, int max_buffers);
  // A one-equation program of an eager primitive or scan: the backend's own budget.
  static Target for_eager(Backend& be);
  // "backend|budget|replay switches" (+ "|inline")
  std::string key() const;
};

}  // namespace jx
