// The jaxpr text loader at program sizes of bug reports and beyond: a 10,000-equation program
// (the grad of an unrolled chain, printed by jx in JAX's syntax) parsed, loaded (traced into a
// typechecked jx Jaxpr) and run on cpu. Target: load + run under 1 s on the 2-core dev machine.
#include <benchmark/benchmark.h>

#include <map>

#include "core/jx.h"
#include "core/text/load.h"
#include "core/trace/builder.h"

namespace {

using namespace jx;

// grad of sum(chain(x)) for a chain of `links` (sin, mul, add) links: about 4 equations per link.
const std::string& unrolled_grad_text(int links) {
  static std::map<int, std::string> memo;
  auto& s = memo[links];
  if (!s.empty()) return s;
  FlatFn chain = [links](const std::vector<Array>& in) {
    Array v = in[0];
    for (int k = 0; k < links; ++k)
      v = lax::add(lax::mul(lax::sin(v), np::full({}, 0.999, v.dtype()) * np::ones_like(v)), in[0]);
    return std::vector<Array>{np::sum(v)};
  };
  FlatFn grad = [&](const std::vector<Array>& in) {
    auto [y, lin] = vjp_flat(chain, in);
    return lin.transpose({np::ones({}, DType::float32)});
  };
  s = make_jaxpr_flat(grad, {AVal{DType::float32, {16}}}).jaxpr.str();
  return s;
}

void BM_Parse(benchmark::State& st) {
  const std::string& t = unrolled_grad_text(static_cast<int>(st.range(0)));
  std::size_t eqns = 0;
  for (auto _ : st) {
    auto j = text::parse(t, "bench");
    eqns = j->eqns.size();
    benchmark::DoNotOptimize(j);
  }
  st.counters["equations"] = static_cast<double>(eqns);
  st.counters["bytes"] = static_cast<double>(t.size());
}

void BM_Load(benchmark::State& st) {
  const std::string& t = unrolled_grad_text(static_cast<int>(st.range(0)));
  std::size_t eqns = 0;
  for (auto _ : st) {
    auto p = text::load_program(t, "bench");
    eqns = p.jaxpr.eqns.size();
    benchmark::DoNotOptimize(p);
  }
  st.counters["equations"] = static_cast<double>(eqns);
}

void BM_LoadAndRunCpu(benchmark::State& st) {
  const std::string& t = unrolled_grad_text(static_cast<int>(st.range(0)));
  DefaultDeviceScope cpu("cpu");
  const Array x = np::linspace(-1.0, 1.0, 16);
  for (auto _ : st) {
    auto p = text::load_program(t, "bench");
    auto out = text::run_program(p, {x});
    benchmark::DoNotOptimize(out[0].to_vector<float>());
  }
}

BENCHMARK(BM_Parse)->Arg(250)->Arg(2500)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Load)->Arg(250)->Arg(2500)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LoadAndRunCpu)->Arg(2500)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
