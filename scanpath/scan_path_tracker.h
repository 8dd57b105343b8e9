#pragma once
#include <string>
#include <vector>

#include "core/instrument/instrument.h"
#include "core/lax/control.h"

namespace jx {

// RAII: records the path of every scan run in its scope (any thread), with backend and reason.
class ScanPathTracker {
 public:
  struct Choice {
    ScanPath path;
    std::string backend, details;
  };
  ScanPathTracker();
  const std::vector<Choice>& choices() const { return choices_; }
  std::vector<ScanPath> paths() const;
  // Throws ScanPathError unless at least one scan ran and every one took `path`.
  void expect_path(ScanPath path) const;

 private:
  std::vector<Choice> choices_;
  trace::Subscription sub_;
};

}  // namespace jx
