#include "core/trace/trace.h"

#include <algorithm>

namespace jx {
namespace {
thread_local std::vector<MainTrace*> g_stack;
}

MainScope::MainScope(std::shared_ptr<MainTrace> m) : main_(std::move(m)) {
  main_->level = static_cast<int>(g_stack.size());
  main_->active = true;
  g_stack.push_back(main_.get());
}

MainScope::~MainScope() {
  main_->active = false;
  auto it = std::find(g_stack.begin(), g_stack.end(), main_.get());
  if (it != g_stack.end()) g_stack.erase(it);
}

int trace_depth() { return static_cast<int>(g_stack.size()); }

namespace {
thread_local MainTrace* g_dynamic = nullptr;
}
DynamicScope::DynamicScope(MainTrace* m) : prev_(g_dynamic) { g_dynamic = m; }
DynamicScope::~DynamicScope() { g_dynamic = prev_; }
MainTrace* dynamic_trace() { return g_dynamic && g_dynamic->active ? g_dynamic : nullptr; }

}  // namespace jx
