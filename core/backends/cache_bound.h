#pragma once
// Bounds for the backends' compiled-kernel caches (kernel key -> executable). An entry still
// held by a live program (use_count > 1) always stays; once a cache holds more than `limit`
// entries, unused ones are dropped down to limit/2 (amortized O(1) per insert). So a process
// compiling ever new shapes keeps what its cached programs use plus at most `limit` spares.
#include <cstddef>

namespace jx {

inline constexpr std::size_t kUnusedKernelLimit = 512;

template <class Map, class ExeOf>
void trim_unused(Map& m, ExeOf exe_of, std::size_t limit = kUnusedKernelLimit) {
  if (m.size() <= limit) return;
  for (auto it = m.begin(); it != m.end() && m.size() > limit / 2;) {
    if (exe_of(it->second).use_count() <= 1)
      it = m.erase(it);
    else
      ++it;
  }
}

template <class Map>
void trim_unused(Map& m, std::size_t limit = kUnusedKernelLimit) {
  trim_unused(
      m, [](const auto& v) -> const auto& { return v; }, limit);
}

}  // namespace jx
