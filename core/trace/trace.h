#pragma once
#include <memory>
#include <string_view>
#include <vector>

#include "core/array/array.h"
#include "core/array/tracer.h"
#include "core/ir/jaxpr.h"
#include "core/prim/prim.h"

namespace jx {

class Backend;
struct Op;
struct Target;

// Applies a primitive (Autodidax's bind): to the highest-level transformation among the
// operands' tracers and the dynamic trace, or, with concrete operands only, eval_bind.
std::vector<Array> bind(Prim p, const std::vector<Array>& args, const PrimParams& params = {});
Array bind1(Prim p, const std::vector<Array>& args, const PrimParams& params = {});
// The bottom of the stack: the dispatcher evaluates on concrete arrays.
std::vector<Array> eval_bind(Prim p, const std::vector<Array>& args, const PrimParams& params);
// Binds each equation in order: concrete values evaluate, tracers are traced further.
std::vector<Array> eval_jaxpr(const Jaxpr& j, const std::vector<Array>& consts, const std::vector<Array>& args);

// How primitives run on concrete arrays: the one object through which this layer reaches the
// layers above it. The default runs what a backend prepares alone (Backend::prepare) and
// refuses the rest; the JIT (core/jit/dispatch.cc) registers one that also runs control
// primitives (compiled where the backend can, else on the host) and, on kernel-only backends
// (vulkan), an eager primitive as a one-equation program.
class Dispatcher {
 public:
  virtual ~Dispatcher() = default;
  // Validates (abstract_eval, operands on one backend), then runs: control primitives through
  // apply_control, others prepared on the operands' backend (the default one for nullary
  // primitives), or through apply_unprepared where the backend returns no executable.
  std::vector<Array> apply(Prim p, const std::vector<Array>& args, const PrimParams& params);

 protected:
  virtual std::vector<Array> apply_control(Prim p, const std::vector<Array>& args, const PrimParams& params);
  virtual std::vector<Array> apply_unprepared(const Op& op, const std::vector<Array>& args, Backend& be);
};
// The registered dispatcher (the default until one is set); set_dispatcher(nullptr) restores it.
Dispatcher& dispatcher();
void set_dispatcher(Dispatcher* d);

// One running transformation (a jvp, a jaxpr build, a vmap): Autodidax's MainTrace and Trace in
// one object. Levels grow with nesting; bind() sends a primitive to the highest-level main among
// its operands, which processes it (lifting lower-level operands) and returns its own tracers.
class MainTrace : public std::enable_shared_from_this<MainTrace> {
 public:
  virtual ~MainTrace() = default;
  virtual std::string_view kind() const = 0;
  virtual std::vector<Array> process(Prim p, const std::vector<Array>& args, const PrimParams& params) = 0;
  // The target the trace stages a program for (a jit builder's), or null.
  virtual const Target* target() const { return nullptr; }
  int level = 0;
  bool active = true;
};

// Pushes a main on this thread's trace stack for the scope's lifetime; on exit it is popped and
// deactivated (a tracer of it that escapes raises TracerError when used).
class MainScope {
 public:
  explicit MainScope(std::shared_ptr<MainTrace> m);
  ~MainScope();
  MainScope(const MainScope&) = delete;
  MainScope& operator=(const MainScope&) = delete;
  MainTrace& main() const { return *main_; }
  const std::shared_ptr<MainTrace>& ptr() const { return main_; }

 private:
  std::shared_ptr<MainTrace> main_;
};

int trace_depth();  // number of active mains on this thread
// The target of the innermost trace on this thread's stack that stages for one (the jit trace an
// equation is staged into, through the transformations nested in it), or null: a transformation
// that picks its formulation by the backend (associative_scan's reverse mode) reads it here.
const Target* staging_target();

// The dynamic trace (JAX's omnistaging): while a jit/make_jaxpr builder is dynamic, every
// primitive is staged into it, also those whose operands are all concrete, so constants built
// inside a traced function (np::ones, iota, weak scalars) become equations, not baked buffers.
// bind uses the higher of the dynamic trace and the operands' top trace.
class DynamicScope {
 public:
  explicit DynamicScope(MainTrace* m);
  ~DynamicScope();
  DynamicScope(const DynamicScope&) = delete;
  DynamicScope& operator=(const DynamicScope&) = delete;

 private:
  MainTrace* prev_;
};
MainTrace* dynamic_trace();

// The tracer of `m` inside x, or null when x is a lower-level value for m.
template <class T>
T* tracer_of(const Array& x, const MainTrace& m) {
  if (!x.is_tracer() || x.tracer()->main.get() != &m) return nullptr;
  return static_cast<T*>(x.tracer().get());
}

}  // namespace jx
