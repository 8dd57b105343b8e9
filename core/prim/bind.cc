#include "core/prim/bind.h"

#include <fmt/format.h>

#include "core/backends/backend.h"
#include "core/instrument/instrument.h"
#include "core/prim/abstract_eval.h"
#include "core/trace/trace.h"

namespace jx {

namespace {
ControlImpl g_control = nullptr;
OpRunner g_op_runner = nullptr;
}  // namespace
void set_control_impl(ControlImpl f) { g_control = f; }
void set_op_runner(OpRunner f) { g_op_runner = f; }

std::vector<Array> eval_bind(Prim p, const std::vector<Array>& args, const Params& params) {
  if (prim_kind(p) == PrimKind::control) {
    if (!g_control) throw Error(fmt::format("{}: no control-flow implementation registered", prim_name(p)));
    for (const Array& a : args) a.aval();
    return g_control(p, args, params);
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
  if (!exe) {
    if (!g_op_runner)
      throw BackendError(fmt::format("{}: the {} backend runs only compiled programs and no JIT is linked",
                                     prim_name(p), be->info().backend));
    return g_op_runner(op, args, *be);
  }
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

std::vector<Array> bind(Prim p, const std::vector<Array>& args, const Params& params) {
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

Array bind1(Prim p, const std::vector<Array>& args, const Params& params) {
  auto out = bind(p, args, params);
  return std::move(out.front());
}

Array device_put(const Array& x, const std::string& name) {
  Backend& to = backend(name);
  if (&x.backend() == &to) return x;
  return array_from_bytes(x.raw_bytes(), x.aval(), &to);
}

Array array_from_bytes(std::span<const std::byte> bytes, const AVal& aval, Backend* on) {
  if (bytes.size() != aval.bytes())
    throw ShapeError(fmt::format("array: {} bytes given for {} ({} bytes)", bytes.size(), aval.str(), aval.bytes()));
  Backend& be = on ? *on : default_backend();
  Array a(&be, be.malloc(aval), aval);
  be.write(a.slot(), bytes);
  return a;
}

}  // namespace jx
