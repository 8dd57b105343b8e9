#include "core/backends/huge_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace jx {
namespace {
constexpr std::size_t kHuge = std::size_t{2} << 20;     // the x86-64 / arm64 THP size
constexpr std::size_t kRegion = std::size_t{64} << 20;  // address space reserved at a time

std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }
}  // namespace

HugeArena::~HugeArena() {
  for (const Region& r : regions_) munmap(r.base, r.length);
  for (std::byte* p : sanitized_) std::free(p);
}

// A region of at least `bytes`, 2 MB aligned: map 2 MB more, then unmap the ends around the
// aligned part. MAP_NORESERVE: address space only until touched.
std::byte* HugeArena::map_region(std::size_t bytes) {
  const std::size_t length = round_up(bytes, kHuge);
  void* raw = mmap(nullptr, length + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  auto* lo = static_cast<std::byte*>(raw);
  auto* base = reinterpret_cast<std::byte*>(round_up(reinterpret_cast<std::uintptr_t>(lo), kHuge));
  if (base > lo) munmap(lo, static_cast<std::size_t>(base - lo));
  const std::size_t tail = kHuge - static_cast<std::size_t>(base - lo);
  if (tail > 0) munmap(base + length, tail);
#ifdef MADV_HUGEPAGE
  madvise(base, length, MADV_HUGEPAGE);  // advice only: without THP the pages are 4 KB
#endif
  regions_.push_back({base, length});
  return base;
}

std::byte* HugeArena::take(std::size_t bytes) {
  bytes = round_up(bytes, 64);
  if (kSanitized) {
    auto* p = static_cast<std::byte*>(std::aligned_alloc(64, bytes));
    if (p) sanitized_.push_back(p);
    return p;
  }
  if (auto it = returned_.find(bytes); it != returned_.end() && !it->second.empty()) {
    std::byte* p = it->second.back();
    it->second.pop_back();
    return p;
  }
  if (bytes > left_) {
    if (bytes > kRegion / 4) return map_region(bytes);  // large: a region of its own
    std::byte* base = map_region(kRegion);
    if (!base) return nullptr;
    next_ = base;
    left_ = kRegion;  // the rest of the previous region stays unused address space
  }
  std::byte* p = next_;
  next_ += bytes;
  left_ -= bytes;
  return p;
}

// The pages wholly inside the block go back to the system; the partial pages at its ends may
// hold a neighbour's data and stay.
void HugeArena::give_back(std::byte* p, std::size_t bytes) {
  if (kSanitized) {
    if (auto it = std::find(sanitized_.begin(), sanitized_.end(), p); it != sanitized_.end()) {
      sanitized_.erase(it);
      std::free(p);
    }
    return;
  }
  bytes = round_up(bytes, 64);
  constexpr std::uintptr_t kPage = 4096;
  const auto lo = round_up(reinterpret_cast<std::uintptr_t>(p), kPage);
  const auto hi = (reinterpret_cast<std::uintptr_t>(p) + bytes) / kPage * kPage;
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
  returned_[bytes].push_back(p);
}

}  // namespace jx
