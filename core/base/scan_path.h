#pragma once
#include <cstdint>
#include <string_view>

namespace jx {

// How a scan runs: the whole loop without a host round trip per step (fused), every step's
// dispatches recorded into one submission (preencoded, GPU backends), or a host loop running
// the body once per step (fallback). A backend's scan plan names one (Backend::plan_scan); the
// scan_path event carries it; ScanOptions::require_path lists the acceptable ones.
enum class ScanPath : std::uint8_t { fused = 1, preencoded = 2, fallback = 4 };

constexpr std::string_view scan_path_name(ScanPath p) {
  switch (p) {
    case ScanPath::fused: return "fused";
    case ScanPath::preencoded: return "preencoded";
    case ScanPath::fallback: return "fallback";
  }
  return "?";
}

}  // namespace jx
