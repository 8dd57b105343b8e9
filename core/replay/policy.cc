#include "core/replay/policy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/base/errors.h"

namespace jx::replay {
namespace {

Policy g_policy;

struct Switch {
  const char* name;
  bool Policy::*field;
};
constexpr Switch kSwitches[] = {
    {"ignore_buffer_budget", &Policy::ignore_buffer_budget},
    {"strict_concat_transpose", &Policy::strict_concat_transpose},
    {"borrowed_residuals", &Policy::borrowed_residuals},
    {"identity_keyed_unbounded_cache", &Policy::identity_keyed_unbounded_cache},
    {"no_workgroup_scan_fusion", &Policy::no_workgroup_scan_fusion},
};

Policy only(const char* name) { return with_switch({}, name, true); }
Policy both(const char* a, const char* b) { return with_switch(only(a), b, true); }

}  // namespace

std::vector<std::string> Policy::switches() const {
  std::vector<std::string> v;
  for (const Switch& s : kSwitches)
    if (this->*s.field) v.push_back(s.name);
  return v;
}
std::string Policy::key() const { return fmt::format("{}", fmt::join(switches(), "+")); }

const Policy& policy() { return g_policy; }

Scope::Scope(const Policy& p) : prev_(g_policy) { g_policy = p; }
Scope::~Scope() { g_policy = prev_; }

std::vector<std::string> switch_names() {
  std::vector<std::string> v;
  for (const Switch& s : kSwitches) v.push_back(s.name);
  return v;
}

Policy with_switch(Policy p, const std::string& name, bool on) {
  for (const Switch& s : kSwitches)
    if (name == s.name) {
      p.*s.field = on;
      return p;
    }
  throw Error(fmt::format("replay: unknown switch '{}' (known: {})", name, fmt::join(switch_names(), ", ")));
}

const std::vector<Profile>& profiles() {
  static const std::vector<Profile> v = {
      {"current", "today's runtime: every replay switch off", {}},
      {"fusion-ignores-budget", "jit fuses without the WebGPU buffer budget (the storage-buffer limit failure)",
       only("ignore_buffer_budget")},
      {"strict-concat-transpose", "concatenate's transpose rejects constant operands (the concatenate VJP error)",
       only("strict_concat_transpose")},
      {"borrowed-residuals", "AD residuals borrow user handles (tracer disposal after the result)",
       only("borrowed_residuals")},
      {"identity-cache",
       "jit cache keyed by closure identity, never evicted; allocator never returns memory (memory growth)",
       only("identity_keyed_unbounded_cache")},
      {"no-workgroup-fusion", "no single-workgroup fusion for scans with intra-step dependencies (O(n) dispatches)",
       only("no_workgroup_scan_fusion")},
      // The JS runtime's releases in the buffer-limit document, each modelled as the switches
      // whose defects it showed there (its version table is kept in scenarios/buffer-limit.json).
      // v0.7.2 leaves borrowed residuals out: its rows show only the concatenate error, and our
      // residual check (at the start of the backward pass) would report the disposal first.
      {"v0.7.1", "JS runtime v0.7.1: fusion ignores the buffer budget; residuals borrowed",
       both("ignore_buffer_budget", "borrowed_residuals"), true},
      {"v0.7.2", "JS runtime v0.7.2: fusion ignores the buffer budget; strict concatenate transpose",
       both("ignore_buffer_budget", "strict_concat_transpose"), true},
      {"v0.7.3", "JS runtime v0.7.3: concatenate fixed; fusion still ignores the budget; residuals borrowed",
       both("ignore_buffer_budget", "borrowed_residuals"), true},
      {"v0.7.4", "JS runtime v0.7.4: buffer budget respected; residuals still borrowed", only("borrowed_residuals"),
       true},
  };
  return v;
}

const Profile& profile(const std::string& name) {
  for (const Profile& p : profiles())
    if (p.name == name) return p;
  std::vector<std::string> names;
  for (const Profile& p : profiles()) names.push_back(p.name);
  throw Error(fmt::format("replay: unknown profile '{}' (known: {})", name, fmt::join(names, ", ")));
}

}  // namespace jx::replay
