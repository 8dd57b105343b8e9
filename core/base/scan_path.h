#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace jx {

// How a scan runs: the whole loop without a host round trip per step (fused), every step's
// dispatches recorded into one submission (preencoded, GPU backends), or a host loop running
// the body once per step (fallback). A backend's scan plan names one (Backend::plan_scan); the
// scan_path event carries it; ScanOptions::require_path says which ones a caller accepts.
enum class ScanPath : std::uint8_t { fused = 1, preencoded = 2, fallback = 4 };

constexpr std::string_view scan_path_name(ScanPath p) {
  switch (p) {
    case ScanPath::fused: return "fused";
    case ScanPath::preencoded: return "preencoded";
    case ScanPath::fallback: return "fallback";
  }
  return "?";
}

// A set of scan paths: what a caller accepts (empty: any). The one form require_path takes from
// the API (ScanOptions) through the primitive's parameters (printed `require=` as its bits) to
// the check where a plan is made.
class ScanPaths {
 public:
  constexpr ScanPaths() = default;
  constexpr ScanPaths(std::initializer_list<ScanPath> ps) {
    for (ScanPath p : ps) bits_ |= static_cast<unsigned>(p);
  }
  static constexpr ScanPaths from_bits(unsigned bits) {
    ScanPaths s;
    s.bits_ = bits;
    return s;
  }
  constexpr unsigned bits() const { return bits_; }
  constexpr bool empty() const { return bits_ == 0; }
  // true for every path when empty
  constexpr bool allows(ScanPath p) const { return bits_ == 0 || (bits_ & static_cast<unsigned>(p)) != 0; }
  std::string str() const {  // "fused, preencoded"
    std::string s;
    for (ScanPath p : {ScanPath::fused, ScanPath::preencoded, ScanPath::fallback})
      if (bits_ & static_cast<unsigned>(p)) s += (s.empty() ? "" : ", ") + std::string(scan_path_name(p));
    return s;
  }
  constexpr bool operator==(const ScanPaths&) const = default;

 private:
  unsigned bits_ = 0;
};

}  // namespace jx
