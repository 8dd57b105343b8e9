// A program that returns from main() without jx::shutdown(), leaving recorded work that was
// never read and a compiled program in the cache: the exit handler must submit and destroy
// nothing (lavapipe's LLVM has destroyed part of its static state by then), so the process
// exits with status 0. Prints "exit probe: <value>" once the first result is read.
#include <cstdio>

#include "core/jx.h"

int main() {
  using namespace jx;
  DefaultDeviceScope vk("vulkan");
  auto f = jit([](const Array& x) { return np::sum(np::cos(x) * 7.25 - x); });
  const double v = f(np::arange(0, 5, 1, DType::float32)).item<double>();
  std::printf("exit probe: %.4f\n", v);
  Array pending = f(np::arange(0, 9, 1, DType::float32)) * 3.0 + np::exp(np::ones({64}));  // recorded, never read
  static Array kept = pending;  // destroyed by an exit handler, after the backend's
  return 0;
}
