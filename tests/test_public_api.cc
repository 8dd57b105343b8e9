// The public API (core/jx.h) is enough for a program, and it declares only user-facing names in
// namespace jx: code that says `using namespace jx;` and names its own types as ordinary code does
// still compiles (each use below would be ambiguous if jx.h declared jx::<name>). Internals (the
// primitive parameters, kernels, programs, backends' executables, the dispatcher, the compile
// target) come from their own headers, which the lab includes explicitly.
#include <gtest/gtest.h>

#include "core/jx.h"

using namespace jx;

using Params = int;
struct Op {};
struct Kernel {};
struct Program {};
struct Step {};
struct Target {};
struct Executable {};
struct Dispatcher {};
struct Plan {};
struct ScanPlan {};
struct Slot {};
struct Buffer {};
struct Pipeline {};
struct Shader {};
struct Context {};
struct Registry {};
struct Rule {};
struct Call {};
struct Batch {};
struct Event {};
struct Callback {};
struct Options {};
struct Entry {};
struct Node {};
struct Trace {};
struct Builder {};
struct Scope {};
struct Policy {};
struct Limits {};

TEST(PublicApi, OrdinaryNamesDoNotCollideWithJx) {
  Params params = 1;
  [[maybe_unused]] Op op;
  [[maybe_unused]] Kernel kernel;
  [[maybe_unused]] Program program;
  [[maybe_unused]] Step step;
  [[maybe_unused]] Target target;
  [[maybe_unused]] Executable executable;
  [[maybe_unused]] Dispatcher dispatcher;
  [[maybe_unused]] Plan plan;
  [[maybe_unused]] ScanPlan scan_plan;
  [[maybe_unused]] Slot slot;
  [[maybe_unused]] Buffer buffer;
  [[maybe_unused]] Pipeline pipeline;
  [[maybe_unused]] Shader shader;
  [[maybe_unused]] Context context;
  [[maybe_unused]] Registry registry;
  [[maybe_unused]] Rule rule;
  [[maybe_unused]] Call call;
  [[maybe_unused]] Batch batch;
  [[maybe_unused]] Event event;
  [[maybe_unused]] Callback callback;
  [[maybe_unused]] Options options;
  [[maybe_unused]] Entry entry;
  [[maybe_unused]] Node node;
  [[maybe_unused]] Trace trace_;
  [[maybe_unused]] Builder builder;
  [[maybe_unused]] Scope scope;
  [[maybe_unused]] Policy policy;
  [[maybe_unused]] Limits limits;
  EXPECT_EQ(params, 1);
  // the API itself, with those names in scope: a jitted gradient and a scan
  auto f = [](const Array& x) { return np::sum(x * x); };
  Array g = jit(grad(f))(np::arange(0, 4, 1, DType::float32));
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{0, 2, 4, 6}));
  auto step_fn = [](const Array& c, const Array& x) { return std::pair<Array, Array>{c + x, c}; };
  auto [total, ys] = lax::scan(step_fn, np::zeros({}, DType::float32), np::arange(0, 4, 1, DType::float32));
  EXPECT_EQ(total.item<float>(), 6.0f);
  EXPECT_EQ(ys.shape(), (Shape{4}));
}
