#include "core/trace/trace.h"

#include <algorithm>
#include <atomic>
#include <fmt/format.h>

#include "core/backends/backend.h"
#include "core/instrument/instrument.h"
#include "core/prim/abstract_eval.h"

namespace jx {
namespace {
thread_local std::vector<MainTrace*> g_stack;
}

MainScope::MainScope(std::shared_ptr<MainTrace> m) : main_(std::move(m)) {
  main_->level = static_cast<int>(g_stack.size());
  main_->active = true;
  g_stack.push_back(main_.get());
}

MainScope::~MainScope() {
  main_->active = false;
  auto it = std::find(g_stack.begin(), g_stack.end(), main_.get());
  if (it != g_stack.end()) g_stack.erase(it);
}

int trace_depth() { return static_cast<int>(g_stack.size()); }

const Target* staging_target() {
  for (auto it = g_stack.rbegin(); it != g_stack.rend(); ++it)
    if (const Target* t = (*it)->target()) return t;
  return nullptr;
}

namespace {
thread_local MainTrace* g_dynamic = nullptr;
}
DynamicScope::DynamicScope(MainTrace* m) : prev_(g_dynamic) { g_dynamic = m; }
DynamicScope::~DynamicScope() { g_dynamic = prev_; }
MainTrace* dynamic_trace() { return g_dynamic && g_dynamic->active ? g_dynamic : nullptr; }

std::vector<Array> bind(Prim p, const std::vector<Array>& args, const PrimParams& params) {
  MainTrace* top = nullptr;
  for (const Array& a : args) {
    if (!a.is_tracer()) {
      a.aval();  // a disposed or empty handle throws here
      continue;
    }
    MainTrace* m = a.tracer()->main.get();
    if (!m->active)
      throw TracerError(
          fmt::format("{}: {} escaped from the {} transformation that created it (it is used after "
                      "that transformation returned)",
                      prim_name(p), a.str(), m->kind()));
    if (!top || m->level > top->level) top = m;
  }
  if (MainTrace* d = dynamic_trace(); d && (!top || d->level > top->level)) top = d;
  return top ? top->process(p, args, params) : eval_bind(p, args, params);
}

Array bind1(Prim p, const std::vector<Array>& args, const PrimParams& params) {
  auto out = bind(p, args, params);
  return std::move(out.front());
}

std::vector<Array> eval_bind(Prim p, const std::vector<Array>& args, const PrimParams& params) {
  return dispatcher().apply(p, args, params);
}

std::vector<Array> eval_jaxpr(const Jaxpr& j, const std::vector<Array>& consts, const std::vector<Array>& args) {
  if (args.size() != j.invars.size() || consts.size() != j.constvars.size())
    throw Error(fmt::format("eval_jaxpr: expected {} arguments and {} constants, got {} and {}", j.invars.size(),
                            j.constvars.size(), args.size(), consts.size()));
  std::vector<Array> env(j.avals.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!(args[i].aval() == j.avals[j.invars[i]]))
      throw ShapeError(fmt::format("eval_jaxpr: argument {} is {}, expected {}", i, args[i].aval().str(),
                                   j.avals[j.invars[i]].str()));
    env[j.invars[i]] = args[i];
  }
  for (std::size_t i = 0; i < consts.size(); ++i) env[j.constvars[i]] = consts[i];
  auto read = [&](const Atom& a) { return a.is_literal() ? literal_array(a) : env[a.var]; };
  for (const Eqn& e : j.eqns) {
    std::vector<Array> in;
    for (const Atom& a : e.in) in.push_back(read(a));
    auto out = bind(e.prim, in, e.params);
    for (std::size_t k = 0; k < out.size(); ++k) env[e.out[k]] = std::move(out[k]);
  }
  std::vector<Array> outs;
  for (const Atom& a : j.outs) outs.push_back(read(a));
  return outs;
}

std::vector<Array> Dispatcher::apply(Prim p, const std::vector<Array>& args, const PrimParams& params) {
  if (prim_kind(p) == PrimKind::control) {
    for (const Array& a : args) a.aval();
    return apply_control(p, args, params);
  }
  std::vector<AVal> in;
  std::vector<SlotId> in_slots;
  Backend* be = nullptr;
  for (const Array& a : args) {
    in.push_back(a.aval());  // throws UseAfterDispose for a disposed operand
    Backend& b = a.backend();
    if (be && be != &b)
      throw BackendError(fmt::format("{}: operands live on different backends ({} and {})", prim_name(p),
                                     be->info().backend, b.info().backend));
    be = &b;
    in_slots.push_back(a.slot());
  }
  if (!be) be = &default_backend();
  Op op{p, params, in, abstract_eval(p, in, params)};
  auto exe = be->prepare(op);
  if (!exe) return apply_unprepared(op, args, *be);
  std::vector<Array> out;
  std::vector<SlotId> out_slots;
  for (const AVal& av : op.out) {
    out_slots.push_back(be->malloc(av));
    out.emplace_back(be, out_slots.back(), av);  // adopts the malloc reference; freed if dispatch throws
  }
  be->dispatch(*exe, in_slots, out_slots);
  if (trace::has_subscribers())
    trace::emit({trace::EventKind::dispatch,
                 be->info().backend,
                 std::string(prim_name(p)),
                 static_cast<int>(in_slots.size() + out_slots.size()),
                 false,
                 0.0,
                 {}});
  return out;
}

std::vector<Array> Dispatcher::apply_control(Prim p, const std::vector<Array>&, const PrimParams&) {
  throw Error(fmt::format("{}: no control-flow implementation registered", prim_name(p)));
}

std::vector<Array> Dispatcher::apply_unprepared(const Op& op, const std::vector<Array>&, Backend& be) {
  throw BackendError(fmt::format("{}: the {} backend runs only compiled programs and no JIT is linked",
                                 prim_name(op.prim), be.info().backend));
}

namespace {
Dispatcher g_default_dispatcher;
std::atomic<Dispatcher*> g_dispatcher{nullptr};
}  // namespace

Dispatcher& dispatcher() {
  Dispatcher* d = g_dispatcher.load();
  return d ? *d : g_default_dispatcher;
}
void set_dispatcher(Dispatcher* d) { g_dispatcher.store(d); }

}  // namespace jx
