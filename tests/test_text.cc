// Programs as data: jx's printed jaxprs read back to the same text for every primitive, JAX's
// own jaxprs (the shared samples and tests/data/jaxpr, written by JAX 0.11.2) give JAX's values
// on the default backend (JX_DEVICE), and malformed text gets file:line:column errors.
#include <filesystem>
#include <map>
#include <set>

#include "core/transform/control.h"
#include "core/text/interp.h"
#include "core/text/load.h"
#include "core/transform/control_internal.h"
#include "tests/prim_cases.h"

namespace jxt {
namespace {

namespace fs = std::filesystem;
using jx::text::load_program;
using jx::text::ParseError;

void collect(const Jaxpr& j, std::set<Prim>& seen) {
  for (const Eqn& e : j.eqns) {
    seen.insert(e.prim);
    for (const auto* sub : {&e.params.body, &e.params.tangent_of, &e.params.cond})
      if (*sub) collect(static_cast<const JaxprBody&>(**sub).jaxpr, seen);
  }
}

// parse(print(j)) prints the same text, and evaluates to the same values.
void round_trip(const Jaxpr& j, std::set<Prim>& seen, const std::string& what) {
  SCOPED_TRACE(what);
  const std::string text = j.str();
  jx::text::Program p;
  ASSERT_NO_THROW(p = load_program(text, what)) << text;
  EXPECT_EQ(p.jaxpr.str(), text);
  collect(p.jaxpr, seen);
}

std::vector<AVal> avals_of(const std::vector<Array>& xs) {
  std::vector<AVal> v;
  for (const Array& x : xs) v.push_back(x.aval());
  return v;
}

// Every case of the primitive table, its linearization and its vmap.
void table_round_trips(std::set<Prim>& seen) {
  for (const Case& c : cases()) {
    const auto x = random_inputs(c, 1);
    const ClosedJaxpr j = make_jaxpr_flat(flat(c.f), avals_of(x));
    round_trip(j.jaxpr, seen, c.name);
    // the printed text evaluates to the case's values
    auto p = load_program(j.jaxpr.str(), c.name);
    std::vector<Array> args;
    for (const Array& k : j.consts) args.push_back(k);
    args.insert(args.end(), x.begin(), x.end());
    EXPECT_TRUE(all_close(jx::text::run_program(p, args)[0], vals(c.f(x)), 1e-12, 1e-12)) << c.name;
    if (c.differentiable) round_trip(vjp_flat(flat(c.f), x).second.jaxpr().jaxpr, seen, c.name + " (linearized)");
    std::vector<std::optional<std::int64_t>> axes(x.size(), 0);
    std::vector<AVal> batched;
    for (AVal a : avals_of(x)) {
      a.shape.insert(a.shape.begin(), 2);
      batched.push_back(a);
    }
    round_trip(make_jaxpr_flat(vmap_flat(flat(c.f), axes), batched).jaxpr, seen, c.name + " (vmapped)");
  }
}

// scan, associative_scan and while_loop, under jvp (the pair scan's tangent_of), vmap, linearize.
void control_round_trips(std::set<Prim>& seen) {
  FlatFn loop = [](const std::vector<Array>& in) {
    auto [c, ys] = lax::scan(
        [](const Array& c, const Array& x) {
          return std::pair{lax::add(lax::mul(c, x), x), lax::sin(c)};
        },
        in[0], in[1]);
    auto pre = lax::associative_scan([](const Array& a, const Array& b) { return lax::add(a, lax::mul(a, b)); }, ys);
    auto w = lax::while_loop([](const std::vector<Array>& v) { return lax::lt(v[0], np::full({}, 3.0, DType::int32)); },
                             [](const std::vector<Array>& v) {
                               return std::vector<Array>{v[0] + np::full({}, 1.0, DType::int32), v[1] * 1.5};
                             },
                             std::vector<Array>{np::zeros({}, DType::int32), c});
    auto k = lax::convert_element_type(lax::gt(np::sum(in[0]), np::zeros({}, in[0].dtype())), DType::int32);
    auto sw = cond_flat(k,
                        {[](const std::vector<Array>& v) { return std::vector<Array>{lax::sin(v[0])}; },
                         [](const std::vector<Array>& v) { return std::vector<Array>{lax::log(v[0])}; }},
                        {w[1]});
    return std::vector<Array>{sw[0] + np::sum(pre)};
  };
  const std::vector<Array> x{np::array(std::vector<double>{0.3, -0.2}, Shape{2}, DType::float64),
                             np::array(randn(10, 3), Shape{5, 2}, DType::float64)};
  round_trip(make_jaxpr_flat(loop, avals_of(x)).jaxpr, seen, "scan + associative_scan + while_loop + cond");
  // forward mode through all three (the pair scan carries tangent_of), and vmap
  FlatFn jvp_fn = [&](const std::vector<Array>& in) { return jvp_flat(loop, {in[0], in[1]}, {in[0], in[1]}).second; };
  round_trip(make_jaxpr_flat(jvp_fn, avals_of(x)).jaxpr, seen, "jvp");
  std::vector<AVal> b;
  for (AVal a : avals_of(x)) {
    a.shape.insert(a.shape.begin(), 3);
    b.push_back(a);
  }
  round_trip(make_jaxpr_flat(vmap_flat(loop, {0, 0}), b).jaxpr, seen, "vmap");
  FlatFn scan_only = [&](const std::vector<Array>& in) {
    return std::vector<Array>{np::sum(lax::scan(
                                          [](const Array& c, const Array& v) {
                                            return std::pair{lax::mul(c, v), c};
                                          },
                                          in[0], in[1])
                                          .second)};
  };
  round_trip(vjp_flat(scan_only, x).second.jaxpr().jaxpr, seen, "linearized scan");
}

TEST(TextRoundTrip, EveryPrimitiveOfPrimsDefReadsBackToTheSameText) {
  std::set<Prim> seen;
  table_round_trips(seen);
  control_round_trips(seen);
  std::vector<std::string> missing;
  for (int i = 0; i < kNumPrims; ++i)
    if (!seen.count(static_cast<Prim>(i))) missing.push_back(std::string(prim_name(static_cast<Prim>(i))));
  EXPECT_TRUE(missing.empty()) << fmt::format("not round-tripped: {}", fmt::join(missing, ", "));
}

TEST(TextWhileLoop, ValuesForwardModeAndVmapMatchAHostLoop) {
  FlatFn f = [](const std::vector<Array>& in) {
    return lax::while_loop(
        [](const std::vector<Array>& v) { return lax::lt(np::sum(v[0]), np::full({}, 10.0, v[0].dtype())); },
        [](const std::vector<Array>& v) { return std::vector<Array>{v[0] * 1.5 + 0.25}; }, in);
  };
  Array x = np::array(std::vector<double>{0.5, 1.0}, Shape{2}, DType::float64);
  std::vector<double> want{0.5, 1.0};
  int steps = 0;
  while (want[0] + want[1] < 10) {
    for (double& v : want) v = v * 1.5 + 0.25;
    ++steps;
  }
  EXPECT_TRUE(all_close(f({x})[0], want));
  // d/dx of the final carry at a fixed trip count: 1.5^steps
  auto t = jvp_flat(f, {x}, {np::ones({2}, DType::float64)}).second[0];
  EXPECT_TRUE(all_close(t, {std::pow(1.5, steps), std::pow(1.5, steps)}));
  EXPECT_THROW(vjp_flat([&](const std::vector<Array>& in) { return std::vector<Array>{np::sum(f(in)[0])}; }, {x})
                   .second.transpose({np::ones({}, DType::float64)}),
               NonlinearError);
  // two examples with different trip counts: each keeps its own carry once done
  Array xb = np::array(std::vector<double>{0.5, 1.0, 4.0, 5.5}, Shape{2, 2}, DType::float64);
  auto r = vals(vmap_flat(f, {0})({xb})[0]);
  auto r1 = vals(f({np::array(std::vector<double>{4.0, 5.5}, Shape{2}, DType::float64)})[0]);
  EXPECT_TRUE(all_close(std::vector<double>(r.begin(), r.begin() + 2), want));
  EXPECT_TRUE(all_close(std::vector<double>(r.begin() + 2, r.end()), r1));
  EXPECT_TRUE(all_close(jit([&](const Array& a) { return f({a})[0]; })(x), want));
}

TEST(TextCond, OnlyTheChosenBranchCountsInValuesAndGradients) {
  // log of a negative input in the branch not taken: no nan in the value or the gradient
  FlatFn f = [](const std::vector<Array>& in) {
    auto k = lax::convert_element_type(lax::gt(np::sum(in[0]), np::full({}, 100.0, in[0].dtype())), DType::int32);
    return cond_flat(k,
                     {[](const std::vector<Array>& v) { return std::vector<Array>{np::sum(v[0] * 2.0)}; },
                      [](const std::vector<Array>& v) { return std::vector<Array>{np::sum(lax::log(v[0]))}; }},
                     in);
  };
  Array x = np::array(std::vector<double>{-1.0, 2.0, -3.0}, Shape{3}, DType::float64);
  EXPECT_TRUE(all_close(f({x})[0], {-4.0}));
  auto [y, lin] = vjp_flat(f, {x});
  EXPECT_TRUE(all_close(lin.transpose({np::ones({}, DType::float64)})[0], {2.0, 2.0, 2.0}));
  EXPECT_TRUE(all_close(jvp_flat(f, {x}, {np::ones({3}, DType::float64)}).second[0], {6.0}));
  EXPECT_TRUE(all_close(jit([&](const Array& a) { return f({a})[0]; })(x), {-4.0}));
  // vmap over the operand: each example its own branch (the index is batched)
  Array xb = np::array(std::vector<double>{-1.0, 2.0, -3.0, 50.0, 60.0, 70.0}, Shape{2, 3}, DType::float64);
  EXPECT_TRUE(
      all_close(vmap_flat(f, {0})({xb})[0], {-4.0, std::log(50.0) + std::log(60.0) + std::log(70.0)}, 1e-12, 1e-12));
  EXPECT_THROW(cond_flat(np::zeros({}, DType::float32), {f}, {x}), ShapeError);
}

// Every JAX case file: JAX's outputs, on the default backend.
class JaxCase : public ::testing::TestWithParam<std::string> {};

std::vector<std::string> jax_case_files() {
  std::vector<std::string> v;
  for (const char* d : {"tests/data/jaxpr", "tests/data/jaxpr/shared"})
    for (const auto& e : fs::directory_iterator(fs::path(source_dir()) / d))
      if (e.path().extension() == ".json") v.push_back(e.path().string());
  std::sort(v.begin(), v.end());
  return v;
}

TEST_P(JaxCase, MatchesJaxOutputs) {
  const auto cf = jx::text::read_case_file(GetParam());
  const auto p = load_program(cf.jaxpr, GetParam());
  std::vector<Array> args;
  for (const auto* list : {&cf.consts, &cf.inputs})
    for (const auto& t : *list) args.push_back(jx::text::to_array(t));
  const auto out = jx::text::run_program(p, args);
  ASSERT_TRUE(cf.outputs);
  ASSERT_EQ(out.size(), cf.outputs->size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const bool f32 = out[i].dtype() == DType::float32;
    EXPECT_TRUE(all_close(vals(out[i]), (*cf.outputs)[i].data, f32 ? 2e-5 : 1e-10, f32 ? 2e-6 : 1e-12))
        << GetParam() << " output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Files, JaxCase, ::testing::ValuesIn(jax_case_files()), [](const auto& info) {
  std::string n =
      fs::path(info.param).stem().string() + (info.param.find("/shared/") != std::string::npos ? "_shared" : "");
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
});

// JAX programs with primitives jx does not have: a ParseError naming the primitive and its line.
TEST(TextErrors, UnsupportedJaxProgramsNameThePrimitiveAndLine) {
  const std::map<std::string, std::string> want{
      {"abs_sign_copysign", ":9:17: bitcast_convert_type: primitive 'bitcast_convert_type'"},
      {"atan2_arctan", ":2:5: atan2: primitive 'atan2' is not supported"},
      {"erf_normcdf", ":11:5: erfc: primitive 'erfc' is not supported"},
      {"random_normal", ":1:32: dtype key<fry> is not supported"},
      {"convolve", ":16:17: conv_general_dilated: primitive 'conv_general_dilated' is not supported"}};
  for (const auto& [name, fragment] : want) {
    const auto path = fs::path(source_dir()) / "tests/data/jaxpr/unsupported" / (name + ".json");
    const auto cf = jx::text::read_case_file(path);
    try {
      (void)load_program(cf.jaxpr, path.string());
      ADD_FAILURE() << name << " loaded";
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  }
}

// Malformed or unsupported text: ParseError naming the place.
void expect_error(const std::string& text, const std::string& fragment) {
  try {
    (void)load_program(text, "case.jaxpr");
    ADD_FAILURE() << "no error for: " << text;
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(TextErrors, NameTheFileLineAndColumn) {
  expect_error("{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) ",
               "case.jaxpr:1:51: expected '}', found end of input");
  expect_error("{ lambda ; a:f32[3]. let\n  b:f32[3] = frobnicate a\n in (b,) }",
               "case.jaxpr:2:3: frobnicate: primitive 'frobnicate' is not supported");
  expect_error("{ lambda ; a:f32[3]. let\n  b:f32[4] = sin a\n in (b,) }",
               "case.jaxpr:2:3: sin: result 0 is float32[3], the text declares float32[4]");
  expect_error("{ lambda ; a:f32[3]. let b:f32[3] = sin zz in (b,) }", "case.jaxpr:1:41: undefined variable 'zz'");
  expect_error("{ lambda ; a:f32[3] a:f32[3]. let in (a,) }", "variable 'a' is defined twice");
  expect_error("{ lambda ; a:u8[3]. let in (a,) }", "case.jaxpr:1:12: dtype u8 is not supported");
  expect_error("{ lambda ; a:f32[100000000000,100000000]. let in (a,) }", "more than 2^40 elements");
  expect_error("{ lambda ; a:i32[]. let b:i32[] = add a 99999999999:i32[] in (b,) }", "does not fit int32");
  // JAX's rounding primitives take floats only (their composition through int32 held a 2^52
  // literal of the operand's dtype: UBSan, scripts/fuzz 2026-11-28)
  for (const char* prim : {"floor", "ceil", "trunc", "round"})
    expect_error(fmt::format("{{ lambda ; a:i32[3]. let b:i32[3] = {} a in (b,) }}", prim),
                 fmt::format("{}: takes a floating operand, not int32[3]", prim));
  expect_error("{ lambda ; a:f32[2]. let b:f32[2] = add a a\n c:f32[2] = mul b $ in (c,) }",
               "case.jaxpr:2:19: unexpected character '$'");
  expect_error("{ lambda ; a:f32[2]. let b:f32[2] = cumsum[axis=0 reverse=maybe] a in (b,) }",
               "parameter 'reverse' must be True or False");
  std::string deep =
      "{ lambda ; a:f32[2]. let b:f32[2] = sin[x=" + std::string(200, '(') + std::string(200, ')') + "] a in (b,) }";
  expect_error(deep, "nesting deeper than 64 levels");
  // a jaxpr whose scan body does not type
  expect_error(
      "{ lambda ; a:f32[3]. let b:f32[] c:f32[3] = scan[jaxpr={ lambda ; d:f32[] e:f32[]. let f:f32[] = add d e in (f, "
      "d, d) } "
      "length=3 num_consts=0 num_carry=1 reverse=False] 0.0:f32[] a in (b, c) }",
      "scan");
}

TEST(TextRoundTrip, LiteralsOfEveryDtype) {
  // jx's print of literals of each dtype reads back: signs, infinities, nan; a float32 printed as
  // the double it is, as JAX prints it (1e-30f is 1.0000000031710769e-30)
  FlatFn f = [](const std::vector<Array>& in) {
    Array x = in[0], y = in[1], i = in[2], b = in[3];
    const auto lit = [](double v, DType d) { return literal_array(jx::Atom::lit(v, d)); };
    return std::vector<Array>{lax::add(lax::mul(x, lit(-2.5, DType::float32)), lit(1e-30, DType::float32)),
                              lax::max(lax::add(y, lit(0.1, DType::float64)), lit(-INFINITY, DType::float64)),
                              lax::min(y, lit(NAN, DType::float64)),
                              lax::sub(i, lit(-2147483647, DType::int32)),
                              lax::logical_and(b, lit(1, DType::bool_)),
                              lax::logical_or(b, lit(0, DType::bool_))};
  };
  const ClosedJaxpr j = make_jaxpr_flat(
      f, {AVal{DType::float32, {}}, AVal{DType::float64, {}}, AVal{DType::int32, {}}, AVal{DType::bool_, {}}});
  const std::string text = j.jaxpr.str();
  for (const char* lit : {"-2.5:f32[]", "1.0000000031710769e-30:f32[]", "0.1:f64[]", "-inf:f64[]", "nan:f64[]",
                          "-2147483647:i32[]", "True:bool[]", "False:bool[]"})
    EXPECT_NE(text.find(lit), std::string::npos) << lit << " in " << text;
  auto p = load_program(text);
  EXPECT_EQ(p.jaxpr.str(), text);
  const std::vector<Array> args{np::scalar(1.5, DType::float32), np::scalar(0.5, DType::float64),
                                np::scalar(2, DType::int32), np::scalar(1, DType::bool_)};
  const auto got = jx::text::run_program(p, args), want = f(args);
  for (std::size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(all_close(got[k], vals(want[k]), 0, 0)) << k;
}

TEST(TextLoader, AVariableNamedInIsNotTheEndOfTheEquations) {
  auto p = load_program("{ lambda ; in:f32[2]. let out:f32[2] = sin in\n in (out,) }");
  EXPECT_TRUE(all_close(jx::text::run_program(p, {np::zeros({2}, DType::float32)})[0], {0.0, 0.0}));
  // nor is one named inf at the start of a line; inf after an operand is the literal
  auto q = load_program(
      "{ lambda ; a:f32[2]. let b:f32[2] = sin a\n    inf:f32[2] = add b inf:f32[]\n    nan:f32[2] = min inf a\n  in "
      "(nan,) }");
  EXPECT_TRUE(all_close(jx::text::run_program(q, {np::zeros({2}, DType::float32)})[0], {0.0, 0.0}));
}

TEST(TextErrors, InputsOfTheWrongTypeAreShapeErrors) {
  auto p = load_program("{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }");
  EXPECT_THROW(jx::text::run_program(p, {np::ones({4}, DType::float32)}), ShapeError);
  EXPECT_THROW(jx::text::run_program(p, {}), ShapeError);
}

TEST(TextLoader, BareTextGetsGeneratedInputsAndJaxSpellingsRead) {
  // untyped literals (JAX before 0.4.36) are weak: they take the other operand's dtype
  auto p = load_program("{ lambda ; a:f32[3] b:i32[]. let c:f32[3] = mul a 2.0; d:i32[] = add b 1 in (c, d) }");
  auto in = jx::text::generate_inputs(p, 7);
  ASSERT_EQ(in.size(), 2u);
  std::vector<Array> args{jx::text::to_array(in[0]), jx::text::to_array(in[1])};
  auto out = jx::text::run_program(p, args);
  EXPECT_TRUE(all_close(vals(out[0]), {in[0].data[0] * 2, in[0].data[1] * 2, in[0].data[2] * 2}, 1e-6, 1e-6));
  EXPECT_EQ(out[1].item<double>(), in[1].data[0] + 1);
}

}  // namespace
}  // namespace jxt
