#pragma once
#include <string>

#include "core/kernel/kernel.h"

namespace jx::native {

// C99 helpers every generated translation unit starts with (NaN-propagating max/min, wrapping
// int32 arithmetic, saturating float->int32), matching the cpu interpreter's semantics.
std::string c_prelude();
// One kernel as `void <name>(const void* const* in, void* const* out)`.
std::string render_kernel(const Kernel& k, const std::string& name);
std::string c_type(DType d);

}  // namespace jx::native
