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

// The condition's value on each lane of the warp starting at invocation w, step j: 1 or 0 where
// the live lanes agree, -1 where they split (or no lane is live).
int warp_value(const Kernel& k, IndexEvaluator& ev, const WarpMap& m, std::int64_t w, std::int64_t j,
               std::vector<std::int64_t>& idx) {
  const std::int64_t L = std::max<std::int64_t>(m.lanes_per_output, 1);
  const std::int64_t outs = k.out.size(), red = k.is_reduction() ? reduced_elements(k) : 1;
  int v = -1;
  for (std::int64_t l = 0; l < kWarp; ++l) {
    const std::int64_t o = (w + l) / L, r = (w + l) % L + L * j;
    if (o >= outs || r >= red) continue;  // an idle lane
    space_index(k, o, r, idx);
    const int x = ev.at(idx) != 0.0 ? 1 : 0;
    if (v >= 0 && x != v) return -1;
    v = x;
  }
  return v;
}

}  // namespace

double skipped_loads(const Kernel& k, int cond, const WarpMap& m, int then_loads, int else_loads) {
  IndexEvaluator ev(k, cond);
  if (!ev.index_only() || then_loads + else_loads == 0) return 0.0;
  const std::int64_t L = std::max<std::int64_t>(m.lanes_per_output, 1);
  const std::int64_t red = k.is_reduction() ? reduced_elements(k) : 1;
  const std::int64_t warps = (k.out.size() * L + kWarp - 1) / kWarp,
                     steps = std::max<std::int64_t>((red + L - 1) / L, 1);
  const std::int64_t samples = std::min(warps, kWarpSamples);
  std::vector<std::int64_t> idx(k.space.size());
  double skipped = 0.0;
  for (std::int64_t s = 0; s < samples; ++s) {
    // every warp where there are few, else a hashed one: evenly spaced warps alias with a period
    // (the interleave's parity: 64 warps 2400 positions apart are all even)
    const std::uint64_t h = samples == warps ? static_cast<std::uint64_t>(s) : mix(static_cast<std::uint64_t>(s));
    const std::int64_t w = static_cast<std::int64_t>(h % static_cast<std::uint64_t>(warps)) * kWarp;
    const std::int64_t j = static_cast<std::int64_t>(mix(h) % static_cast<std::uint64_t>(steps));
    const int v = warp_value(k, ev, m, w, j, idx);
    skipped += v < 0 ? 0 : v ? else_loads : then_loads;
  }
  return samples ? skipped / static_cast<double>(samples * (then_loads + else_loads)) : 0.0;
}

}  // namespace jx::vk
