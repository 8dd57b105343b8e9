#pragma once
// Replay policy: runtime switches that re-create documented defects of the JS runtime, each in
// the smallest way, so a scenario can show the failure under its replay profile and its absence
// under `current`. All off by default; `current` is the default policy. Every switch takes part
// in compile-cache keys, so programs compiled under one policy are never reused under another.
#include <string>
#include <vector>

namespace jx::replay {

struct Policy {
  // jit fuses without the backend's buffer budget: a WebGPU pipeline may need more than 8
  // storage buffers ("Too many buffers (N) for WebGPU pipeline (max: 8)").
  bool ignore_buffer_budget = false;
  // concatenate's transpose rejects constant operands ("Nonlinear operation in backward pass
  // for concatenate") instead of giving them no cotangent.
  bool strict_concat_transpose = false;
  // AD residuals borrow the user's handles instead of owning references: a handle the user
  // disposes after the forward pass is gone when the backward pass reads it ("Referenced
  // tracer Array:float32[1] has been disposed").
  bool borrowed_residuals = false;
  // The jit cache is keyed by closure identity and never evicts; the host allocator never
  // returns memory: fresh closures per call grow the cache and the RSS without bound.
  bool identity_keyed_unbounded_cache = false;
  // Vulkan scans whose body has dependencies between its own kernels are not fused into one
  // workgroup (nor preencoded): they run as a host loop, dispatches linear in the length.
  bool no_workgroup_scan_fusion = false;

  // The switches of the JS runtime's autodiff defects: each shows in the operations of
  // associative_scan's odd/even recursion, which that runtime differentiates (as JAX does), so
  // under them reverse mode goes through the recursion too (core/transform/assoc_scan.cc).
  bool models_recursive_assoc_grad() const {
    return ignore_buffer_budget || strict_concat_transpose || borrowed_residuals;
  }

  bool operator==(const Policy&) const = default;
  std::string key() const;                    // "" for current; else the switches that are on
  std::vector<std::string> switches() const;  // names of the switches that are on
};

const Policy& policy();  // the policy in effect (process-wide)

// RAII: sets the policy for the scope, restoring the previous one after.
class Scope {
 public:
  explicit Scope(const Policy& p);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Policy prev_;
};

// Named profiles: "current" and one per documented defect (see scenarios/README.md).
// Historical profiles (v0.7.1 ... v0.7.4) model releases of the JS runtime as switch sets.
struct Profile {
  std::string name, description;
  Policy policy;
  bool historical = false;
};
const std::vector<Profile>& profiles();
const Profile& profile(const std::string& name);                 // throws Error naming the known profiles
std::vector<std::string> switch_names();                         // every switch, documented order
Policy with_switch(Policy p, const std::string& name, bool on);  // throws Error for an unknown name

}  // namespace jx::replay
