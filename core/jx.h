#pragma once
// The public jx API: arrays, devices, jx::lax (one function per primitive, control flow),
// jx::np, the transformations (grad, vmap, jit, ...). The lab and the backends' own controls
// (core/backends/vulkan/vulkan.h) include what else they use explicitly.
#include "core/array/array.h"
#include "core/backends/devices.h"
#include "core/base/dtype.h"
#include "core/base/errors.h"
#include "core/base/scan_path.h"
#include "core/base/shape.h"
#include "core/instrument/debug.h"
#include "core/lax/lax.h"
#include "core/np/np.h"
#include "core/transform/control.h"
#include "core/transforms.h"

namespace jx {
inline constexpr const char* kVersion = "0.1.0";
}
