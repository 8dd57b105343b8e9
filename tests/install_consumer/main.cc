// Uses the installed jx: a gradient under jit on the cpu backend. Prints "grad 2 4 6".
#include <cstdio>

#include "core/jx.h"

int main() {
  using namespace jx;
  const Array x = np::array(std::vector<double>{1, 2, 3}, Shape{3}, DType::float64);
  const auto g = jit(grad([](const Array& a) { return np::sum(a * a); }))(x).to_vector<double>();
  std::printf("grad %g %g %g\n", g[0], g[1], g[2]);
  return g[0] == 2 && g[1] == 4 && g[2] == 6 ? 0 : 1;
}
