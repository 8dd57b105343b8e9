#include "core/jit/jit.h"

#include <chrono>
#include <fmt/format.h>

#include "core/backends/backend.h"
#include "core/jit/cache.h"

#include "core/instrument/instrument.h"
#include "core/jit/passes.h"
#include "core/transform/control_internal.h"
#include "core/prim/abstract_eval.h"
#include "core/replay/policy.h"
#include "core/trace/builder.h"
#include "core/trace/trace.h"

namespace jx {
struct JitCore::Entry {
  ClosedJaxpr jaxpr;
  std::string key;  // the compiled program's: jaxpr, target, constants' avals
  Target target;
  std::string deferred_error;  // replay borrowed_residuals: thrown after every run
  std::any out_tree;
  std::uint64_t last_use = 0;
};

namespace {

// Compiles a traced signature's program into the cache (a compile event; logs by debug level).
std::shared_ptr<const CompiledProgram> compile_entry(const JitCore::Entry& entry, const std::string& name) {
  const auto t0 = std::chrono::steady_clock::now();
  auto prog = compile(entry.jaxpr.jaxpr, entry.target);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  program_cache().put(entry.key, prog);
  const std::string& be = entry.target.backend->info().backend;
  trace::emit({trace::EventKind::compile, be, name, 0, false, ms, {}});
  if (debug_level() >= 1)
    debug_log(1, fmt::format("jit '{}': {} equations -> {} kernels, {} routines on {} (budget {}) in {:.3f} ms", name,
                             entry.jaxpr.jaxpr.eqns.size(), prog->program().kernels.size(),
                             prog->program().routines.size(), be, entry.target.budget, ms));
  if (debug_level() >= 3)
    for (const Kernel& k : prog->program().kernels) debug_log(3, k.str());
  if (debug_level() >= 4) debug_log(4, entry.jaxpr.str() + "\n" + prog->program().str());
  return prog;
}

thread_local int compile_only_depth = 0;

// CompileOnly's outputs: a fresh slot per output of the traced jaxpr, left as allocated.
std::vector<Array> unrun_outputs(const Jaxpr& j, Backend& be) {
  std::vector<Array> out;
  for (const Atom& a : j.outs) {
    const AVal av = j.aval_of(a);
    out.emplace_back(&be, be.malloc(av), av);
  }
  return out;
}

}  // namespace

CompileOnly::CompileOnly() { ++compile_only_depth; }
CompileOnly::~CompileOnly() { --compile_only_depth; }
bool CompileOnly::active() { return compile_only_depth > 0; }

std::vector<Array> JitCore::call(const std::string& signature, const std::vector<Array>& args, const FlatFn& fn,
                                 std::any& out_tree) {
  bool traced = dynamic_trace() != nullptr;
  for (const Array& a : args) traced = traced || a.is_tracer();
  if (traced) return fn(args);
  const Target target = Target::for_jit(args.empty() ? default_backend() : args[0].backend(), o_.max_buffers);
  const std::string sig = fmt::format("{}|{}", signature, target.key());
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(sig); it != entries_.end()) {
      entry = it->second;
      entry->last_use = ++tick_;
      out_tree = entry->out_tree;
    }
  }
  if (!entry) entry = trace_entry(sig, args, fn, Entry{{}, {}, target, {}, {}, 0}, out_tree);
  auto prog = program_cache().get(entry->key);
  if (!prog) prog = compile_entry(*entry, o_.name);
  if (CompileOnly::active()) return unrun_outputs(entry->jaxpr.jaxpr, *entry->target.backend);
  std::vector<Array> in = args;
  in.insert(in.end(), entry->jaxpr.consts.begin(), entry->jaxpr.consts.end());
  std::vector<Array> out = prog->run(in);
  if (!entry->deferred_error.empty()) {
    for (const Array& o : out) (void)o.raw_bytes();  // the computation completes, then the error
    throw UseAfterDispose(entry->deferred_error);
  }
  return out;
}

// Traces fn for the target on the arguments' avals, simplifies, and keeps the trace (the least
// recently used goes past max_traces).
std::shared_ptr<JitCore::Entry> JitCore::trace_entry(const std::string& sig, const std::vector<Array>& args,
                                                     const FlatFn& fn, Entry e, const std::any& out_tree) {
  const Target& target = e.target;
  std::vector<AVal> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  (void)take_deferred_disposal_error();
  ClosedJaxpr cj = make_jaxpr_flat(fn, avals, &target);
  std::string deferred = take_deferred_disposal_error();
  cj.jaxpr = simplify(cj.jaxpr);
  const std::string& be = target.backend->info().backend;
  for (Array& c : cj.consts) c = device_put(c, be);  // captured constants follow the program
  std::string key = fmt::format("{}|{}|consts:", cj.jaxpr.str(), target.key());
  // replay: keyed by this jit object's identity, so a fresh closure never hits the cache
  if (target.policy.identity_keyed_unbounded_cache) key += fmt::format("|closure:{}", static_cast<const void*>(this));
  for (const Array& c : cj.consts) key += c.aval().str() + ",";
  e.jaxpr = std::move(cj);
  e.key = std::move(key);
  e.deferred_error = std::move(deferred);
  e.out_tree = out_tree;  // set by fn while it was traced
  auto entry = std::make_shared<Entry>(std::move(e));
  std::lock_guard lock(mu_);
  entry->last_use = ++tick_;
  entries_[sig] = entry;
  while (entries_.size() > std::max<std::size_t>(o_.max_traces, 1)) {  // least recently used trace goes
    auto lru = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->second->last_use < lru->second->last_use) lru = it;
    entries_.erase(lru);
  }
  return entry;
}

std::size_t JitCore::traced_signatures() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

MemoryStats memory_stats() {
  MemoryStats s;
  for (const auto& name : backend_names()) {
    BackendMemory m;
    try {
      m = backend(name).memory();
    } catch (const BackendError&) {
      continue;  // unavailable backends hold nothing
    }
    s.live_slots += m.live_slots;
    s.live_bytes += m.live_bytes;
    s.peak_bytes += m.peak_bytes;
    s.pooled_bytes += m.pooled_bytes;
    s.compiled_kernels += m.compiled_kernels;
    s.pipelines += m.pipelines;
  }
  program_cache().stats(s);
  return s;
}

void set_cache_capacity(std::size_t n) { program_cache().set_capacity(n); }
std::size_t cache_capacity() { return program_cache().capacity(); }

void shutdown() {
  clear_program_caches();  // compiled programs drop their executables (pipelines) first
  shutdown_backends();
}

void clear_caches() {
  clear_program_caches();
  for (const auto& name : backend_names()) {
    try {
      backend(name).clear_caches();
    } catch (const BackendError&) {}
  }
}

}  // namespace jx
