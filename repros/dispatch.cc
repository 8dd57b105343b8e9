// The scan-dispatch document's four cases on one backend, m = 2:
//   A associative_scan of Kalman elements, B jit(A), C the RTS backward step as a reverse
//   lax.scan (r' = Aᵀ r + b, N' = Aᵀ N A + S), D jit(C).
// The runner counts dispatches and submits around each call (after a warm-up call that compiles).
#include <fmt/format.h>

#include "repros/repro.h"

namespace jx::lab {
namespace {

using T3 = std::tuple<Array, Array, Array>;

T3 compose(const T3& x, const T3& y) {
  const auto& [Aa, ba, Sa] = x;
  const auto& [Ab, bb, Sb] = y;
  return T3{np::matmul(Ab, Aa), np::matmul(Ab, ba) + bb, np::matmul(np::matmul(Ab, Sa), np::swapaxes(Ab, -1, -2)) + Sb};
}

std::vector<Array> assoc(const std::vector<Array>& in) {
  auto [A, b, S] = lax::associative_scan(compose, T3{in[0], in[1], in[2]});
  return {A, b, S};
}

std::vector<Array> rts(const std::vector<Array>& in) {
  const Array& A = in[0];
  const Array& S = in[1];
  using RN = std::pair<Array, Array>;
  auto [fin, hist] = lax::scan(
      [&](const RN& c, const Array& b) {
        RN next{np::matmul(np::transpose(A), c.first) + b, np::matmul(np::matmul(np::transpose(A), c.second), A) + S};
        return std::pair{next, next.first};
      },
      RN{np::zeros({2}, A.dtype()), np::zeros({2, 2}, A.dtype())}, in[2], {.reverse = true});
  return {fin.first, fin.second, hist};
}

void scan_dispatch(Run& r) {
  const std::int64_t n = r.integer("n", 100);
  const std::string which = r.str("case", "A");
  const DType d = r.dtype();
  Array t = np::arange(0, static_cast<double>(n), 1, d);
  std::vector<Array> in;
  std::function<std::vector<Array>(const std::vector<Array>&)> fn;
  if (which == "A" || which == "B") {
    Array A = np::stack({np::stack({np::cos(t * 0.1) * 0.9, np::sin(t * 0.1) * 0.1}, -1),
                         np::stack({np::sin(t * 0.2) * -0.1, np::cos(t * 0.3) * 0.8}, -1)},
                        -2);
    in = {A, np::reshape(np::stack({np::sin(t), np::cos(t)}, -1), {n, 2, 1}),
          np::broadcast_to(np::eye(2, {}, 0, d) * 0.1, {n, 2, 2})};
    fn = assoc;
  } else if (which == "C" || which == "D") {
    in = {np::array({{1.0, 0.5}, {0.0, 1.0}}, d) * 0.9, np::array({{0.1, 0.0}, {0.0, 0.2}}, d),
          np::reshape(np::sin(np::arange(0, 2.0 * n, 1, d) * 0.1), {n, 2})};
    fn = rts;
  } else {
    throw Error(fmt::format("parameter 'case' must be A, B, C or D, got '{}'", which));
  }
  outputs_under_transform(r, fn, in);
}

}  // namespace

void register_dispatch(std::map<std::string, Repro>& m) {
  // B and D are jit(A) and jit(C): the case names the transform, and the scenario says it too
  auto check = [](const nlohmann::json& p, const std::string& transform) -> std::string {
    const std::string c = p.contains("case") && p["case"].is_string() ? p["case"].get<std::string>() : "A";
    const std::string want = c == "B" || c == "D" ? "jit" : "eager";
    return transform == want ? "" : fmt::format("case {} runs under transform {}, not {}", c, want, transform);
  };
  m["scan_dispatch"] = {
      "scan_dispatch",  "the dispatch document's cases A-D, m=2 (params case, n, dtype; B and D under jit)",
      scan_dispatch,    {"case", "n", "dtype"},
      {"eager", "jit"}, check};
}

}  // namespace jx::lab
