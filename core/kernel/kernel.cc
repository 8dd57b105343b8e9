#include "core/kernel/kernel.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace jx {

std::string Kernel::str() const {
  std::string s = fmt::format("kernel {} -> {} over {}", name, out.str(), shape_str(space));
  if (is_reduction()) s += fmt::format(" {} axes {}", prim_name(reduce_op), shape_str(reduce_axes));
  s += "\n";
  for (std::size_t i = 0; i < inputs.size(); ++i) s += fmt::format("  in{}: {}\n", i, inputs[i].str());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const KNode& n = nodes[i];
    std::string rhs;
    switch (n.kind) {
      case KNodeKind::load: {
        const KLoad& l = loads[n.load];
        rhs = l.indexed ? fmt::format("load in{}[{}%{}]", l.buffer, l.clamp ? "clamp " : "", n.a)
                        : fmt::format("load in{}[{}{} + {}·i]", l.buffer, l.clamp ? "clamp " : "", l.offset,
                                      shape_str(l.strides));
        break;
      }
      case KNodeKind::constant: rhs = fmt::format("const {}", n.value); break;
      case KNodeKind::iota: rhs = fmt::format("index i{}", n.dim); break;
      case KNodeKind::reduce_result: rhs = "acc"; break;
      case KNodeKind::alu:
        rhs = fmt::format("{} %{}", prim_name(n.prim), n.a);
        if (n.b >= 0) rhs += fmt::format(" %{}", n.b);
        if (n.c >= 0) rhs += fmt::format(" %{}", n.c);
        break;
    }
    s += fmt::format("  %{}:{} = {}\n", i, dtype_short_name(n.dtype), rhs);
  }
  s += fmt::format("  body %{}{}", body, epilogue >= 0 ? fmt::format(", epilogue %{}", epilogue) : "");
  return s;
}

std::vector<int> Kernel::reachable(int root) const {
  if (root < 0) return {};
  std::vector<bool> need(nodes.size(), false);
  need[root] = true;
  for (int i = root; i >= 0; --i)
    if (need[i] && (nodes[i].kind == KNodeKind::alu || nodes[i].kind == KNodeKind::load))
      for (int a : {nodes[i].a, nodes[i].b, nodes[i].c})
        if (a >= 0) need[a] = true;
  std::vector<int> order;
  for (std::size_t i = 0; i < need.size(); ++i)
    if (need[i]) order.push_back(static_cast<int>(i));
  return order;
}

std::string Kernel::key() const {
  std::string k = fmt::format("{}|{}|{}|{}|{}|{}|{}|", out.str(), shape_str(space), shape_str(reduce_axes),
                              static_cast<int>(reduce_op), body, epilogue, scratch_binding ? "s" : "");
  for (auto& a : inputs) k += a.str() + ",";
  for (auto& n : nodes)
    k += fmt::format("{}:{}:{}:{}:{}:{}:{}:{}:{};", static_cast<int>(n.kind), static_cast<int>(n.dtype),
                     static_cast<int>(n.prim), n.a, n.b, n.c, n.load, n.value, n.dim);
  for (auto& l : loads)
    k +=
        fmt::format("{}@{}{}{}{};", l.buffer, l.offset, shape_str(l.strides), l.clamp ? "c" : "", l.indexed ? "x" : "");
  return k;
}

}  // namespace jx
