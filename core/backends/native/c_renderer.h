#pragma once
#include <string>

#include "core/kernel/kernel.h"
#include "core/kernel/program.h"

namespace jx::native {

// C99 helpers every generated translation unit starts with (NaN-propagating max/min, wrapping
// int32 arithmetic, saturating float->int32), matching the cpu interpreter's semantics.
std::string c_prelude();
// One kernel as `void <name>(const void* const* in, void* const* out)`.
std::string render_kernel(const Kernel& k, const std::string& name, bool is_static = false);
// A whole scan as `void <name>(const void* const* operands, void* const* results)`: one C
// loop over the steps; body kernels become static functions, routines C code, carries and
// temporaries local arrays allocated once per call (on the stack when small). Throws
// BackendError when the body holds a step it cannot render (a nested scan).
std::string render_scan(const ScanProgram& s, const std::string& name);
std::string c_type(DType d);

}  // namespace jx::native
