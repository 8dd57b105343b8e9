#pragma once
// The blocked associative scan (glsl_assoc_blocked.cc), shared inside core/backends/vulkan with
// glsl_assoc_scan.cc, which chooses among the forms. Not part of the backend's interface.
#include <cstdint>
#include <functional>
#include <string>

#include "core/backends/vulkan/glsl_scan.h"

namespace jx::vk {

// A loop over an element's values (`e`): unrolled where at most kUnrollMax long and the device
// unrolls (unroll_loops), so the indices of the element arrays become constants and the arrays
// registers rather than memory private to the invocation.
std::string element_loop(std::int64_t count);

// Appends the combine's steps to the text (the reads through the function given: a buffer and an
// offset to an expression; combine_code) and returns the loop iterations they run.
using CombineText =
    std::function<std::int64_t(const std::function<std::string(int, const std::string&)>&, Shader&, std::string&)>;

// From this many series a blocked scan's levels below the top run in small workgroups, one
// position per invocation (the top level in a larger workgroup where it needs one): with 256
// series and more there are workgroups enough, and a level's time follows its rounds, log2(B)
// combines in a row. At B = 1024, N = 1600 on the H200 (2026-11-29-h200-series-wg-ab): the
// gradient's transposed scan (48 words, few warps resident) took 0.82 ms in workgroups of 128
// (7 rounds), 0.57 ms of 64, 0.48 ms of 32; the filter's scan (16 words) 0.36 ms with 4 positions
// per invocation in 256, ~0.21 ms one per invocation in 64 (the filter 0.735 -> 0.534 ms a call,
// the gradient 1.911 -> 1.663 ms). JX_VK_SERIES_WG overrides the workgroup (read once). A single
// series keeps 256 (more levels cost more: the m = 2 gradient at N = 102400 0.30 -> 1.0 ms at 64).
constexpr std::int64_t kManySeries = 256;

// The blocked form's levels into out (out.blocked, out.blocked_top or out.fix_totals), where
// the element fits (plan_blocked); out untouched otherwise. many: many series at once; outer: the
// program jit planned (its leaf kernels and unread results; nullptr: none).
void render_blocked(const AssocProgram& ap, const ScanLimits& lim, AssocShader& out, const LeafIndexFn& leaf_index,
                    const CombineText& combine, bool many = false, const AssocProgram* outer = nullptr);

}  // namespace jx::vk
