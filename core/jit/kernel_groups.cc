#include "core/jit/kernel_groups.h"

#include <algorithm>
#include <optional>
#include <string>

namespace jx {
namespace {

// The group being gathered: its members' steps, distinct inputs and outputs.
struct Gathering {
  std::vector<int> steps, in, out;

  // Bindings after adding a step reading `reads` (its new distinct inputs, and its output).
  int bindings_with(const std::vector<int>& reads) const {
    int extra = 1;
    std::vector<int> seen;
    for (int b : reads)
      if (std::find(in.begin(), in.end(), b) == in.end() && std::find(seen.begin(), seen.end(), b) == seen.end()) {
        seen.push_back(b);
        ++extra;
      }
    return static_cast<int>(in.size() + out.size()) + extra;
  }
  bool reads_member_output(const std::vector<int>& reads) const {
    return std::any_of(reads.begin(), reads.end(),
                       [&](int b) { return std::find(out.begin(), out.end(), b) != out.end(); });
  }
  void add(int step, const Step& st) {
    steps.push_back(step);
    for (int b : st.in)
      if (std::find(in.begin(), in.end(), b) == in.end()) in.push_back(b);
    out.push_back(st.out[0]);
  }
};

// The backend's executable for a gathering of two or more members (none: no group).
std::optional<KernelGroup> make_group(const Program& p, Backend& be, const Gathering& g) {
  if (g.steps.size() < 2) return std::nullopt;
  std::vector<Backend::GroupMember> members;
  std::vector<AVal> inputs;
  for (int b : g.in) inputs.push_back(p.buffers[b]);
  KernelGroup kg{g.steps, g.in, g.out, "", nullptr};
  for (int s : g.steps) {
    const Step& st = p.steps[s];
    Backend::GroupMember m{&p.kernels[st.index], {}};
    for (int b : st.in) m.binds.push_back(static_cast<int>(std::find(g.in.begin(), g.in.end(), b) - g.in.begin()));
    kg.name += (kg.name.empty() ? "" : "+") + m.kernel->name;
    members.push_back(std::move(m));
  }
  kg.exe = be.prepare_kernel_group(members, inputs);
  if (!kg.exe) return std::nullopt;
  return kg;
}

}  // namespace

std::vector<KernelGroup> plan_kernel_groups(const Program& p, Backend& be, int max_bindings) {
  std::vector<KernelGroup> groups;
  Gathering g;
  auto close = [&] {
    if (auto kg = make_group(p, be, g)) groups.push_back(std::move(*kg));
    g = Gathering{};
  };
  for (int s = 0; s < static_cast<int>(p.steps.size()); ++s) {
    const Step& st = p.steps[s];
    if (st.kind == Step::Kind::free) continue;
    const bool joins = st.kind == Step::Kind::kernel && st.out.size() == 1 && p.kernels[st.index].out.size() > 0 &&
                       be.kernel_joins_group(p.kernels[st.index]);
    if (!joins) {
      close();
      continue;
    }
    const bool fits = max_bindings <= 0 || g.bindings_with(st.in) <= max_bindings;
    if (!fits || g.reads_member_output(st.in)) close();
    g.add(s, st);
  }
  close();
  return groups;
}

}  // namespace jx
