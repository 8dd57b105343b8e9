#pragma once
// The public jx API: arrays, backends, jx::lax (one function per primitive), jx::np.
#include "core/array/array.h"
#include "core/array/dtype.h"
#include "core/array/errors.h"
#include "core/array/shape.h"
#include "core/backends/backend.h"
#include "core/instrument/instrument.h"
#include "core/lax/control.h"
#include "core/lax/lax.h"
#include "core/np/np.h"
#include "core/prim/bind.h"
#include "core/replay/policy.h"
#include "core/transforms.h"

namespace jx {
inline constexpr const char* kVersion = "0.1.0";
}
