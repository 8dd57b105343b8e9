#include "scanpath/scan_path_tracker.h"

#include <fmt/format.h>

namespace jx {

ScanPathTracker::ScanPathTracker()
    : sub_([this](const trace::Event& e) {
        if (e.kind != trace::EventKind::scan_path) return;
        for (ScanPath p : {ScanPath::fused, ScanPath::preencoded, ScanPath::fallback})
          if (e.name == scan_path_name(p)) choices_.push_back({p, e.backend, e.detail});
      }) {}

std::vector<ScanPath> ScanPathTracker::paths() const {
  std::vector<ScanPath> v;
  for (const auto& c : choices_) v.push_back(c.path);
  return v;
}

void ScanPathTracker::expect_path(ScanPath path) const {
  if (choices_.empty()) throw ScanPathError(fmt::format("expected scans on path \"{}\", but no scan ran", scan_path_name(path)));
  for (const auto& c : choices_)
    if (c.path != path)
      throw ScanPathError(fmt::format("expected path \"{}\", a scan on {} took \"{}\" ({})", scan_path_name(path), c.backend,
                                      scan_path_name(c.path), c.details));
}

}  // namespace jx
