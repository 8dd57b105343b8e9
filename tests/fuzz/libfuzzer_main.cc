// libFuzzer entry point for one target; JX_FUZZ_TARGET names the function (tests/fuzz/CMakeLists).
#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return jx::fuzz::JX_FUZZ_TARGET(data, size);
}
