#pragma once
// Choosing a device: the backends by name, what each one is, and the default one (the public
// API; the Backend interface itself is core/backends/backend.h).
#include <cstdint>
#include <string>
#include <vector>

namespace jx {

class Backend;

struct BackendLimits {
  int max_buffers_per_kernel = 0;  // inputs + outputs one kernel may bind; 0 = unlimited
  bool float64 = true;
  // a kernel launch costs more than recomputing a few dozen operations per element (a GPU): jit
  // unrolls small sums and recomputes multi-use elementwise values in each consumer (a CPU
  // backend keeps them kernels of their own: there the recomputation costs more)
  bool launch_bound = false;
  // a reduction over at least this many elements per output binds one buffer more (vulkan
  // splits it over workgroups with a scratch buffer); 0 = never
  std::int64_t scratch_reduction_min = 0;
  // jit also lowers a vmapped scan's body before batching (ScanProgram::series), which the
  // backend may run once per series
  bool series_scans = false;
  // the backend runs an associative scan's combines on several threads at once (native with 4
  // or more): reverse mode keeps the scan associative (the pair scan and its transpose, about 2x
  // the combine work) instead of linearizing a sequential fold
  bool parallel_assoc_scans = false;
  // float32 sums of 3 to this many terms accumulate in float on this backend (its reductions:
  // core/backends/cstyle.h, short_f32_sum), so jit's unrolled small sums do too; 0 = in double
  // where float64 is available, as the oracle
  std::int64_t f32_sum_max_terms = 0;
  // an associative scan may compute leaves from elementwise kernels in its first level
  // (AssocProgram::leaf_kernels): jit offers the kernels that only the scan reads
  bool scan_leaf_kernels = false;
};

struct DeviceInfo {
  std::string backend;  // "cpu"
  std::string device;   // human-readable device description
  bool available = false;
  std::string reason;  // why not available
  BackendLimits limits;
};

// Registry. Backends live for the whole process (never destroyed, so handles released during
// static destruction stay valid). The default comes from JX_DEVICE, else "cpu".
Backend& backend(const std::string& name);  // throws BackendError for unknown/unavailable
std::vector<std::string> backend_names();
std::vector<DeviceInfo> devices();                // every registered backend, usable or not
bool backend_available(const std::string& name);  // registered and usable (false for unknown)
Backend& default_backend();
void default_device(const std::string& name);  // throws BackendError; leaves the default unchanged
// RAII: makes `name` the default backend for the scope, restoring the previous one after.
class DefaultDeviceScope {
 public:
  explicit DefaultDeviceScope(const std::string& name);
  ~DefaultDeviceScope();
  DefaultDeviceScope(const DefaultDeviceScope&) = delete;
  DefaultDeviceScope& operator=(const DefaultDeviceScope&) = delete;

 private:
  Backend* prev_;
};

}  // namespace jx
