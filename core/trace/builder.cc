#include "core/trace/builder.h"

#include <utility>

#include "core/backends/backend.h"
#include "core/prim/abstract_eval.h"

namespace jx {
namespace {
struct BuilderTracer final : Tracer {
  BuilderTracer(std::shared_ptr<MainTrace> m, AVal a, int v) : Tracer(std::move(m), std::move(a)), var(v) {}
  int var;
};
// replay borrowed_residuals: values the jvp trace saw as primals of its tracers, by identity
// (slot id or tracer), with the liveness of the tracer handle they came from. The primal is
// held until clear_borrows() so that its identity is not reused by another value meanwhile.
struct Borrow {
  Array primal;
  std::shared_ptr<bool> alive;
};
thread_local std::map<std::pair<int, std::uintptr_t>, Borrow> g_borrows;
std::pair<int, std::uintptr_t> identity(const Array& x) {
  return x.is_tracer() ? std::pair<int, std::uintptr_t>{1, reinterpret_cast<std::uintptr_t>(x.tracer().get())}
                       : std::pair<int, std::uintptr_t>{0, static_cast<std::uintptr_t>(x.slot())};
}
}  // namespace

void note_borrow(const Array& primal, const std::shared_ptr<Tracer>& from) {
  if (!from->alive) from->alive = std::make_shared<bool>(true);
  g_borrows[identity(primal)] = {primal, from->alive};
}
std::shared_ptr<bool> borrowed_liveness(const Array& x) {
  if (g_borrows.empty()) return nullptr;
  auto it = g_borrows.find(identity(x));
  return it == g_borrows.end() ? nullptr : it->second.alive;
}
void clear_borrows() { g_borrows.clear(); }

namespace {
thread_local std::string g_deferred_disposal;
}
void defer_disposal_error(std::string message) {
  if (g_deferred_disposal.empty()) g_deferred_disposal = std::move(message);
}
std::string take_deferred_disposal_error() { return std::exchange(g_deferred_disposal, {}); }

Array JaxprBuilder::new_arg(const AVal& aval) {
  const int v = jaxpr_.new_var(aval);
  jaxpr_.invars.push_back(v);
  return Array(std::make_shared<BuilderTracer>(shared_from_this(), aval, v));
}

Atom JaxprBuilder::atom(const Array& x) {
  if (auto* t = tracer_of<BuilderTracer>(x, *this)) return {t->var};
  if (!x.is_tracer() && x.ndim() == 0) return Atom::lit(x.item<double>(), x.dtype());
  const std::pair<int, std::uintptr_t> key =
      x.is_tracer() ? std::pair<int, std::uintptr_t>{1, reinterpret_cast<std::uintptr_t>(x.tracer().get())}
                    : std::pair<int, std::uintptr_t>{0, static_cast<std::uintptr_t>(x.slot())};
  if (auto it = const_ids_.find(key); it != const_ids_.end()) return {it->second};
  const int v = jaxpr_.new_var(x.aval());
  jaxpr_.constvars.push_back(v);
  consts_.push_back(x);
  const_ids_[key] = v;
  return {v};
}

std::vector<Array> JaxprBuilder::process(Prim p, const std::vector<Array>& args, const PrimParams& params) {
  Eqn e{p, params, {}, {}};
  std::vector<AVal> in;
  for (const Array& a : args) {
    e.in.push_back(atom(a));
    in.push_back(a.aval());
  }
  std::vector<Array> out;
  for (const AVal& av : abstract_eval(p, in, params)) {
    e.out.push_back(jaxpr_.new_var(av));
    out.emplace_back(std::make_shared<BuilderTracer>(shared_from_this(), av, e.out.back()));
  }
  jaxpr_.eqns.push_back(std::move(e));
  return out;
}

ClosedJaxpr JaxprBuilder::finish(const std::vector<Array>& outs) {
  for (const Array& o : outs) jaxpr_.outs.push_back(atom(o));
  typecheck(jaxpr_);
  // replay borrowed_residuals: resolved now, when the whole jvp trace has been seen (a primal
  // output becomes borrowed only once a later equation consumes its tracer)
  std::vector<std::shared_ptr<bool>> borrowed;
  bool any = false;
  for (const Array& c : consts_) {
    borrowed.push_back(borrowed_liveness(c));
    any = any || borrowed.back();
  }
  ClosedJaxpr c{std::move(jaxpr_), std::move(consts_),
                any ? std::move(borrowed) : std::vector<std::shared_ptr<bool>>{}};
  jaxpr_ = {};
  consts_.clear();
  const_ids_.clear();
  return c;
}

ClosedJaxpr make_jaxpr_flat(const FlatFn& fn, const std::vector<AVal>& in) { return make_jaxpr_flat(fn, in, nullptr); }

ClosedJaxpr make_jaxpr_flat(const FlatFn& fn, const std::vector<AVal>& in, const Target* target) {
  auto builder = std::make_shared<JaxprBuilder>(target);
  MainScope scope(builder);
  DynamicScope stage_everything(builder.get());
  std::vector<Array> args;
  for (const AVal& a : in) args.push_back(builder->new_arg(a));
  return builder->finish(fn(args));
}

}  // namespace jx
