// Parallel Kalman filter and RTS smoother as associative scans (Särkkä & García-Fernández,
// "Temporal parallelization of Bayesian smoothers", IEEE TAC 2021), in the toolbox's model:
//   x_t = G x_{t-1} + q_t, q ~ N(0, W);  y_t = F x_t + r_t, r ~ N(0, V_t²);  x_0 ~ N(x0, C0).
// (The toolbox's first prediction is x0 itself, so element 0 conditions the prior directly.)
#include "workloads/dlm/dlm_assoc.h"

namespace jx::dlm::detail {
namespace {

Array mv(const Array& A, const Array& x) { return np::einsum("nij,nj->ni", A, x); }
Array mT(const Array& A) { return np::swapaxes(A, -1, -2); }
// broadcast [m,m] / [m] to the leading batch n
Array batch(const Array& a, std::int64_t n) {
  Shape s = a.shape();
  s.insert(s.begin(), n);
  return np::broadcast_to(a, s);
}
// rows where `first` is set take a, the others b ([n] mask against [n,...] operands)
Array where_rows(const Array& mask, const Array& a, const Array& b) {
  Shape s(static_cast<std::size_t>(std::max(a.ndim(), b.ndim())), 1);
  s[0] = mask.shape()[0];
  return np::where(np::reshape(mask, s), a, b);
}

// Batched inverse [k,m,m]. m = 2 in closed form (adjugate / determinant: elementwise, so the
// compose stays one fused shader on GPU backends); larger m through LU (GLSL in the combine there).
Array inv(const Array& a) {
  if (a.shape().back() != 2) return np::linalg::inv(a);
  Shape lead(a.shape().begin(), a.shape().end() - 2);
  std::int64_t rows = 1;
  for (auto d : lead) rows *= d;
  Array flat = np::reshape(a, {rows, 4});  // [p q; r s] per row
  auto col = [&](std::int64_t j) { return np::index(flat, {np::Slice{}, j}); };
  Array p = col(0), q = col(1), r = col(2), s = col(3);
  Array det = p * s - q * r;
  Array adj = np::stack({s / det, q / det * -1.0, r / det * -1.0, p / det}, -1);
  Shape out = lead;
  out.push_back(2);
  out.push_back(2);
  return np::reshape(adj, out);
}

}  // namespace

AssocFilter assoc_filter(const Array& y, const Array& V, const Array& x0, const Array& G, const Array& F,
                         const Array& W, const Array& C0) {
  const DType d = y.dtype();
  const std::int64_t n = y.shape()[0], m = G.shape()[0];
  Array obs = np::logical_not(np::isnan(y));
  Array of = np::astype(obs, d);
  Array yz = np::where(obs, y, 0.0);
  Array first = np::equal(lax::iota(DType::int32, {n}, 0), 0.0);
  Array I = batch(np::eye(m, {}, 0, d), n);
  // Element t (t > 0), conditioning x_t ~ N(G x_{t-1}, W) on y_t:
  //   S = F W Fᵀ + V², K = W Fᵀ/S, A = (I - K F) G, b = K y, C = (I - K F) W,
  //   η = Gᵀ Fᵀ y / S, J = Gᵀ Fᵀ F G / S   (information about x_{t-1} from y_t)
  // Element 0 conditions the prior N(x0, C0): A = 0, b = x0 + K (y - F x0), C = (I - K F) C0, η = J = 0.
  // Missing y_t: 1/S := 0, so K = 0, η = J = 0.
  // F: one observation row [m], or a row per step [n,m] (covariates)
  const bool rows = F.ndim() == 2;
  Array P = where_rows(first, batch(C0, n), batch(W, n));
  Array S = (rows ? np::einsum("ni,nij,nj->n", F, P, F) : np::einsum("i,nij,j->n", F, P, F)) + V * V;
  Array Sinv = of / S;
  Array K = (rows ? np::einsum("nij,nj->ni", P, F) : np::einsum("nij,j->ni", P, F)) * np::expand_dims(Sinv, -1);
  Array IKF = I - (rows ? np::einsum("ni,nj->nij", K, F) : np::einsum("ni,j->nij", K, F));
  Array C = np::matmul(IKF, P);
  Array A = where_rows(first, np::zeros({n, m, m}, d), np::matmul(IKF, batch(G, n)));
  Array b = K * np::expand_dims(yz, -1) + where_rows(first, mv(IKF, batch(x0, n)), np::zeros({n, m}, d));
  Array notfirst = np::expand_dims(np::astype(np::logical_not(first), d), -1);
  Array eta, J;
  if (rows) {
    Array GF = np::einsum("ji,nj->ni", G, F);  // Gᵀ F_tᵀ [n,m]
    eta = GF * np::expand_dims(Sinv * yz, -1) * notfirst;
    J = np::einsum("ni,nj,n->nij", GF, GF, Sinv) * np::expand_dims(notfirst, -1);
  } else {
    Array GF = np::matmul(np::transpose(G), F);  // Gᵀ Fᵀ [m]
    eta = np::einsum("i,n->ni", GF, Sinv * yz) * notfirst;
    J = np::einsum("i,j,n->nij", GF, GF, Sinv) * np::expand_dims(notfirst, -1);
  }
  // (A_i, b_i, C_i, η_i, J_i) earlier ⊕ (A_j, b_j, C_j, η_j, J_j) later, with
  // M = (I + C_i J_j)⁻¹ and N = (I + J_j C_i)⁻¹:
  //   A = A_j M A_i, b = A_j M (b_i + C_i η_j) + b_j, C = A_j M C_i A_jᵀ + C_j,
  //   η = A_iᵀ N (η_j - J_j b_i) + η_i, J = A_iᵀ N J_j A_i + J_i.
  // C and J are symmetric, so N = ((I + C_i J_j)ᵀ)⁻¹ = Mᵀ and A_iᵀ N = (M A_i)ᵀ: one inverse per
  // combine (the m × m LU and its solves were most of a combine's work at m ≥ 8).
  using E = std::vector<Array>;
  auto compose = [](const E& i, const E& j) {
    const Array &Ai = i[0], &bi = i[1], &Ci = i[2], &ei = i[3], &Ji = i[4];
    const Array &Aj = j[0], &bj = j[1], &Cj = j[2], &ej = j[3], &Jj = j[4];
    const std::int64_t k = Ai.shape()[0], mm = Ai.shape()[1];
    Array Ik = batch(np::eye(mm, {}, 0, Ai.dtype()), k);
    Array M = inv(Ik + np::matmul(Ci, Jj));
    Array AjM = np::matmul(Aj, M);
    Array AiTN = mT(np::matmul(M, Ai));
    return E{np::matmul(AjM, Ai), mv(AjM, bi + mv(Ci, ej)) + bj, np::matmul(np::matmul(AjM, Ci), mT(Aj)) + Cj,
             mv(AiTN, ej - mv(Jj, bi)) + ei, np::matmul(np::matmul(AiTN, Jj), Ai) + Ji};
  };
  E pre = lax::associative_scan(compose, E{A, b, C, eta, J});
  AssocFilter r;
  r.xu = pre[1];
  r.Pu = pre[2];
  r.xp = np::einsum("ij,nj->ni", G, r.xu);
  r.Pp = np::matmul(np::matmul(batch(G, n), r.Pu), batch(np::transpose(G), n)) + W;
  return r;
}

std::pair<Array, Array> assoc_smoother(const AssocFilter& f, const Array& G) {
  const std::int64_t n = f.xu.shape()[0], m = G.shape()[0];
  const DType d = f.xu.dtype();
  Array last = np::equal(lax::iota(DType::int32, {n}, 0), static_cast<double>(n - 1));
  // Element t < n-1: E = P_t Gᵀ P_{t+1|t}⁻¹, g = x_t - E G x_t, L = P_t - E G P_t; element n-1:
  // (0, x_{n-1}, P_{n-1}). Later-first composition a ⊕ b (a later, b earlier):
  //   E = E_b E_a, g = E_b g_a + g_b, L = E_b L_a E_bᵀ + L_b  ->  smoothed (g, L).
  Array GP = np::matmul(batch(G, n), f.Pu);  // G P_t
  Array Et = mT(np::matmul(inv(f.Pp), GP));  // (P_pred⁻¹ G P)ᵀ = P Gᵀ P_pred⁻¹
  Array E0 = where_rows(last, np::zeros({n, m, m}, d), Et);
  Array g = f.xu - mv(E0, f.xp);
  Array L = f.Pu - np::matmul(E0, GP);
  using E = std::vector<Array>;
  auto compose = [](const E& a, const E& b) {
    return E{np::matmul(b[0], a[0]), mv(b[0], a[1]) + b[1], np::matmul(np::matmul(b[0], a[2]), mT(b[0])) + b[2]};
  };
  E post = lax::associative_scan(compose, E{E0, g, L}, /*reverse=*/true);
  return {post[1], post[2]};
}

}  // namespace jx::dlm::detail
