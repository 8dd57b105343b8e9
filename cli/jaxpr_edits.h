#pragma once
// The edits jxlab reduce tries on a program (cli/reduce.cc): each returns a smaller program, or
// nullopt where the edit does not apply or the result no longer types.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/ir/jaxpr.h"

namespace jx::lab {

// Whether variable `var` is read by an equation from `from` on, or is an output.
bool used_after(const Jaxpr& j, int var, std::size_t from);
// Equations none of whose outputs is read go (the runtime's primitives have no side effects).
void drop_dead(Jaxpr& j);
// Equation i deleted: its outputs that something reads become inputs of the same type.
Jaxpr without_eqn(const Jaxpr& j, std::size_t i);
// Equation i bypassed: its one output replaced everywhere by its operand k of the same type.
std::optional<Jaxpr> bypassed(const Jaxpr& j, std::size_t i, std::size_t k);
// Input k replaced by a constant (ones of its type, made by a broadcast equation at the front).
Jaxpr input_as_constant(const Jaxpr& j, std::size_t k);
// The dimension sizes of the program's types but not of its constvars, largest first.
std::vector<std::int64_t> sizes_of(const Jaxpr& j);
// Every dimension n made m (types, shape tuples, scan lengths, in bodies too).
std::optional<Jaxpr> resized(const Jaxpr& j, std::int64_t n, std::int64_t m);
// The bodies of a control equation (scan, associative_scan, while's body and cond, cond's
// branches), to edit in place.
std::vector<std::shared_ptr<const SubProgram>*> bodies(Eqn& e);
// In body `which` of equation `e`, equation `k` replaced by zeros of its outputs' types.
std::optional<Jaxpr> body_cut(const Jaxpr& j, std::size_t e, std::size_t which, std::size_t k);
// Equations that read a variable, and all of them with the bodies of control primitives.
std::size_t count_eqns(const Jaxpr& j);
std::size_t count_all(const Jaxpr& j);

}  // namespace jx::lab
