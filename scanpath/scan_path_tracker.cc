#include "scanpath/scan_path_tracker.h"

#include <fmt/format.h>

namespace jx {

ScanPathTracker::ScanPathTracker()
    : sub_([this](const trace::Event& e) {
        if (e.kind != trace::EventKind::scan_path) return;
        const ScanPath p = e.path;
        const auto i = index(p);
        if (counts_[i]++ == 0) {
          distinct_.push_back(p);
          first_details_[i] = fmt::format("{} ({})", e.backend, e.detail);
        }
        ++scans_;
        if (choices_.size() < kKept)
          choices_.push_back({p, e.backend, e.detail});
        else
          choices_.back() = {p, e.backend, e.detail};
      }) {}

std::vector<ScanPath> ScanPathTracker::paths() const { return distinct_; }

void ScanPathTracker::expect_path(ScanPath path) const {
  if (scans_ == 0)
    throw ScanPathError(fmt::format("expected scans on path \"{}\", but no scan ran", scan_path_name(path)));
  for (ScanPath p : distinct_)
    if (p != path)
      throw ScanPathError(fmt::format("expected path \"{}\", {} scan(s) took \"{}\", the first on {}",
                                      scan_path_name(path), counts_[index(p)], scan_path_name(p),
                                      first_details_[index(p)]));
}

}  // namespace jx
