#include "core/jit/jit.h"

#include <chrono>
#include <fmt/format.h>
#include <list>
#include <unordered_map>

#include "core/instrument/instrument.h"
#include "core/ir/passes.h"
#include "core/lax/control.h"
#include "core/prim/abstract_eval.h"
#include "core/replay/policy.h"
#include "core/trace/builder.h"
#include "core/trace/trace.h"

namespace jx {
namespace {

class ProgramCache {
 public:
  std::shared_ptr<const CompiledProgram> get(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) {
      ++misses_;
      return nullptr;
    }
    ++hits_;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  void put(const std::string& key, std::shared_ptr<const CompiledProgram> p) {
    std::lock_guard lock(mu_);
    if (auto it = map_.find(key); it != map_.end()) lru_.erase(it->second);
    lru_.emplace_front(key, std::move(p));
    map_[key] = lru_.begin();
    evict();
  }
  void set_capacity(std::size_t n) {
    std::lock_guard lock(mu_);
    cap_ = n;
    evict();
  }
  std::size_t capacity() const {
    std::lock_guard lock(mu_);
    return cap_;
  }
  void clear() {
    std::lock_guard lock(mu_);
    lru_.clear();
    map_.clear();
  }
  void stats(MemoryStats& s) const {
    std::lock_guard lock(mu_);
    s.jit_cache_entries = map_.size();
    s.cache_hits = hits_;
    s.cache_misses = misses_;
    s.cache_evictions = evictions_;
  }

 private:
  void evict() {
    if (replay::policy().identity_keyed_unbounded_cache) return;  // replay: never evicts
    while (map_.size() > cap_) {
      trace::emit({trace::EventKind::cache_evict, "", lru_.back().first.substr(0, 60), 0, false, 0.0, {}});
      map_.erase(lru_.back().first);
      lru_.pop_back();
      ++evictions_;
    }
  }
  using Item = std::pair<std::string, std::shared_ptr<const CompiledProgram>>;
  mutable std::mutex mu_;
  std::list<Item> lru_;
  std::unordered_map<std::string, std::list<Item>::iterator> map_;
  std::size_t cap_ = 256, hits_ = 0, misses_ = 0, evictions_ = 0;
};

ProgramCache& cache() {
  static ProgramCache* c = new ProgramCache();  // immortal, like the backends
  return *c;
}

int effective_budget(const JitOptions& o, const Backend& be) {
  const int b = be.info().limits.max_buffers_per_kernel;
  if (o.max_buffers <= 0) return b;
  return b <= 0 ? o.max_buffers : std::min(b, o.max_buffers);
}

// { lambda in...; let out... = prim[params] in... in (out...) }
Jaxpr one_equation(Prim prim, const Params& params, const std::vector<AVal>& in, const std::vector<AVal>& out) {
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
std::optional<std::vector<Array>> run_scan_compiled(Prim prim, const Params& p, const std::vector<Array>& ops,
                                                    std::string& why) {
  Backend& be = ops.empty() ? default_backend() : ops[0].backend();
  std::vector<AVal> in;
  for (const Array& a : ops) in.push_back(a.aval());
  const Jaxpr j = one_equation(prim, p, in, abstract_eval(prim, in, p));
  const int budget = be.info().limits.max_buffers_per_kernel;
  const std::string key =
      fmt::format("eager-scan|{}|{}|{}|{}", j.str(), be.info().backend, budget, replay::policy().key());
  auto prog = cache().get(key);
  if (!prog) {
    prog = std::make_shared<const CompiledProgram>(lower(j, lower_options(be, budget)), be, budget);
    cache().put(key, prog);
  }
  // The scan's own host loop is the eager fallback: use the program only for a compiled loop.
  // (An associative scan's program always runs: without a backend routine it is decomposed.)
  if (std::string reason = prog->host_loop_reason(); prim == Prim::scan && !reason.empty()) {
    why = reason;
    return std::nullopt;
  }
  return prog->run(ops);
}

const bool g_scan_compiler_registered = [] {
  set_scan_compiler(&run_scan_compiled);
  return true;
}();

struct OpPrograms {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<const CompiledProgram>> progs;
};
OpPrograms& op_programs() {
  static OpPrograms* p = new OpPrograms();  // immortal, like the program cache
  return *p;
}

// Eager primitives on kernel-only backends (vulkan): a one-equation program, lowered under the
// backend's buffer budget and kept in a small cache of its own (eager ops never evict jit
// programs from the LRU).
std::vector<Array> run_op_program(const Op& op, const std::vector<Array>& args, Backend& be) {
  const Jaxpr j = one_equation(op.prim, op.params, op.in, op.out);
  const int budget = be.info().limits.max_buffers_per_kernel;
  const std::string key = fmt::format("{}|{}|{}", j.str(), be.info().backend, budget);
  OpPrograms& ops = op_programs();
  std::shared_ptr<const CompiledProgram> prog;
  {
    std::lock_guard lock(ops.mu);
    if (auto it = ops.progs.find(key); it != ops.progs.end()) prog = it->second;
  }
  if (!prog) {
    prog = std::make_shared<const CompiledProgram>(lower(j, lower_options(be, budget)), be, budget);
    std::lock_guard lock(ops.mu);
    if (ops.progs.size() >= 4096) ops.progs.clear();
    ops.progs.emplace(key, prog);
  }
  return prog->run(args);
}

void clear_program_caches() {
  cache().clear();
  OpPrograms& ops = op_programs();
  std::lock_guard lock(ops.mu);
  ops.progs.clear();
}

const bool g_op_runner_registered = [] {
  set_op_runner(&run_op_program);
  set_program_cache_clearer(&clear_program_caches);
  return true;
}();

}  // namespace

std::vector<Array> JitCore::call(const std::string& signature, const std::vector<Array>& args, const FlatFn& fn,
                                 std::any& out_tree) {
  bool traced = dynamic_trace() != nullptr;
  for (const Array& a : args) traced = traced || a.is_tracer();
  if (traced) return fn(args);
  Backend& be = args.empty() ? default_backend() : args[0].backend();
  const replay::Policy& rp = replay::policy();
  const int budget = rp.ignore_buffer_budget ? 0 : effective_budget(o_, be);
  const std::string sig = fmt::format("{}|{}|{}|{}", signature, be.info().backend, budget, rp.key());
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(sig); it != entries_.end()) {
      entry = it->second;
      entry->last_use = ++tick_;
      out_tree = entry->out_tree;
    }
  }
  if (!entry) {
    std::vector<AVal> avals;
    for (const Array& a : args) avals.push_back(a.aval());
    (void)take_deferred_disposal_error();
    ClosedJaxpr cj = [&] {
      StagingScope staging(be, budget);
      return make_jaxpr_flat(fn, avals);
    }();
    std::string deferred = take_deferred_disposal_error();
    cj.jaxpr = simplify(cj.jaxpr);
    for (Array& c : cj.consts) c = device_put(c, be.info().backend);  // captured constants follow the program
    std::string key = fmt::format("{}|{}|{}|{}|consts:", cj.jaxpr.str(), be.info().backend, budget, rp.key());
    // replay: keyed by this jit object's identity, so a fresh closure never hits the cache
    if (rp.identity_keyed_unbounded_cache) key += fmt::format("|closure:{}", static_cast<const void*>(this));
    for (const Array& c : cj.consts) key += c.aval().str() + ",";
    entry = std::make_shared<Entry>(Entry{std::move(cj), std::move(key), budget, std::move(deferred), out_tree, 0});
    std::lock_guard lock(mu_);
    entry->last_use = ++tick_;
    entries_[sig] = entry;
    while (entries_.size() > std::max<std::size_t>(o_.max_traces, 1)) {  // least recently used trace goes
      auto lru = entries_.begin();
      for (auto it = entries_.begin(); it != entries_.end(); ++it)
        if (it->second->last_use < lru->second->last_use) lru = it;
      entries_.erase(lru);
    }
  }
  auto prog = cache().get(entry->key);
  if (!prog) {
    const auto t0 = std::chrono::steady_clock::now();
    Program p = lower(entry->jaxpr.jaxpr, [&] {
      LowerOptions lo = lower_options(be, entry->max_buffers);
      lo.inline_multi_use = rp.ignore_buffer_budget;
      return lo;
    }());
    auto compiled = std::make_shared<const CompiledProgram>(std::move(p), be, entry->max_buffers);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    cache().put(entry->key, compiled);
    prog = compiled;
    trace::emit({trace::EventKind::compile, be.info().backend, o_.name, 0, false, ms, {}});
    if (debug_level() >= 1)
      debug_log(1, fmt::format("jit '{}': {} equations -> {} kernels, {} routines on {} (budget {}) in {:.3f} ms",
                               o_.name, entry->jaxpr.jaxpr.eqns.size(), prog->program().kernels.size(),
                               prog->program().routines.size(), be.info().backend, budget, ms));
    if (debug_level() >= 3)
      for (const Kernel& k : prog->program().kernels) debug_log(3, k.str());
    if (debug_level() >= 4) debug_log(4, entry->jaxpr.str() + "\n" + prog->program().str());
  }
  std::vector<Array> in = args;
  in.insert(in.end(), entry->jaxpr.consts.begin(), entry->jaxpr.consts.end());
  std::vector<Array> out = prog->run(in);
  if (!entry->deferred_error.empty()) {
    for (const Array& o : out) (void)o.raw_bytes();  // the computation completes, then the error
    throw UseAfterDispose(entry->deferred_error);
  }
  return out;
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
  cache().stats(s);
  return s;
}

void set_cache_capacity(std::size_t n) { cache().set_capacity(n); }
std::size_t cache_capacity() { return cache().capacity(); }

void clear_caches() {
  clear_program_caches();
  for (const auto& name : backend_names()) {
    try {
      backend(name).clear_caches();
    } catch (const BackendError&) {}
  }
}

}  // namespace jx
