#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>
#include <map>
#include <mutex>

#include "core/backends/backend.h"
#include "core/backends/cpu/cpu_backend.h"
#include "core/backends/native/native_backend.h"
#include "core/backends/vulkan/vulkan.h"

namespace jx {
namespace {

struct Registry {
  std::map<std::string, std::function<std::unique_ptr<Backend>()>> factories;
  std::map<std::string, Backend*> live;  // instantiated on first use, never destroyed
  Backend* dflt = nullptr;
  std::recursive_mutex mu;

  Registry() {
    factories["cpu"] = [] { return make_cpu_backend(); };
    factories["native"] = [] { return make_native_backend(); };
    factories["vulkan"] = [] { return make_vulkan_backend(); };
  }

  Backend& get(const std::string& name) {
    std::lock_guard lock(mu);
    if (auto it = live.find(name); it != live.end()) return *it->second;
    auto f = factories.find(name);
    if (f == factories.end()) {
      std::vector<std::string> names;
      for (auto& [n, _] : factories) names.push_back(n);
      throw BackendError(fmt::format("unknown backend '{}' (available: {})", name, fmt::join(names, ", ")));
    }
    Backend* b = f->second().release();
    live[name] = b;
    return *b;
  }
};

Registry& registry() {
  static Registry* r = new Registry();  // intentionally immortal, see header
  return *r;
}

Backend& checked(Backend& b) {
  if (!b.info().available)
    throw BackendError(fmt::format("backend '{}' is not available: {}", b.info().backend, b.info().reason));
  return b;
}

}  // namespace

Backend& backend(const std::string& name) { return checked(registry().get(name)); }

bool backend_available(const std::string& name) {
  for (const DeviceInfo& d : devices())
    if (d.backend == name) return d.available;
  return false;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> v;
  for (auto& [n, _] : registry().factories) v.push_back(n);
  return v;
}

std::vector<DeviceInfo> devices() {
  std::vector<DeviceInfo> v;
  for (auto& n : backend_names()) v.push_back(registry().get(n).info());
  return v;
}

Backend& default_backend() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  if (!r.dflt) {
    const char* env = std::getenv("JX_DEVICE");
    std::string name = env && *env ? env : "cpu";
    try {
      r.dflt = &backend(name);
    } catch (const BackendError& e) {
      throw BackendError(fmt::format("JX_DEVICE={}: {}", name, e.what()));
    }
  }
  return *r.dflt;
}

void default_device(const std::string& name) {
  auto& r = registry();
  Backend& b = backend(name);
  std::lock_guard lock(r.mu);
  r.dflt = &b;
}

DefaultDeviceScope::DefaultDeviceScope(const std::string& name) : prev_(&default_backend()) { default_device(name); }
DefaultDeviceScope::~DefaultDeviceScope() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  r.dflt = prev_;
}

void shutdown_backends() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  for (auto& [_, b] : r.live) b->shutdown();
}

std::size_t slot_count() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  std::size_t n = 0;
  for (auto& [_, b] : r.live) n += b->slot_count();
  return n;
}

std::vector<SlotInfo> live_slots() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<SlotInfo> v;
  for (auto& [_, b] : r.live) {
    auto s = b->live_slots();
    v.insert(v.end(), s.begin(), s.end());
  }
  return v;
}

}  // namespace jx
