#pragma once
#include <array>
#include <string>
#include <vector>

#include "core/instrument/instrument.h"
#include "core/base/errors.h"
#include "core/base/scan_path.h"

namespace jx {

// RAII: records the path of every scan run in its scope (any thread), with backend and reason.
// Memory stays bounded however many scans run: counts per path, the details of the first
// kKept - 1 scans and of the latest one (choices().back() is always the latest).
class ScanPathTracker {
 public:
  struct Choice {
    ScanPath path;
    std::string backend, details;
  };
  ScanPathTracker();
  static constexpr std::size_t kKept = 64;
  const std::vector<Choice>& choices() const { return choices_; }
  // The distinct paths taken, in the order first seen.
  std::vector<ScanPath> paths() const;
  std::size_t scans() const { return scans_; }
  std::size_t count(ScanPath p) const { return counts_[index(p)]; }
  // Throws ScanPathError unless at least one scan ran and every one took `path`.
  void expect_path(ScanPath path) const;

 private:
  static std::size_t index(ScanPath p) { return p == ScanPath::fused ? 0 : p == ScanPath::preencoded ? 1 : 2; }
  std::vector<Choice> choices_;
  std::vector<ScanPath> distinct_;
  std::array<std::size_t, 3> counts_{};
  std::array<std::string, 3> first_details_;  // per path: backend and reason of its first scan
  std::size_t scans_ = 0;
  trace::Subscription sub_;
};

}  // namespace jx
