#pragma once
// The rule tables, one file per family; rules.cc merges them. A rule applies jx operations:
// the jx primitive of the same meaning when there is one (so jx's own text reads back into the
// same equations), else a composition of jx primitives that computes the same values and
// inherits their jvp, transpose and vmap rules.
#include <map>
#include <string>

#include "core/text/interp.h"

namespace jx::text {

using RuleTable = std::map<std::string, Rule, std::less<>>;
void add_elementwise_rules(RuleTable& t);  // rules_elementwise.cc
void add_structural_rules(RuleTable& t);   // rules_structural.cc: shapes, reductions, products
void add_index_rules(RuleTable& t);        // rules_index.cc: gather, scatter, dynamic slices
void add_control_rules(RuleTable& t);      // rules_control.cc: calls, scan, while, cond, cumulative
void add_numeric_rules(RuleTable& t);      // rules_numeric.cc: rounding, rem, integer div, tile, ...
void add_sort_linalg_rules(RuleTable& t);  // rules_sort_linalg.cc: sort, lu, custom_linear_solve

// Helpers shared by the rule files.
Array full_like(const Array& x, double v);        // a rank-0 literal broadcast to x's aval
Array scalar(double v, DType d);                  // a rank-0 literal
Array cast(const Array& x, DType d);              // convert unless already d
Array bcast(const Array& x, const Shape& shape);  // rank-0 or same-rank x broadcast to shape

}  // namespace jx::text
