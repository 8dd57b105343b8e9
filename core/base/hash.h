#pragma once
// FNV-1a (64-bit) over bytes: the names of cache entries, compiled symbols and dumped sources.
// Not for adversaries: a cache that must not be fooled stores what it hashed and compares it.
#include <cstdint>
#include <string_view>

namespace jx {

inline constexpr std::uint64_t kFnvOffset = 1469598103934665603ull;

// `h` continues an earlier hash (its value) over more bytes.
inline std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h = kFnvOffset) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace jx
