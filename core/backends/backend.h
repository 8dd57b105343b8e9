#pragma once
#include <cstddef>
#include <fmt/format.h>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/backends/devices.h"
#include "core/backends/target.h"
#include "core/base/scan_path.h"
#include "core/kernel/program.h"
#include "core/prim/prim.h"

namespace jx {

// Slot ids are never reused within a process: a leak check can compare id sets across time.
using SlotId = std::uint64_t;
SlotId new_slot_id();  // process-wide, shared by every backend

struct SlotInfo {
  SlotId id;
  std::size_t bytes;
  AVal tag;  // the aval the slot was allocated for (diagnostics only)
};

class Executable {
 public:
  virtual ~Executable() = default;
  // Storage buffers one dispatch of it binds, when that is not its operand count (packed scans).
  virtual int bound_buffers(int operands) const { return operands; }
};

// A backend's plan for a scan: the path it takes (fused or preencoded with an executable that
// runs the whole scan; fallback without one: the runtime runs a host loop, or decomposes an
// associative scan) and why. require_path is checked against `path` where the plan is made.
struct ScanPlan {
  ScanPath path = ScanPath::fallback;
  std::string reason;
  std::shared_ptr<Executable> exe;  // null for fallback
};

struct BackendMemory {
  std::size_t live_slots = 0, live_bytes = 0, peak_bytes = 0, pooled_bytes = 0;
  std::size_t compiled_kernels = 0, pipelines = 0;
};

// A backend owns slots (refcounted device buffers) and runs prepared ops on them. Backends
// see only ops/kernels and slots, never Arrays or traces.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const DeviceInfo& info() const = 0;

  virtual SlotId malloc(const AVal& tag) = 0;  // refcount 1, contents unspecified
  virtual void incref(SlotId) = 0;
  virtual void decref(SlotId) = 0;  // frees at zero
  virtual void read(SlotId, std::span<std::byte> dst) = 0;
  virtual void write(SlotId, std::span<const std::byte> src) = 0;
  // The slot's bytes in this process's memory, valid while the slot lives and no kernel writes
  // it, for a backend whose slots are host memory (cpu, native); nullptr for a device backend,
  // whose data read() copies out.
  virtual const std::byte* host_data(SlotId) { return nullptr; }
  virtual std::size_t slot_count() const = 0;
  virtual std::size_t bytes() const = 0;
  virtual std::vector<SlotInfo> live_slots() const = 0;

  virtual BackendMemory memory() const = 0;
  virtual void clear_caches() = 0;  // compiled kernels/pipelines not in use

  // A single primitive application (eager ops, routines), or a fused kernel of the kernel IR.
  // Compiled kernels are cached by Kernel::key(); the executable stays valid while held.
  virtual std::shared_ptr<Executable> prepare(const Op& op) = 0;
  virtual std::shared_ptr<Executable> prepare_kernel(const Kernel& k) = 0;
  // Several kernels at once (a program's): backends that compile batch them.
  virtual std::vector<std::shared_ptr<Executable>> prepare_kernels(const std::vector<Kernel>& ks) {
    std::vector<std::shared_ptr<Executable>> v;
    for (const Kernel& k : ks) v.push_back(prepare_kernel(k));
    return v;
  }
  // Independent kernels of a program as one dispatch, for a backend whose launches cost more than
  // the kernels (a GPU): none reads another's output. Member j reads its input b from the group's
  // input binds[j][b]; the dispatch binds the group's inputs, then one output per member in order.
  // nullptr where the backend has no such form; kernel_joins_group says which kernels may join.
  struct GroupMember {
    const Kernel* kernel = nullptr;
    std::vector<int> binds;
  };
  virtual bool kernel_joins_group(const Kernel& k) const {
    (void)k;
    return false;
  }
  virtual std::shared_ptr<Executable> prepare_kernel_group(const std::vector<GroupMember>& members,
                                                           const std::vector<AVal>& inputs) {
    (void)members, (void)inputs;
    return nullptr;
  }
  // A whole scan as one executable (operands in, results out), planned for `t` (its limits and
  // replay switches); fallback (no executable) when this backend cannot run the loop without the
  // host. The reason is given either way.
  virtual ScanPlan plan_scan(const ScanProgram& s, const Target& t) {
    (void)s, (void)t;
    return {ScanPath::fallback, fmt::format("the {} backend has no compiled-loop scan", info().backend), nullptr};
  }
  // An associative scan as the backend's own routine (path fused), or fallback: the runtime then
  // decomposes it.
  virtual ScanPlan plan_associative_scan(const AssocProgram& a, const Target& t) {
    (void)a, (void)t;
    return {ScanPath::fallback, fmt::format("the {} backend has no associative-scan routine", info().backend), nullptr};
  }
  virtual void dispatch(Executable& exe, std::span<const SlotId> in, std::span<const SlotId> out) = 0;
  // Starts executing what has been recorded so far, without waiting (a backend that records
  // commands submits them; the others run at dispatch and do nothing).
  virtual void flush() {}
  // Releases the device: recorded work is finished and every device object destroyed; the backend
  // is unavailable afterwards (slots still referenced only drop their references). Default: nothing.
  virtual void shutdown() {}
};

// Shuts down every started backend (Backend::shutdown); jx::shutdown() (core/jit) drops the
// compiled programs first, so they release their executables before the devices go.
void shutdown_backends();
std::size_t slot_count();  // live slots over every instantiated backend
std::vector<SlotInfo> live_slots();

}  // namespace jx
