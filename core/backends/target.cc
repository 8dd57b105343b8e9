#include "core/backends/target.h"

#include <fmt/format.h>

#include "core/backends/backend.h"

namespace jx {

Target Target::for_jit(Backend& be, int max_buffers) {
  Target t = for_eager(be);
  t.budget = stricter_limit(max_buffers, t.limits.max_buffers_per_kernel);
  if (t.policy.ignore_buffer_budget) {
    t.budget = 0;
    t.inline_multi_use = true;
  }
  return t;
}

Target Target::for_eager(Backend& be) {
  Target t;
  t.backend = &be;
  t.limits = be.info().limits;
  t.budget = t.limits.max_buffers_per_kernel;
  t.policy = replay::policy();
  return t;
}

std::string Target::key() const {
  return fmt::format("{}|{}|{}{}", backend ? backend->info().backend : "-", budget, policy.key(),
                     inline_multi_use ? "|inline" : "");
}

}  // namespace jx
