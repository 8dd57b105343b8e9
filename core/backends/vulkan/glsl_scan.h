#pragma once
// A whole lax.scan as one compute shader (the `fused` path on vulkan). Operands are packed into
// one storage buffer and results into another (two bindings whatever the scan's arity, so the
// WebGPU profile's 8-buffer limit never applies); the backend copies slots in and out.
//
//   elementwise bodies: one invocation per element runs every step with the carry and the
//     temporaries in registers (no barriers: no element reads another's).
//   other bodies: one workgroup; carries and temporaries in workgroup (shared) memory; each
//     body kernel is computed by the invocations striding over its elements, with barrier()
//     between a kernel and the next one that reads (or rewrites) what it wrote.
//   vmapped scans (ScanProgram::series) whose batched body would take one workgroup: the
//     unbatched body, a workgroup per series (an invocation per series where every buffer is
//     small enough for one invocation), each on its slices of the packed operands and results.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/backends/vulkan/glsl_renderer.h"
#include "core/kernel/program.h"

namespace jx::vk {

struct ScanLimits {
  bool f64_math = true;
  std::int64_t shared_bytes = 16384;     // workgroup storage the profile allows
  std::int64_t max_loop_iterations = 0;  // per invocation (llvmpipe: 65535); 0 = unlimited
  std::int64_t max_buffers = 8;          // bindings one shader may have
  bool checked_shared = false;           // bounds-checked workgroup memory (glsl_words.cc: shared_decl)
  // a CPU device (llvmpipe) runs a workgroup's invocations as coroutines switched at every barrier:
  // there the associative scan prefers Kogge-Stone (no barriers) to the cooperative form
  bool costly_barriers = false;
  // a vmapped scan may run its unbatched body per series (ScanProgram::series); JX_VK_SERIES=0: never
  bool series = true;
};

// Invocations per workgroup of a scan run with an invocation per series (a warp on NVIDIA: the
// series, each a serial chain of steps, spread over as many multiprocessors as they can).
constexpr std::uint32_t kSeriesWorkgroup = 32;

struct ScanShader {
  Shader sh;  // two bindings: packed operands (0), packed results (1); push constants it0, it1
  std::vector<std::int64_t> in_words, out_words;  // word offset of every operand / result
  std::int64_t in_size = 0, out_size = 0;         // words
  std::int64_t steps_per_dispatch = 0;            // the whole length unless loops are limited
  bool one_workgroup = false;                     // a workgroup runs the loop (per series: each series' loop)
  std::int64_t workgroup = kWorkgroup;            // invocations per workgroup
  std::string mode;                               // for the path report
};

// JX_VK_SERIES (read at every plan; plans are keyed by it): unset or 1, vmapped scans may run per
// series; 0, never (A/B runs, tests of the batched form).
bool series_scans();

// Words (32-bit) a buffer of this aval takes in a packed buffer.
std::int64_t packed_words(const AVal& a);

// nullopt (with the reason in `why`) when the body cannot run as one shader on this device.
std::optional<ScanShader> render_fused_scan(const ScanProgram& sp, const ScanLimits& lim, std::string& why);

// lax.associative_scan as Kogge-Stone rounds: one invocation per position combines it with the
// one `d` before it (after, reversed), all leaves at once; ceil(log2 n) dispatches of one shader
// with push constant d = 1, 2, 4, ... Bindings: constants (0), the previous round's leaves (1),
// this round's (2); leaves packed like ScanShader's operands.
struct AssocShader {
  Shader sh;
  std::vector<std::int64_t> const_words, leaf_words;
  std::int64_t const_size = 0, leaf_size = 0;  // words
  // The blocked form (glsl_assoc_blocked.cc: render_blocked), where `block` elements (256, else the
  // largest power of two down to 32) fit in a workgroup's memory; run_assoc prefers it
  // (O(log_block n) dispatches, O(n) work). Its shaders' workgroups have `block` invocations.
  std::optional<Shader> blocked;      // one position per invocation
  std::optional<Shader> blocked_top;  // the top level: top_per_invocation positions per invocation
  std::int64_t top_per_invocation = 1;
  std::int64_t block = 256;
  std::int64_t top_block = 256;  // the top level's workgroup (below `block` for many series' large elements)
  bool direct = false;           // the blocked shaders bind consts | leaf inputs | leaf outputs
  // > 0: two dispatches, the first level (which also stores each block's total) and the fix-up
  // from the totals (mode 3), fix_totals of them folded per invocation; no top level. The totals
  // take totals_bytes, bound last.
  std::int64_t fix_totals = 0, totals_bytes = 0;
  // > 0: the blocked form of a vmapped scan's unbatched combine, run for `series` series at once
  // (dispatches of that depth, gl_WorkGroupID.z the series); const_shift[i]: the series' first
  // element in const i ("" where it is shared)
  std::int64_t series = 0;
  std::vector<std::string> const_shift;
  // The cooperative form (glsl_assoc_coop.cc), for elements too large for the blocked one: a
  // workgroup per combine. Bindings: constants (0), the packed leaves scanned in place (1) or
  // (direct) the k leaf inputs (1 ..) and outputs (k + 1 ..), and where buffers overflow workgroup
  // memory a scratch buffer of max_groups · scratch_words words (last).
  struct Coop {
    Shader sh;
    std::int64_t chunk = 16;         // positions a workgroup combines in turn at one level
    std::int64_t wg = 128;           // invocations per workgroup
    std::int64_t max_groups = 1;     // workgroups per dispatch (each loops over its share)
    std::int64_t scratch_words = 0;  // per workgroup
    bool direct = false;             // leaves bound directly: the first level (mode 2) reads the inputs
    std::string mode;                // for the path report
  };
  std::optional<Coop> coop;
};
std::optional<AssocShader> render_assoc_scan(const AssocProgram& ap, const ScanLimits& lim, std::string& why);
// JX_VK_ASSOC: auto (blocked, else cooperative, else Kogge-Stone), or one form forced where it can
// run: blocked, coop, ks (tests, A/B runs). Read at every plan; plans are cached per form.
std::string assoc_form();
// The form and the cooperative form's overrides (JX_VK_COOP_CHUNK, JX_VK_COOP_WG, JX_VK_COOP_WG_LUS,
// ...): part of a plan's key.
std::string assoc_overrides();

// The leaves' bindings from binding 1: the packed leaves `dst`, or (direct) the k inputs li<l>
// (readonly) then the k outputs lo<l>: the blocked and cooperative forms' shaders.
std::string leaf_bindings(int k, bool direct);

// Element e of leaf l at position pos (int expressions), as an index into the leaf's own buffer.
using LeafIndexFn = std::function<std::string(int l, const std::string& pos, const std::string& e)>;
// The cooperative form of `ap` with the packed layout of `layout` (const_words, leaf_words);
// nullopt, with the reason in `why`, where it cannot run on this device.
std::optional<AssocShader::Coop> render_coop_assoc(const AssocProgram& ap, const ScanLimits& lim,
                                                   const AssocShader& layout, const LeafIndexFn& leaf_index,
                                                   std::string& why);

}  // namespace jx::vk
