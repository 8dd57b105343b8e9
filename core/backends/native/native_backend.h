#pragma once
#include <memory>

#include "core/backends/backend.h"

namespace jx {
std::unique_ptr<Backend> make_native_backend();
}
