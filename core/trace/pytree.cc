#include "core/trace/pytree.h"

#include <fmt/format.h>

namespace jx {

const Array& Tree::leaf() const {
  if (!is_leaf()) throw ShapeError("pytree: expected an array leaf, found a list or dict");
  return std::get<Array>(node_);
}
const Tree::List& Tree::list() const {
  if (node_.index() != 1) throw ShapeError("pytree: expected a list/tuple node");
  return std::get<List>(node_);
}
const Tree::Dict& Tree::dict() const {
  if (node_.index() != 2) throw ShapeError("pytree: expected a dict node");
  return std::get<Dict>(node_);
}
const Tree& Tree::operator[](const std::string& k) const {
  auto it = dict().find(k);
  if (it == dict().end()) throw ShapeError(fmt::format("pytree: no key '{}'", k));
  return it->second;
}

std::size_t TreeDef::num_leaves() const {
  if (kind == Kind::leaf) return 1;
  std::size_t n = 0;
  for (const auto& c : children) n += c.num_leaves();
  return n;
}

std::string TreeDef::str() const {
  if (kind == Kind::leaf) return "*";
  std::string s = kind == Kind::list ? "[" : "{";
  for (std::size_t i = 0; i < children.size(); ++i)
    s += fmt::format("{}{}{}", i ? ", " : "", kind == Kind::dict ? keys[i] + ": " : "", children[i].str());
  return s + (kind == Kind::list ? "]" : "}");
}

namespace {
void flatten_into(const Tree& t, std::vector<Array>& leaves, TreeDef& def) {
  if (t.is_leaf()) {
    def.kind = TreeDef::Kind::leaf;
    leaves.push_back(t.leaf());
    return;
  }
  if (t.is_list()) {
    def.kind = TreeDef::Kind::list;
    for (const auto& c : t.list()) flatten_into(c, leaves, def.children.emplace_back());
    return;
  }
  def.kind = TreeDef::Kind::dict;
  for (const auto& [k, c] : t.dict()) {
    def.keys.push_back(k);
    flatten_into(c, leaves, def.children.emplace_back());
  }
}

Tree build(const TreeDef& def, std::span<const Array> leaves, std::size_t& pos) {
  switch (def.kind) {
    case TreeDef::Kind::leaf: return leaves[pos++];
    case TreeDef::Kind::list: {
      Tree::List l;
      for (const auto& c : def.children) l.push_back(build(c, leaves, pos));
      return l;
    }
    case TreeDef::Kind::dict: {
      Tree::Dict d;
      for (std::size_t i = 0; i < def.children.size(); ++i) d.emplace(def.keys[i], build(def.children[i], leaves, pos));
      return d;
    }
  }
  return Tree::List{};
}
}  // namespace

std::pair<std::vector<Array>, TreeDef> tree_flatten(const Tree& t) {
  std::vector<Array> leaves;
  TreeDef def;
  flatten_into(t, leaves, def);
  return {leaves, def};
}

Tree tree_unflatten(const TreeDef& def, std::span<const Array> leaves) {
  if (leaves.size() != def.num_leaves())
    throw ShapeError(
        fmt::format("pytree: {} leaves given for a tree {} of {} leaves", leaves.size(), def.str(), def.num_leaves()));
  std::size_t pos = 0;
  return build(def, leaves, pos);
}

}  // namespace jx
