#pragma once
#include <any>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/trace/make_jaxpr.h"

namespace jx {

struct JitOptions {
  std::string name = "jit";
  // Buffers one fused kernel may bind (inputs + output); 0: the backend's limit. The
  // stricter of the two applies.
  int max_buffers = 0;
  // Traces kept per jit object (least recently used dropped first): a function called with ever
  // new shapes holds at most this many jaxprs and their captured constants.
  std::size_t max_traces = 64;
};

// The flat core of jx::jit. Per input signature it traces once and keeps the simplified jaxpr
// and its captured constants (released with this object). Compiled programs live in a global
// LRU cache keyed by the jaxpr's structure (equations, literals, avals), the backend and the
// budget, never by closure identity: fresh closures with the same body share one entry.
class JitCore {
 public:
  explicit JitCore(JitOptions o) : o_(std::move(o)) {}
  // Runs fn compiled, or inline when called under a transformation (tracer arguments or a
  // dynamic trace): nested jit flattens into the enclosing trace. `out_tree` is the caller's
  // description of the outputs: fn sets it when it runs (tracing); it is kept with the trace and
  // set from there on calls that reuse it.
  std::vector<Array> call(const std::string& signature, const std::vector<Array>& args, const FlatFn& fn,
                          std::any& out_tree);
  std::size_t traced_signatures() const;
  struct Entry;  // one traced signature (jit.cc)

 private:
  // traces a signature (entry: its target; jit.cc) and keeps it with the out_tree fn set
  std::shared_ptr<Entry> trace_entry(const std::string& sig, const std::vector<Array>& args, const FlatFn& fn,
                                     Entry entry, const std::any& out_tree);
  JitOptions o_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
  std::uint64_t tick_ = 0;
};

// While a CompileOnly lives on this thread, jit calls trace and compile as a first call would
// but run nothing: each output is a fresh array of the traced shape and dtype whose contents are
// unspecified. Ahead-of-time warming (a thread compiles the programs a later call will run, as
// jax.jit(f).lower(...).compile() does); a call under a transformation is traced as always.
class CompileOnly {
 public:
  CompileOnly();
  ~CompileOnly();
  CompileOnly(const CompileOnly&) = delete;
  CompileOnly& operator=(const CompileOnly&) = delete;
  static bool active();  // on this thread
};

struct MemoryStats {
  std::size_t live_slots = 0, live_bytes = 0, peak_bytes = 0, pooled_bytes = 0;
  std::size_t jit_cache_entries = 0, compiled_kernels = 0, pipelines = 0;
  std::size_t cache_hits = 0, cache_misses = 0, cache_evictions = 0;
};

MemoryStats memory_stats();
void set_cache_capacity(std::size_t n);  // programs kept in the LRU (default 256); evicts down to n
std::size_t cache_capacity();
void clear_caches();  // jit programs and every backend's compiled kernels

// Drops compiled programs (so they release their executables), then shuts down every started
// backend (vulkan: submits, waits and destroys every Vulkan object, the instance included; the
// backend is unavailable afterwards and arrays still on it only drop their references). Call it
// (or hold a ShutdownAtExit) before main returns: without it the vulkan exit handler submits and
// destroys nothing and leaves the device to the OS (a driver may have freed its own static state
// by then, as lavapipe's LLVM does, and work on the driver's threads would race the exit handlers).
void shutdown();
// shutdown() when it leaves scope: the first line of main().
struct ShutdownAtExit {
  ShutdownAtExit() = default;
  ShutdownAtExit(const ShutdownAtExit&) = delete;
  ShutdownAtExit& operator=(const ShutdownAtExit&) = delete;
  ~ShutdownAtExit() { shutdown(); }
};

}  // namespace jx
