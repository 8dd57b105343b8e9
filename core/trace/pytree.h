#pragma once
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "core/array/array.h"

// Pytrees: nested lists/tuples and string-keyed dicts of arrays, flattened to leaves plus a
// TreeDef and rebuilt like jax.tree_util. C++ types map onto trees through jx::PyTree<T>:
// Array, Tree, std::vector<T>, std::map<std::string, T>, std::pair, std::tuple are built in;
// register a struct by specializing PyTree<T> with `static Tree to(const T&)` and
// `static T from(const Tree&)` (see tests/test_transforms_api.cc).
namespace jx {

class Tree {
 public:
  using List = std::vector<Tree>;
  using Dict = std::map<std::string, Tree>;
  Tree(Array a) : node_(std::move(a)) {}  // NOLINT: implicit by design
  Tree(List l) : node_(std::move(l)) {}   // NOLINT
  Tree(Dict d) : node_(std::move(d)) {}   // NOLINT
  bool is_leaf() const { return node_.index() == 0; }
  bool is_list() const { return node_.index() == 1; }
  const Array& leaf() const;
  const List& list() const;
  const Dict& dict() const;
  const Tree& operator[](std::size_t i) const { return list().at(i); }
  const Tree& operator[](const std::string& k) const;

 private:
  std::variant<Array, List, Dict> node_;
};

struct TreeDef {
  enum class Kind { leaf, list, dict } kind = Kind::leaf;
  std::vector<std::string> keys;  // dict keys, sorted
  std::vector<TreeDef> children;
  std::size_t num_leaves() const;
  std::string str() const;  // "*", "[*, {a: *}]"
  bool operator==(const TreeDef&) const = default;
};

std::pair<std::vector<Array>, TreeDef> tree_flatten(const Tree& t);
Tree tree_unflatten(const TreeDef& def, std::span<const Array> leaves);  // throws on a count mismatch

template <class T>
struct PyTree;
template <>
struct PyTree<Array> {
  static Tree to(const Array& a) { return a; }
  static Array from(const Tree& t) { return t.leaf(); }
};
template <>
struct PyTree<Tree> {
  static Tree to(const Tree& t) { return t; }
  static Tree from(const Tree& t) { return t; }
};
template <class T>
struct PyTree<std::vector<T>> {
  static Tree to(const std::vector<T>& v) {
    Tree::List l;
    for (const auto& x : v) l.push_back(PyTree<T>::to(x));
    return l;
  }
  static std::vector<T> from(const Tree& t) {
    std::vector<T> v;
    for (const auto& x : t.list()) v.push_back(PyTree<T>::from(x));
    return v;
  }
};
template <class T>
struct PyTree<std::map<std::string, T>> {
  static Tree to(const std::map<std::string, T>& m) {
    Tree::Dict d;
    for (const auto& [k, x] : m) d.emplace(k, PyTree<T>::to(x));
    return d;
  }
  static std::map<std::string, T> from(const Tree& t) {
    std::map<std::string, T> m;
    for (const auto& [k, x] : t.dict()) m.emplace(k, PyTree<T>::from(x));
    return m;
  }
};
template <class... T>
struct PyTree<std::tuple<T...>> {
  static Tree to(const std::tuple<T...>& v) {
    return std::apply([](const auto&... x) { return Tree(Tree::List{PyTree<std::decay_t<decltype(x)>>::to(x)...}); },
                      v);
  }
  static std::tuple<T...> from(const Tree& t) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) { return std::tuple<T...>{PyTree<T>::from(t[I])...}; }
    (std::index_sequence_for<T...>{});
  }
};
template <class A, class B>
struct PyTree<std::pair<A, B>> {
  static Tree to(const std::pair<A, B>& v) { return Tree::List{PyTree<A>::to(v.first), PyTree<B>::to(v.second)}; }
  static std::pair<A, B> from(const Tree& t) { return {PyTree<A>::from(t[0]), PyTree<B>::from(t[1])}; }
};

template <class T>
std::pair<std::vector<Array>, TreeDef> flatten(const T& x) {
  return tree_flatten(PyTree<T>::to(x));
}
template <class T>
T unflatten(const TreeDef& def, std::span<const Array> leaves) {
  return PyTree<T>::from(tree_unflatten(def, leaves));
}

}  // namespace jx
