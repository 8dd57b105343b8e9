#pragma once
// Settings read from the environment.
#include <cstdlib>
#include <string_view>

namespace jx {

// Whether the variable `name` is set to exactly "0": the way every on-by-default setting is
// turned off (JX_EARLY_SUBMIT=0, JX_NATIVE_OPENMP=0, JX_VK_F32_ACC=0, ...).
inline bool env_is_zero(const char* name) {
  const char* e = std::getenv(name);
  return e && std::string_view(e) == "0";
}

}  // namespace jx
