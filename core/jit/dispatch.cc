// The JIT's dispatcher (core/trace: Dispatcher), registered once when libjx loads: how the
// runtime evaluates what a backend cannot prepare alone. Eager scans and associative scans run as
// one-equation programs where the backend compiles them (else the host loop or the
// decomposition, core/transform); eager primitives on kernel-only backends (vulkan) run as
// one-equation programs (JAX's apply_primitive).
#include <fmt/format.h>

#include "core/jit/cache.h"
#include "core/prim/abstract_eval.h"
#include "core/transform/control_internal.h"

namespace jx {
namespace {

// { lambda in...; let out... = prim[params] in... in (out...) }
Jaxpr one_equation(Prim prim, const PrimParams& params, const std::vector<AVal>& in, const std::vector<AVal>& out) {
  Jaxpr j;
  Eqn e{prim, params, {}, {}};
  for (const AVal& a : in) {
    const int v = j.new_var(a);
    j.invars.push_back(v);
    e.in.push_back({v});
  }
  for (const AVal& a : out) {
    e.out.push_back(j.new_var(a));
    j.outs.push_back({e.out.back()});
  }
  j.eqns.push_back(std::move(e));
  return j;
}

// Eager scans: a one-equation program around the scan, compiled and cached like any jit program,
// when the backend has a compiled-loop scan.
std::optional<std::vector<Array>> run_scan_compiled(Prim prim, const PrimParams& p, const std::vector<Array>& ops,
                                                    std::string& why) {
  Backend& be = ops.empty() ? default_backend() : ops[0].backend();
  std::vector<AVal> in;
  for (const Array& a : ops) in.push_back(a.aval());
  const Jaxpr j = one_equation(prim, p, in, abstract_eval(prim, in, p));
  const Target target = Target::for_eager(be);
  const std::string key = fmt::format("eager-scan|{}|{}", j.str(), target.key());
  auto prog = program_cache().get(key);
  if (!prog) {
    prog = compile(j, target);
    program_cache().put(key, prog);
  }
  // The scan's own host loop is the eager fallback: use the program only for a compiled loop.
  // (An associative scan's program always runs: without a backend routine it is decomposed.)
  if (std::string reason = prog->host_loop_reason(); prim == Prim::scan && !reason.empty()) {
    why = reason;
    return std::nullopt;
  }
  return prog->run(ops);
}

// Eager primitives on kernel-only backends (vulkan): a one-equation program, lowered under the
// backend's buffer budget and kept in a small cache of its own (eager ops never evict jit
// programs from the LRU).
std::vector<Array> run_op_program(const Op& op, const std::vector<Array>& args, Backend& be) {
  const Jaxpr j = one_equation(op.prim, op.params, op.in, op.out);
  const Target target = Target::for_eager(be);
  const std::string key = fmt::format("{}|{}", j.str(), target.key());
  auto prog = op_programs().get(key);
  if (!prog) {
    prog = compile(j, target);
    op_programs().put(key, prog);
  }
  return prog->run(args);
}

class JitDispatcher final : public Dispatcher {
 protected:
  std::vector<Array> apply_control(Prim p, const std::vector<Array>& args, const PrimParams& params) override {
    return control_eval(p, args, params, &run_scan_compiled);
  }
  std::vector<Array> apply_unprepared(const Op& op, const std::vector<Array>& args, Backend& be) override {
    return run_op_program(op, args, be);
  }
};

// libjx is one shared library: this runs when it loads, before any user code can bind.
const bool g_registered = [] {
  static JitDispatcher d;  // immortal for the process (never unregistered)
  set_dispatcher(&d);
  return true;
}();

}  // namespace
}  // namespace jx
