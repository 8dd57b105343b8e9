#include <algorithm>
#include <map>
#include <set>

#include "core/np/np_internal.h"

namespace jx::np {

Array matmul(const Array& a0, const Array& b0) {
  if (a0.ndim() == 0 || b0.ndim() == 0)
    throw ShapeError(fmt::format("matmul: scalar operands are not allowed ({} with {}); use multiply", a0.aval().str(),
                                 b0.aval().str()));
  const bool av = a0.ndim() == 1, bv = b0.ndim() == 1;
  Array a = av ? expand_dims(a0, 0) : a0;
  Array b = bv ? expand_dims(b0, -1) : b0;
  const std::int64_t m = a.shape()[a.ndim() - 2], k = a.shape().back();
  const std::int64_t k2 = b.shape()[b.ndim() - 2], n = b.shape().back();
  if (k != k2)
    throw ShapeError(fmt::format("matmul: contracting dimensions differ: {} with {} ({} != {})", a0.aval().str(),
                                 b0.aval().str(), k, k2));
  Shape batch;
  try {
    batch =
        broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2), Shape(b.shape().begin(), b.shape().end() - 2));
  } catch (const ShapeError&) {
    throw ShapeError(
        fmt::format("matmul: cannot broadcast batch dimensions of {} with {}", a0.aval().str(), b0.aval().str()));
  }
  const DType d = promote(a.dtype(), b.dtype()) == DType::bool_ ? DType::int32 : promote(a.dtype(), b.dtype());
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {m, k});
  sb.insert(sb.end(), {k, n});
  a = detail::cast(detail::broadcast_as("matmul", a, sa), d);
  b = detail::cast(detail::broadcast_as("matmul", b, sb), d);
  const auto nb = static_cast<std::int64_t>(batch.size());
  lax::DotDims dims{{nb + 1}, {nb}, {}, {}};
  for (std::int64_t i = 0; i < nb; ++i) {
    dims.lhs_batch.push_back(i);
    dims.rhs_batch.push_back(i);
  }
  Array r = lax::dot_general(a, b, dims);
  if (av && bv) return reshape(r, batch);
  if (av) return squeeze(r, std::vector<std::int64_t>{-2});
  if (bv) return squeeze(r, std::vector<std::int64_t>{-1});
  return r;
}

Array dot(const Array& a, const Array& b) {
  if (a.ndim() == 0 || b.ndim() == 0) return multiply(a, b);
  return matmul(a, b);
}

namespace {
[[noreturn]] void einsum_fail(const std::string& spec, const std::string& why) {
  throw ShapeError(fmt::format("einsum: {} in '{}'", why, spec));
}

// The operand terms and output letters of a spec (spaces dropped; implicit mode: the letters
// seen once, alphabetical), checked: one term per operand, letters only, no repeated output.
std::pair<std::vector<std::string>, std::string> parse_einsum(const std::string& spec, std::size_t operands) {
  auto fail = [&](const std::string& why) { einsum_fail(spec, why); };
  std::string s;
  for (char c : spec)
    if (c != ' ') s += c;
  const auto arrow = s.find("->");
  std::string lhs = s.substr(0, arrow);
  std::vector<std::string> terms;
  for (std::size_t p = 0;;) {
    auto q = lhs.find(',', p);
    terms.push_back(lhs.substr(p, q == std::string::npos ? std::string::npos : q - p));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  if (terms.size() != operands) fail(fmt::format("{} operand terms for {} operands", terms.size(), operands));
  std::map<char, int> count;
  for (auto& t : terms)
    for (char c : t) {
      if (c == '.') fail("ellipsis is not supported");
      if (!std::isalpha(static_cast<unsigned char>(c))) fail(fmt::format("invalid character '{}'", c));
      count[c]++;
    }
  std::string out;
  if (arrow != std::string::npos) {
    out = s.substr(arrow + 2);
    for (char c : out) {
      if (!count.count(c)) fail(fmt::format("output letter '{}' does not appear in any operand", c));
      if (std::count(out.begin(), out.end(), c) > 1) fail(fmt::format("output letter '{}' repeated", c));
    }
  } else {
    for (auto& [c, n] : count)
      if (n == 1) out += c;  // implicit mode: letters seen once, alphabetical
  }
  return {terms, out};
}

// Step 1 on one operand: a letter repeated inside its term takes the diagonal ("ii->i"), the
// letter moving to the end of the term.
Array take_diagonals(Array x, std::string& t) {
  for (bool again = true; again;) {  // step 1
    again = false;
    for (std::size_t p = 0; p < t.size() && !again; ++p)
      for (std::size_t q = p + 1; q < t.size() && !again; ++q)
        if (t[p] == t[q]) {
          x = diagonal(x, 0, static_cast<std::int64_t>(p), static_cast<std::int64_t>(q));
          const char c = t[p];
          t.erase(q, 1);
          t.erase(p, 1);
          t += c;
          again = true;
        }
  }
  return x;
}
}  // namespace

// einsum by pairwise contraction, left to right:
//  1. repeated letters inside one operand take the diagonal ("ii->i");
//  2. letters seen in one operand only and absent from the output are summed away first;
//  3. each step contracts the letters shared by the running result and the next operand that
//     no later operand or the output needs; shared letters still needed become batch dims;
//  4. the result is transposed into the output order.
Array einsum(const std::string& spec, const std::vector<Array>& operands) {
  // named members, not a structured binding: clang 14 lambdas cannot capture those
  const auto parsed = parse_einsum(spec, operands.size());
  const std::vector<std::string>& terms = parsed.first;
  const std::string& out = parsed.second;
  std::map<char, std::int64_t> size;
  std::vector<Array> xs;
  std::vector<std::string> ls;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    const Array& x = operands[i];
    std::string t = terms[i];
    if (t.size() != x.ndim())
      einsum_fail(spec, fmt::format("term '{}' has {} letters but operand {} is {}", t, t.size(), i, x.aval().str()));
    for (std::size_t j = 0; j < t.size(); ++j) {
      auto [it, fresh] = size.emplace(t[j], x.shape()[j]);
      if (!fresh && it->second != x.shape()[j])
        einsum_fail(spec, fmt::format("size of label '{}' differs ({} vs {} in operand {} {})", t[j], it->second,
                                      x.shape()[j], i, x.aval().str()));
    }
    xs.push_back(take_diagonals(x, t));
    ls.push_back(t);
  }
  auto needed_after = [&](char c, std::size_t i) {
    if (out.find(c) != std::string::npos) return true;
    for (std::size_t j = i + 1; j < ls.size(); ++j)
      if (ls[j].find(c) != std::string::npos) return true;
    return false;
  };
  auto sum_private = [&](Array x, std::string& t, std::size_t i) {  // step 2
    std::vector<std::int64_t> axes;
    std::string kept;
    for (std::size_t p = 0; p < t.size(); ++p) {
      bool elsewhere = needed_after(t[p], i);
      for (std::size_t j = 0; j < i && !elsewhere; ++j) elsewhere = ls[j].find(t[p]) != std::string::npos;
      if (elsewhere)
        kept += t[p];
      else
        axes.push_back(static_cast<std::int64_t>(p));
    }
    t = kept;
    return axes.empty() ? x : sum(x, axes);
  };
  Array cur = sum_private(xs[0], ls[0], 0);
  std::string ct = ls[0];
  DType d = cur.dtype();
  for (std::size_t i = 1; i < xs.size(); ++i) {  // step 3
    Array nx = sum_private(xs[i], ls[i], i);
    const std::string& nt = ls[i];
    d = promote(d, nx.dtype());
    lax::DotDims dims;
    std::string batch, cfree, nfree;
    for (std::size_t p = 0; p < ct.size(); ++p) {
      auto q = nt.find(ct[p]);
      if (q == std::string::npos) continue;
      if (needed_after(ct[p], i)) {
        dims.lhs_batch.push_back(static_cast<std::int64_t>(p));
        dims.rhs_batch.push_back(static_cast<std::int64_t>(q));
        batch += ct[p];
      } else {
        dims.lhs_contract.push_back(static_cast<std::int64_t>(p));
        dims.rhs_contract.push_back(static_cast<std::int64_t>(q));
      }
    }
    for (char c : ct)
      if (nt.find(c) == std::string::npos) cfree += c;
    for (char c : nt)
      if (ct.find(c) == std::string::npos) nfree += c;
    const DType dd = d == DType::bool_ ? DType::int32 : d;
    cur = lax::dot_general(detail::cast(cur, dd), detail::cast(nx, dd), dims);
    ct = batch + cfree + nfree;
  }
  std::vector<std::int64_t> perm;  // step 4
  for (char c : out) perm.push_back(static_cast<std::int64_t>(ct.find(c)));
  return transpose(cur, perm);
}

}  // namespace jx::np
