#pragma once
#include <cstddef>
#include <map>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define JX_ARENA_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JX_ARENA_SANITIZED 1
#endif
#endif
#ifndef JX_ARENA_SANITIZED
#define JX_ARENA_SANITIZED 0
#endif

namespace jx {

// Large host blocks backed by transparent huge pages where the kernel offers them
// (madvise(MADV_HUGEPAGE); /sys/kernel/mm/transparent_hugepage/enabled "madvise" or "always").
//
// Why: a fresh 4 KB page costs a fault (~3 µs on the 2-core CI container) and the first touch of
// every page of a new array pays it; a 2 MB huge page pays one fault for 512 pages. A native
// program at N = 10^5 writes megabytes of new outputs per call, so its first call spent more time
// faulting than computing (issue 33: the CLI fit faulted 5000 pages).
//
// Blocks are carved from 2 MB-aligned regions (64 MB of address space each, reserved without
// backing; a larger block gets a region of its own) by a bump pointer and never move. give_back()
// returns a block's physical pages (MADV_DONTNEED) but keeps its addresses, listed by size for
// take() to hand out again; regions are unmapped with the arena. Invariant: every block handed
// out lies inside one region, is `bytes` long as asked (a multiple of 64), 64-byte aligned, and
// no two blocks overlap. Not thread-safe: HostMemory holds its lock around every call.
// Under AddressSanitizer every block is its own aligned_alloc (freed by give_back or with the
// arena), so that ASan still sees each block's bounds.
class HugeArena {
 public:
  static constexpr bool kSanitized = JX_ARENA_SANITIZED != 0;
  HugeArena() = default;
  ~HugeArena();
  HugeArena(const HugeArena&) = delete;
  HugeArena& operator=(const HugeArena&) = delete;

  std::byte* take(std::size_t bytes);  // nullptr when the system has no address space left
  void give_back(std::byte* p, std::size_t bytes);

 private:
  struct Region {
    std::byte* base;
    std::size_t length;
  };
  std::byte* map_region(std::size_t bytes);

  std::vector<Region> regions_;
  std::byte* next_ = nullptr;
  std::size_t left_ = 0;
  std::map<std::size_t, std::vector<std::byte*>> returned_;  // size -> blocks with no pages
  std::vector<std::byte*> sanitized_;                        // ASan builds: the live blocks
};

}  // namespace jx
