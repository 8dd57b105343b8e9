#pragma once
#include <memory>

#include "core/backends/backend.h"

namespace jx {

std::unique_ptr<Backend> make_cpu_backend();

// The reference interpreter: evaluates one validated op over host buffers. `in[i]`/`out[i]`
// hold op.in[i]/op.out[i] contiguously in row-major order.
void cpu_execute(const Op& op, std::span<const std::byte* const> in, std::span<std::byte* const> out);
void cpu_linalg(const Op& op, std::span<const std::byte* const> in, std::span<std::byte* const> out);
void cpu_run_kernel(const Kernel& k, std::span<const std::byte* const> in, std::byte* out);

}  // namespace jx
