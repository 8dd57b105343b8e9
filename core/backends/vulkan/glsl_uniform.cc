// What an if / else saves: a select computed lazily (cstyle.cc) skips its untaken branch only
// where a warp's lanes agree on the condition; where they split, the warp runs both branches one
// after the other (the m = 4 gradient's interleave, 16 outputs a position: a warp holds an even
// and an odd position). And where the branch with the loads is taken nearly everywhere (a window
// test), it skips nothing, while the jump keeps the compiler from scheduling the branch's loads
// with the rest. The condition's index arithmetic is evaluated on the host for the lanes of
// sampled warps.
#include <algorithm>

#include "core/backends/vulkan/glsl_parts.h"
#include "core/kernel/index_eval.h"

namespace jx::vk {
namespace {

// The space index of output o (row-major over the outer dims) and reduced element r (row-major
// over the reduced dims), into idx.
void space_index(const Kernel& k, std::int64_t o, std::int64_t r, std::vector<std::int64_t>& idx) {
  for (std::size_t d = k.space.size(); d-- > 0;) {
    std::int64_t& flat = reduced_dim(k, d) ? r : o;
    const std::int64_t n = std::max<std::int64_t>(k.space[d], 1);
    idx[d] = flat % n;
    flat /= n;
  }
}

// splitmix64's finalizer: a fixed, well-spread hash (the same warps at every render)
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The condition's lanes under m's layout: lane l of the warp starting at invocation w, step j,
// takes output (w + l) / L and reduced element (w + l) mod L + L·j.
class WarpSampler {
 public:
  WarpSampler(const Kernel& k, int cond, const WarpMap& m)
      : k_(k),
        ev_(k, cond),
        L_(std::max<std::int64_t>(m.lanes_per_output, 1)),
        outs_(k.out.size()),
        red_(k.is_reduction() ? reduced_elements(k) : 1),
        idx_(k.space.size()) {}
  bool index_only() const { return ev_.index_only(); }
  std::int64_t warps() const { return (outs_ * L_ + kWarp - 1) / kWarp; }
  std::int64_t steps() const { return std::max<std::int64_t>((red_ + L_ - 1) / L_, 1); }
  // 1 or 0 where the live lanes agree, -1 where they split (or no lane is live)
  int value(std::int64_t w, std::int64_t j) {
    int v = -1;
    for (std::int64_t l = 0; l < kWarp; ++l) {
      const std::int64_t o = (w + l) / L_, r = (w + l) % L_ + L_ * j;
      if (o >= outs_ || r >= red_) continue;  // an idle lane
      space_index(k_, o, r, idx_);
      const int x = ev_.at(idx_) != 0.0 ? 1 : 0;
      if (v >= 0 && x != v) return -1;
      v = x;
    }
    return v;
  }

 private:
  const Kernel& k_;
  IndexEvaluator ev_;
  const std::int64_t L_, outs_, red_;
  std::vector<std::int64_t> idx_;
};

}  // namespace

double skipped_loads(const Kernel& k, int cond, const WarpMap& m, int then_loads, int else_loads) {
  WarpSampler ws(k, cond, m);
  if (!ws.index_only() || then_loads + else_loads == 0) return 0.0;
  const std::int64_t warps = ws.warps(), steps = ws.steps(), samples = std::min(warps, kWarpSamples);
  double skipped = 0.0;
  for (std::int64_t s = 0; s < samples; ++s) {
    // every warp where there are few, else a hashed one: evenly spaced warps alias with a period
    // (the interleave's parity: 64 warps 2400 positions apart are all even)
    const std::uint64_t h = samples == warps ? static_cast<std::uint64_t>(s) : mix(static_cast<std::uint64_t>(s));
    const std::int64_t w = static_cast<std::int64_t>(h % static_cast<std::uint64_t>(warps)) * kWarp;
    const int v = ws.value(w, static_cast<std::int64_t>(mix(h) % static_cast<std::uint64_t>(steps)));
    skipped += v < 0 ? 0 : v ? else_loads : then_loads;
  }
  return samples ? skipped / static_cast<double>(samples * (then_loads + else_loads)) : 0.0;
}

}  // namespace jx::vk
