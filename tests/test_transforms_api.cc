#include "core/transform/rules.h"
#include "leakcheck/leakcheck.h"
#include "tests/helpers.h"

using namespace jx;
using jxt::all_close;
using jxt::vals;

namespace {
Array f64(std::initializer_list<np::Nested> v) { return np::array(v, DType::float64); }
double num(const Array& a) { return a.item<double>(); }
}  // namespace

// A user struct registered as a pytree: a dict {G, W}.
struct Model {
  Array G, W;
};
template <>
struct jx::PyTree<Model> {
  static Tree to(const Model& m) { return Tree::Dict{{"G", m.G}, {"W", m.W}}; }
  static Model from(const Tree& t) { return {t["G"].leaf(), t["W"].leaf()}; }
};

TEST(MakeJaxpr, PrintsLikeJax) {
  auto j = make_jaxpr([](const Array& a) { return lax::mul(a, a); })(np::ones({2, 2}));
  EXPECT_EQ(j.str(), "{ lambda ; a:f32[2,2]. let b:f32[2,2] = mul a a in (b,) }");
  auto k = make_jaxpr([](const Array& x, const Array& y) { return np::sum(np::exp(x) * 2.0 + y); })(np::ones({3}),
                                                                                                    np::ones({3}));
  EXPECT_EQ(k.str(),
            "{ lambda ; a:f32[3] b:f32[3]. let\n"
            "    c:f32[3] = exp a\n"
            "    d:f32[3] = broadcast_in_dim[shape=(3,) broadcast_dimensions=()] 2.0:f32[]\n"
            "    e:f32[3] = mul c d\n"
            "    f:f32[3] = add e b\n"
            "    g:f32[] = reduce_sum[axes=(0,)] f\n"
            "  in (g,) }");
  // a captured non-scalar constant becomes a constvar
  Array w = np::array({1.0, 2.0, 3.0});
  auto c = make_jaxpr([&](const Array& x) { return x * w; })(np::ones({3}));
  EXPECT_EQ(c.str(), "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = mul b a in (c,) }");
  EXPECT_EQ(c.consts.size(), 1u);
  typecheck(c.jaxpr);
}

TEST(MakeJaxpr, TypecheckCatchesBrokenJaxprs) {
  auto j = make_jaxpr([](const Array& a) { return lax::exp(a); })(np::ones({2}));
  Jaxpr bad = j.jaxpr;
  bad.avals[bad.eqns[0].out[0]] = AVal{DType::float32, {3}};
  EXPECT_TRUE(jxt::throws_with<Error>([&] { typecheck(bad); }, {"typecheck: equation 0 (exp) output 0 is float32[3]"}));
  Jaxpr undefined = j.jaxpr;
  undefined.eqns[0].in[0].var = 7;
  EXPECT_THROW(typecheck(undefined), Error);
}

TEST(Grad, BasicsAndArgnums) {
  auto f = [](const Array& x) { return np::sum(x * x * x); };  // d/dx = 3x²
  Array x = f64({1.0, -2.0, 0.5});
  EXPECT_TRUE(all_close(grad(f)(x), {3, 12, 0.75}));
  auto [v, g] = value_and_grad(f)(x);
  EXPECT_DOUBLE_EQ(num(v), 1 - 8 + 0.125);
  EXPECT_TRUE(all_close(g, {3, 12, 0.75}));
  auto h = [](const Array& a, const Array& b, const Array& c) { return np::sum(a * b + c); };
  auto [v2, gs] = value_and_grad(h, argnums<0, 2>)(x, f64({2.0, 3.0, 4.0}), f64({0.0, 0.0, 0.0}));
  EXPECT_DOUBLE_EQ(num(v2), 2 - 6 + 2);
  EXPECT_TRUE(all_close(std::get<0>(gs), {2, 3, 4}));
  EXPECT_TRUE(all_close(std::get<1>(gs), {1, 1, 1}));
  EXPECT_TRUE(all_close(grad(h, argnums<1>)(x, x, x), vals(x)));
}

TEST(Grad, HasAux) {
  auto f = [](const Array& x) { return std::pair<Array, Array>{np::sum(np::sin(x)), np::cos(x) * 2.0}; };
  Array x = f64({0.1, 0.2});
  auto [va, g] = value_and_grad(f, argnums<0>, has_aux)(x);
  EXPECT_NEAR(num(va.first), std::sin(0.1) + std::sin(0.2), 1e-15);
  EXPECT_TRUE(all_close(va.second, {2 * std::cos(0.1), 2 * std::cos(0.2)}));
  EXPECT_TRUE(all_close(g, {std::cos(0.1), std::cos(0.2)}));
  auto [g2, aux] = grad(f, argnums<0>, has_aux)(x);
  EXPECT_TRUE(all_close(g2, vals(g)));
  EXPECT_TRUE(all_close(aux, vals(va.second)));
}

TEST(Grad, Errors) {
  EXPECT_TRUE(
      jxt::throws_with<ShapeError>([] { grad([](const Array& x) { return x * 2.0; })(np::ones({3})); },
                                   {"grad: the differentiated function must return a real scalar", "float32[3]"}));
  EXPECT_TRUE(
      jxt::throws_with<ShapeError>([] { grad([](const Array& x) { return np::sum(x); })(np::ones({2}, DType::int32)); },
                                   {"floating-point", "int32[2]"}));
}

TEST(Nested, GradOfGrad) {
  auto f = [](const Array& x) { return np::sin(x) * x; };  // f'' = 2cos x - x sin x
  auto df = grad([&](const Array& x) { return f(x); });
  auto d2f = grad([&](const Array& x) { return df(x); });
  const double x0 = 0.7;
  EXPECT_NEAR(num(d2f(np::scalar(x0, DType::float64))), 2 * std::cos(x0) - x0 * std::sin(x0), 1e-14);
  auto d3f = grad([&](const Array& x) { return d2f(x); });  // -3 sin x - x cos x
  EXPECT_NEAR(num(d3f(np::scalar(x0, DType::float64))), -3 * std::sin(x0) - x0 * std::cos(x0), 1e-13);
}

TEST(Nested, VmapOfGradGivesPerExampleGradients) {
  auto loss = [](const Array& w, const Array& x) { return np::sum(np::tanh(w * x)); };
  Array w = f64({0.5, -1.0});
  Array xs = f64({{1.0, 2.0}, {3.0, 4.0}, {-1.0, 0.5}});
  Array per = vmap(grad(loss), {std::nullopt, 0})(w, xs);
  ASSERT_EQ(per.shape(), (Shape{3, 2}));
  for (int b = 0; b < 3; ++b) {
    Array g = grad(loss)(w, np::index(xs, {std::int64_t{b}}));
    EXPECT_TRUE(all_close(np::index(per, {std::int64_t{b}}), vals(g), 1e-14, 1e-14));
  }
}

// Forward mode over several arguments of different dtypes and shapes (one vmapped jvp over all
// their scalars), with aux-free scalar output: the same values and gradients as reverse mode;
// an argument the value does not depend on gets zeros.
TEST(ForwardMode, SeveralArgumentsAndDtypesEqualReverseMode) {
  auto f = [](const Array& w, const Array& b, const Array& unused) {
    return np::sum(np::tanh(np::matmul(w, f64({0.5, -1.0, 2.0})) + lax::convert_element_type(b, DType::float64))) +
           0.0 * np::sum(unused * 0.0);
  };
  Array w = f64({{0.1, 0.2, -0.3}, {0.4, -0.5, 0.6}});
  Array b = np::array({0.25f, -0.75f});
  Array u = f64({1.0, 2.0, 3.0});
  auto [v, g] = value_and_grad(f, argnums<0, 1, 2>)(w, b, u);
  auto [fv, fg] = value_and_grad(f, argnums<0, 1, 2>, forward_mode)(w, b, u);
  auto [jv, jg] = jit(value_and_grad(f, argnums<0, 1, 2>, forward_mode))(w, b, u);
  EXPECT_DOUBLE_EQ(fv.item<double>(), v.item<double>());
  EXPECT_DOUBLE_EQ(jv.item<double>(), v.item<double>());
  EXPECT_EQ(std::get<0>(fg).shape(), (Shape{2, 3}));
  EXPECT_EQ(std::get<1>(fg).dtype(), DType::float32);
  EXPECT_TRUE(all_close(std::get<0>(fg), vals(std::get<0>(g)), 1e-14, 1e-14));
  EXPECT_TRUE(all_close(std::get<1>(fg), vals(std::get<1>(g)), 1e-6, 1e-6));
  EXPECT_TRUE(all_close(std::get<2>(fg), {0.0, 0.0, 0.0}, 0, 0));
  EXPECT_TRUE(all_close(std::get<0>(jg), vals(std::get<0>(g)), 1e-14, 1e-14));
  EXPECT_TRUE(all_close(std::get<1>(jg), vals(std::get<1>(g)), 1e-6, 1e-6));
}

TEST(Nested, JvpOfVjpIsHessianVectorProduct) {
  auto f = [](const Array& x) { return np::sum(np::exp(x) * x * x); };
  Array x = f64({0.2, -0.4, 1.1}), v = f64({1.0, 2.0, -1.0});
  auto gradf = [&](const Array& y) {
    auto [out, pb] = vjp(f, y);
    return std::get<0>(pb(np::ones({}, DType::float64)));
  };
  auto [g, hv] = jvp(gradf, std::tuple{x}, std::tuple{v});
  Array h = hessian(f)(x);
  EXPECT_TRUE(all_close(hv, vals(np::matmul(h, v)), 1e-13, 1e-13));
  // the Hessian of sum(e^x x²) is diagonal with e^x (x² + 4x + 2)
  std::vector<double> want;
  for (double xi : vals(x)) want.push_back(std::exp(xi) * (xi * xi + 4 * xi + 2));
  EXPECT_TRUE(all_close(np::diagonal(h), want, 1e-13, 1e-13));
  EXPECT_TRUE(all_close(g, vals(grad(f)(x)), 1e-15, 1e-15));
}

TEST(Jacobians, ForwardReverseHessian) {
  auto f = [](const Array& x) {
    return np::stack({np::sum(x * x), np::prod(x), np::sin(np::index(x, {std::int64_t{0}}))});
  };
  Array x = f64({0.3, -1.2, 2.0});
  Array jf = jacfwd(f)(x), jr = jacrev(f)(x);
  EXPECT_EQ(jf.shape(), (Shape{3, 3}));
  EXPECT_TRUE(all_close(jf, vals(jr), 1e-14, 1e-14));
  EXPECT_TRUE(all_close(jf, {0.6, -2.4, 4.0, -2.4, 0.6, -0.36, std::cos(0.3), 0, 0}, 1e-14, 1e-14));
  auto g = [](const Array& x) { return np::sum(x * x * x) + np::prod(x); };
  Array hs = hessian(g)(x);
  // H = diag(6x) + offdiag of prod: d²/dxi dxj prod = prod / (xi xj)
  EXPECT_TRUE(all_close(hs, {1.8, 2.0, -1.2, 2.0, -7.2, 0.3, -1.2, 0.3, 12.0}, 1e-13, 1e-13));
  Array m = f64({{1.0, 2.0}, {3.0, 4.0}});
  Array jm = jacrev([](const Array& a) { return np::matmul(a, a); })(m);
  EXPECT_EQ(jm.shape(), (Shape{2, 2, 2, 2}));
  EXPECT_TRUE(all_close(jm, vals(jacfwd([](const Array& a) { return np::matmul(a, a); })(m)), 1e-14, 1e-14));
}

TEST(Transforms, JvpLinearizeVjpTyped) {
  auto f = [](const Array& x, const Array& y) { return np::sin(x) * y; };
  Array x = f64({0.5, 1.0}), y = f64({2.0, 3.0});
  auto [out, tan] = jvp(f, std::tuple{x, y}, std::tuple{f64({1.0, 0.0}), f64({0.0, 1.0})});
  EXPECT_TRUE(all_close(tan, {2 * std::cos(0.5), std::sin(1.0)}, 1e-15));
  auto [out2, lin] = linearize(f, x, y);
  EXPECT_TRUE(all_close(lin(f64({1.0, 0.0}), f64({0.0, 1.0})), vals(tan), 1e-15));
  EXPECT_TRUE(all_close(out2, vals(out)));
  auto [out3, pb] = vjp(f, x, y);
  auto [cx, cy] = pb(f64({1.0, 1.0}));
  EXPECT_TRUE(all_close(cx, {2 * std::cos(0.5), 3 * std::cos(1.0)}, 1e-15));
  EXPECT_TRUE(all_close(cy, {std::sin(0.5), std::sin(1.0)}, 1e-15));
  pb.dispose();
  EXPECT_TRUE(jxt::throws_with<UseAfterDispose>([&p = pb] { p(f64({1.0, 1.0})); }, {"pullback", "dispose"}));
  EXPECT_THROW(jvp(f, std::tuple{x, y}, std::tuple{f64({1.0}), y}), ShapeError);
}

TEST(Transforms, StopGradient) {
  auto f = [](const Array& x) { return np::sum(x * stop_gradient(x)); };
  EXPECT_TRUE(all_close(grad(f)(f64({2.0, 3.0})), {2, 3}));
}

TEST(Pytrees, DictsVectorsTuplesAndStructs) {
  auto loss = [](const std::map<std::string, Array>& p, const std::vector<Array>& xs) {
    Array s = np::zeros({}, DType::float64);
    for (const Array& x : xs) s = s + np::sum(p.at("w") * x + p.at("b"));
    return s;
  };
  std::map<std::string, Array> p{{"w", f64({1.0, 2.0})}, {"b", f64({0.5, 0.5})}};
  std::vector<Array> xs{f64({1.0, 1.0}), f64({2.0, 3.0})};
  auto g = grad(loss)(p, xs);
  EXPECT_TRUE(all_close(g.at("w"), {3, 4}));
  EXPECT_TRUE(all_close(g.at("b"), {2, 2}));
  auto model_loss = [](const Model& m, const Array& x) { return np::sum(np::matmul(m.G, x) * m.W); };
  Model m{f64({{1.0, 2.0}, {3.0, 4.0}}), f64({1.0, -1.0})};
  Model gm = grad(model_loss)(m, f64({1.0, 2.0}));
  EXPECT_TRUE(all_close(gm.G, {1, 2, -1, -2}));
  EXPECT_TRUE(all_close(gm.W, {5, 11}));
  auto [leaves, def] = flatten(std::tuple{m, xs});
  EXPECT_EQ(leaves.size(), 4u);
  EXPECT_EQ(def.str(), "[{G: *, W: *}, [*, *]]");
  EXPECT_THROW(tree_unflatten(def, std::vector<Array>(3, np::ones({1}))), ShapeError);
  auto sq = vmap([](const std::pair<Array, Array>& ab) { return ab.first * ab.second; })(
      std::pair{f64({1.0, 2.0}), f64({3.0, 4.0})});
  EXPECT_TRUE(all_close(sq, {3, 8}));
}

TEST(Vmap, AxesAndErrors) {
  Array x = f64({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  Array colsum = vmap([](const Array& c) { return np::sum(c); }, {1})(x);
  EXPECT_TRUE(all_close(colsum, {5, 7, 9}));
  Array outer = vmap([](const Array& r) { return r * 2.0; }, {0}, 1)(x);
  EXPECT_EQ(outer.shape(), (Shape{3, 2}));
  EXPECT_TRUE(all_close(outer, {2, 8, 4, 10, 6, 12}));
  auto mm = vmap([](const Array& a, const Array& b) { return np::matmul(a, b); }, {0, std::nullopt});
  EXPECT_EQ(mm(np::ones({4, 2, 3}), np::ones({3, 5})).shape(), (Shape{4, 2, 5}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>(
      [&] { vmap([](const Array& a, const Array& b) { return a + b; })(np::ones({2}), np::ones({3})); },
      {"vmap: inconsistent sizes for the mapped axes: 2 and 3"}));
  Array nested = vmap([](const Array& r) { return vmap([](const Array& e) { return e * e; })(r); })(x);
  EXPECT_TRUE(all_close(nested, {1, 4, 9, 16, 25, 36}));
}

TEST(Tracers, ReadingOrEscapingIsAnError) {
  EXPECT_TRUE(jxt::throws_with<TracerError>(
      [] {
        grad([](const Array& x) {
          (void)x.item<double>();
          return np::sum(x);
        })(np::ones({1}));
      },
      {"cannot read the value of traced Array:float32[1]"}));
  Array leaked;
  (void)grad([&](const Array& x) {
    leaked = x * 2.0;
    return np::sum(x);
  })(np::ones({2}));
  EXPECT_TRUE(jxt::throws_with<TracerError>([&] { np::exp(leaked); }, {"escaped from the jvp transformation"}));
  leaked.dispose();
}

// Residual ownership: a helper that disposes every local handle (the `using` pattern),
// including intermediates of the compose and the handles to values it returned to it.
namespace {
struct Triple {
  Array a, b, c;
};
Triple compose(const Triple& x, const Triple& y) {  // (a1·a0, a1·b0 + b1, a1·c0 + c1)
  Array ab = y.a * x.b;
  Array ac = y.a * x.c;
  Triple r{y.a * x.a, ab + y.b, ac + y.c};
  ab.dispose();
  ac.dispose();
  return r;
}
Array triple_loss(const Array& theta, int n) {
  Array e = np::exp(theta);  // [1]
  Triple acc{e, e, np::ones({1}, theta.dtype())};
  Array total = acc.a + acc.b + acc.c;
  for (int t = 1; t < n; ++t) {
    Triple el{e, e, np::ones({1}, theta.dtype())};
    Triple next = compose(acc, el);
    el.a.dispose();
    el.b.dispose();
    el.c.dispose();
    acc.a.dispose();
    acc.b.dispose();
    acc.c.dispose();
    acc = next;
    Array s = acc.a + acc.b + acc.c;
    Array nt = total + s;
    s.dispose();
    total.dispose();
    total = nt;
  }
  e.dispose();
  Array out = np::sum(total);
  total.dispose();
  return out;
}
}  // namespace

TEST(ResidualOwnership, DisposingHelperKeepsBackwardPassIntactAndLeakFree) {
  LeakCheck scope("residual ownership");
  {
    Array theta = np::array({0.5}, DType::float64);
    auto [v, g] = value_and_grad([](const Array& th) { return triple_loss(th, 20); })(theta);
    EXPECT_NEAR(num(v), 284451.7727106761, 1e-7);
    EXPECT_NEAR(g.item<double>(), 4813870.5205, 1e-3);
    Array t32 = np::array({0.5});
    auto [v32, g32] = value_and_grad([](const Array& th) { return triple_loss(th, 20); })(t32);
    EXPECT_NEAR(num(v32), 284451.6875, 0.5);
    EXPECT_NEAR(g32.item<double>(), 4813868.5, 8.0);
  }
  scope.check();
}

TEST(Transpose, NonlinearPrimitiveNamesItself) {
  Jaxpr j;
  const int a = j.new_var({DType::float64, {2}}), b = j.new_var({DType::float64, {2}});
  j.invars = {a, b};
  const int c = j.new_var({DType::float64, {2}});
  j.eqns.push_back({Prim::mul, {}, {{a, {}}, {b, {}}}, {c}});
  j.outs = {{c, {}}};
  EXPECT_TRUE(jxt::throws_msg<NonlinearError>([&] { backward_pass(j, {}, {np::ones({2}, DType::float64)}); },
                                              "Nonlinear operation in backward pass for mul"));
  j.eqns[0] = {Prim::exp, {}, {{a, {}}}, {c}};
  EXPECT_TRUE(jxt::throws_msg<NonlinearError>([&] { backward_pass(j, {}, {np::ones({2}, DType::float64)}); },
                                              "Nonlinear operation in backward pass for exp"));
}

TEST(Transpose, ConcatenateOfConstantsAndLinearValues) {
  // The JS runtime v0.7.2 failure: concatenate where some operands are constants.
  Array k1 = f64({10.0, 20.0}), k2 = f64({30.0});
  auto f = [&](const Array& x) {
    return np::sum(np::concatenate({k1, x * x, k2, x}) * np::arange(0, 7, 1, DType::float64));
  };
  // weights 0..6: x*x at positions 2,3 and x at 5,6
  Array x = f64({1.5, -2.0});
  EXPECT_TRUE(all_close(grad(f)(x), {2 * 1.5 * 2 + 5, 2 * -2.0 * 3 + 6}));
  // the linear jaxpr keeps the constants as concatenate operands and transposes anyway
  auto [y, lin] = linearize(f, x);
  EXPECT_NE(lin.linear().jaxpr().str().find("concatenate"), std::string::npos);
}

TEST(LinalgGrad, InverseOfThetaDependentMatrix) {
  // d/dθ inv(θ) at θ = 5 is -1/θ² = -0.04 (the JS runtime once gave -0.24, off by θ+1)
  auto f = [](const Array& th) { return np::sum(np::linalg::inv(np::reshape(th, {1, 1}))); };
  EXPECT_NEAR(grad(f)(np::scalar(5.0, DType::float64)).item<double>(), -0.04, 1e-15);
  // A(θ) = [[θ, 1, 0], [θ², 2, θ], [1, θ, 3]]; compare d/dθ sum(inv(A) ⊙ W) with central differences
  Array w = f64({{1.0, -2.0, 0.5}, {0.3, 1.0, 2.0}, {-1.0, 0.7, 1.5}});
  auto g = [&](const Array& th) {
    Array t = np::reshape(th, {1});
    Array one = np::ones({1}, DType::float64), zero = np::zeros({1}, DType::float64);
    Array a = np::reshape(np::concatenate({t, one, zero, t * t, one * 2.0, t, one, t, one * 3.0}), {3, 3});
    return np::sum(np::linalg::inv(a) * w);
  };
  const double th = 1.3, h = 1e-6;
  const double fd =
      (g(np::scalar(th + h, DType::float64)).item<double>() - g(np::scalar(th - h, DType::float64)).item<double>()) /
      (2 * h);
  const double ad = grad(g)(np::scalar(th, DType::float64)).item<double>();
  EXPECT_NEAR(ad, fd, 1e-6 * std::abs(fd));
}

TEST(LinalgGrad, SlogdetGradientIsInverseTranspose) {
  Array a = f64({{3.0, 1.0, 0.5}, {0.2, 2.0, 0.1}, {1.0, -0.5, 4.0}});
  Array g = grad([](const Array& m) { return np::linalg::slogdet(m).second; })(a);
  EXPECT_TRUE(all_close(g, vals(np::transpose(np::linalg::inv(a))), 1e-13, 1e-13));
  Array gl = grad([](const Array& m) { return np::sum(np::linalg::cholesky(np::matmul(m, np::transpose(m)))); })(a);
  EXPECT_EQ(gl.shape(), (Shape{3, 3}));
}
