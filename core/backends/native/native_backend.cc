// The native backend: host memory from a size-class pool; every kernel of a jitted program is
// rendered to C, the program's uncached kernels compiled together into one shared object
// (cached in memory by kernel key and on disk by source hash) and called directly. Eager
// primitives run on the host implementations (compiling one shared object per eager op would
// cost far more than it saves).
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "core/base/env.h"
#include "core/base/hash.h"
#include "core/backends/cache_bound.h"
#include "core/backends/host_memory.h"
#include "core/backends/native/c_renderer.h"
#include "core/backends/native/compiler.h"
#include "core/backends/native/native_backend.h"
#include "core/instrument/instrument.h"

namespace jx {
namespace {

using KernelFn = void (*)(const void* const*, void* const*);

struct NativeKernel final : HostExecutable {
  std::shared_ptr<native::Library> lib;
  KernelFn fn;
  NativeKernel(std::shared_ptr<native::Library> l, KernelFn f) : lib(std::move(l)), fn(f) {}
  void run(std::span<const std::byte* const> in, std::span<std::byte* const> out) const override {
    fn(reinterpret_cast<const void* const*>(in.data()), reinterpret_cast<void* const*>(out.data()));
  }
};

class NativeBackend final : public HostBackend {
 public:
  NativeBackend() : HostBackend("native", true) {
    info_.backend = "native";
    const std::string v = native::compiler_version();
    info_.available = !v.empty();
    info_.device = v.empty() ? "generated C" : fmt::format("generated C compiled by {}", v);
    info_.reason = v.empty() ? "no working C compiler (install gcc or set JX_CC)" : "";
    info_.limits = {0, true};
    info_.limits.parallel_assoc_scans = native::openmp_threads() >= 4 && !assoc_off();
  }

  const DeviceInfo& info() const override { return info_; }

  BackendMemory memory() const override {
    BackendMemory m = mem_.stats();
    std::lock_guard lock(kmu_);
    m.compiled_kernels = kernels_.size() + scans_.size();
    return m;
  }

  void clear_caches() override {
    {
      std::lock_guard lock(kmu_);
      kernels_.clear();
      scans_.clear();
    }
    mem_.trim();
  }

  std::shared_ptr<Executable> prepare(const Op& op) override { return make_host_op_executable(op); }

  std::shared_ptr<Executable> prepare_kernel(const Kernel& k) override { return prepare_kernels({k})[0]; }

  // A program's kernels compile into one object: all of them (each once) when any is not loaded
  // yet, so the object, its source and its disk-cache name depend on the program alone, not on
  // which kernels other programs loaded before (programs compiled in another order, or on two
  // threads, would otherwise group their kernels differently and compile new objects).
  std::vector<std::shared_ptr<Executable>> prepare_kernels(const std::vector<Kernel>& ks) override {
    std::lock_guard lock(kmu_);
    std::vector<std::string> keys;
    bool missing = false;
    for (const Kernel& k : ks) {
      keys.push_back(k.key());
      missing = missing || !kernels_.count(keys.back());
    }
    std::string source;
    std::vector<std::pair<std::string, std::string>> pending;  // key, symbol
    for (std::size_t i = 0; missing && i < ks.size(); ++i) {
      if (std::any_of(pending.begin(), pending.end(), [&](auto& t) { return t.first == keys[i]; })) continue;
      const std::string sym = fmt::format("jx_k{:016x}", fnv1a(keys[i]));
      source += native::render_kernel(ks[i], sym, false, true) + "\n";
      pending.emplace_back(keys[i], sym);
    }
    if (!pending.empty()) {
      source = native::c_prelude() + "\n" + source;
      debug_log(2, "native source:\n" + source);
      auto r = native::compile(source);
      trace::emit({trace::EventKind::compile, "native", "cc", 0, false, r.ms, r.from_disk ? "disk cache" : r.path});
      debug_log(1, fmt::format("native: {} kernels {} in {:.1f} ms ({})", pending.size(),
                               r.from_disk ? "loaded" : "compiled", r.ms, r.path));
      trim_unused(kernels_);
      for (auto& [key, sym] : pending)  // a kernel loaded before keeps its executable
        if (!kernels_.count(key))
          kernels_[key] = std::make_shared<NativeKernel>(r.lib, reinterpret_cast<KernelFn>(r.lib->symbol(sym)));
    }
    std::vector<std::shared_ptr<Executable>> out;
    for (auto& k : keys) out.push_back(kernels_.at(k));
    return out;
  }

  ScanPlan plan_scan(const ScanProgram& sp, const Target&) override {
    return compiled(sp.key(), "jx_s", [&](const std::string& sym) {
      bool unrolled = false;
      int first_term = 0;
      std::string source = native::render_scan(sp, sym, &unrolled, &first_term);
      std::string why =
          unrolled ? "native compiles the whole loop into one function, its body unrolled (carries and temporaries "
                     "in registers)"
                   : "native compiles the whole loop into one function";
      if (first_term > 0)
        why += fmt::format("; {} sums start from their first term (their signs of zero cannot matter)", first_term);
      return std::make_pair(std::move(source), std::move(why));
    });
  }

  // The blocked scan on OpenMP threads (c_assoc.cc) when there are threads and positions enough
  // for two chunks of kAssocMinPerChunk; else the runtime's fold (JX_NATIVE_ASSOC=0: always).
  ScanPlan plan_associative_scan(const AssocProgram& ap, const Target&) override {
    const std::int64_t n = ap.operands.size() > static_cast<std::size_t>(ap.num_consts)
                               ? ap.operands[static_cast<std::size_t>(ap.num_consts)].shape[ap.axis]
                               : 0;
    const std::int64_t chunks = std::min(native::kAssocChunks, n / native::kAssocMinPerChunk);
    if (assoc_off()) return {ScanPath::fallback, "JX_NATIVE_ASSOC=0", nullptr};
    if (chunks < 2) return {ScanPath::fallback, fmt::format("native scans {} positions in one chunk", n), nullptr};
    if (native::openmp_flag().empty())
      return {ScanPath::fallback, "native has no OpenMP threads for the blocked scan", nullptr};
    return compiled(ap.key(), "jx_a", [&](const std::string& sym) {
      bool unrolled = false;
      const bool flush = !env_is_zero("JX_NATIVE_FTZ");
      std::string source = native::render_assoc_scan(ap, sym, chunks, flush, &unrolled);
      return std::make_pair(
          std::move(source),
          fmt::format("native scans {} chunks of {} positions on threads, then their prefixes (the combine{}{})",
                      chunks, (n + chunks - 1) / chunks, unrolled ? " unrolled" : "",
                      flush ? "; subnormals flushed to zero" : ""));
    });
  }

 private:
  static bool assoc_off() { return env_is_zero("JX_NATIVE_ASSOC"); }
  // The function `render(symbol)` gives (C source, why), compiled once per key; a BackendError
  // while rendering is the plan's fallback reason.
  template <class Render>
  ScanPlan compiled(const std::string& key, const char* prefix, Render render) {
    std::lock_guard lock(kmu_);
    if (auto it = scans_.find(key); it != scans_.end()) return {ScanPath::fused, it->second.why, it->second.exe};
    const std::string sym = fmt::format("{}{:016x}", prefix, fnv1a(key));
    std::pair<std::string, std::string> rendered;
    try {
      rendered = render(sym);
    } catch (const BackendError& e) {
      return {ScanPath::fallback, e.what(), nullptr};
    }
    const std::string source = native::c_prelude() + rendered.first;
    debug_log(2, "native scan source:\n" + source);
    auto r = native::compile(source);
    trace::emit({trace::EventKind::compile, "native", "cc", 0, false, r.ms, r.from_disk ? "disk cache" : r.path});
    auto exe = std::make_shared<NativeKernel>(r.lib, reinterpret_cast<KernelFn>(r.lib->symbol(sym)));
    trim_unused(
        scans_, [](const CompiledScan& c) -> const auto& { return c.exe; });
    scans_[key] = CompiledScan{exe, rendered.second};
    return {ScanPath::fused, rendered.second, exe};
  }

  DeviceInfo info_;
  mutable std::mutex kmu_;
  struct CompiledScan {
    std::shared_ptr<NativeKernel> exe;
    std::string why;
  };
  std::unordered_map<std::string, std::shared_ptr<NativeKernel>> kernels_;
  std::unordered_map<std::string, CompiledScan> scans_;
};

}  // namespace

std::unique_ptr<Backend> make_native_backend() { return std::make_unique<NativeBackend>(); }

}  // namespace jx
