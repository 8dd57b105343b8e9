#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "core/base/scan_path.h"
#include "core/instrument/debug.h"

// Events from every layer, delivered synchronously to subscribers, plus the debug level.
namespace jx {

namespace trace {

enum class EventKind : std::uint8_t { dispatch, compile, cache_hit, cache_evict, scan_path };

struct Event {
  EventKind kind;
  std::string backend;
  std::string name;    // kernel / primitive / jitted function
  int buffers = 0;     // dispatch: buffers bound (inputs + outputs)
  bool fused = false;  // dispatch: a kernel of a jitted program (false: an eager primitive or a routine)
  double ms = 0.0;     // compile: time
  std::string detail;  // scan_path: the reason; name holds the path's name
  ScanPath path = ScanPath::fallback;  // scan_path: the path
};

using Callback = std::function<void(const Event&)>;

// RAII: receives every event emitted on any thread while alive.
class Subscription {
 public:
  explicit Subscription(Callback cb);
  ~Subscription();
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

 private:
  std::uint64_t id_;
};

bool has_subscribers();
void emit(const Event& e);

// Records dispatches in its scope: count, the largest buffer count, dispatches per kernel name.
// Its memory does not grow with the number of dispatches, only with distinct names.
class DispatchTracker {
 public:
  DispatchTracker();
  std::size_t dispatches() const { return n_; }
  std::size_t fused_dispatches() const { return fused_; }
  int max_buffers() const { return max_buffers_; }
  std::size_t count(const std::string& name) const {
    auto it = per_name_.find(name);
    return it == per_name_.end() ? 0 : it->second;
  }

 private:
  std::size_t n_ = 0, fused_ = 0;
  int max_buffers_ = 0;
  std::map<std::string, std::size_t> per_name_;
  Subscription sub_;
};

}  // namespace trace

}  // namespace jx
