#include "core/text/rules.h"

namespace jx::text {
namespace {

const RuleTable& table() {
  static const RuleTable t = [] {
    RuleTable r;
    add_elementwise_rules(r);
    add_structural_rules(r);
    add_index_rules(r);
    add_control_rules(r);
    add_numeric_rules(r);  // after the elementwise ones: its div also takes integers
    add_sort_linalg_rules(r);
    return r;
  }();
  return t;
}

}  // namespace

const Rule* find_rule(const std::string& prim) {
  auto it = table().find(prim);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> rule_names() {
  std::vector<std::string> v;
  for (const auto& [k, r] : table()) v.push_back(k);
  return v;
}

}  // namespace jx::text
