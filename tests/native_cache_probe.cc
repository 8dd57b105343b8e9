// Compiles one jitted function on native and prints where its object came from:
// "compiled" (cc ran) or "disk cache" (a previous process built it). ctest runs it twice.
#include <cstdio>

#include "core/instrument/instrument.h"
#include "core/jx.h"

int main() {
  using namespace jx;
  std::string origin = "none";
  trace::Subscription sub([&](const trace::Event& e) {
    if (e.kind == trace::EventKind::compile && e.backend == "native" && e.name == "cc")
      origin = e.detail == "disk cache" ? "disk cache" : "compiled";
  });
  double v = 0;
  try {  // a refused cache (tests/native_cache_fallback.sh) is an error message, not an abort
    DefaultDeviceScope native("native");
    auto f = jit([](const Array& x) { return np::sum(np::cos(x) * 7.25 - x); });
    v = f(np::arange(0, 5, 1, DType::float64)).item<double>();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "native_cache_probe: %s\n", e.what());
    return 1;
  }
  std::printf("origin: %s value: %.6f\n", origin.c_str(), v);
  return origin == "none" ? 1 : 0;
}
