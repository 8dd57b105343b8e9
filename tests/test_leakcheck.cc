#include "leakcheck/leakcheck.h"
#include "tests/helpers.h"

using namespace jx;

TEST(LeakCheck, CleanScopesPass) {
  LeakCheck scope("clean");
  {
    Array a = np::ones({4});
    Array b = np::exp(a) * 2.0 + 1.0;
    EXPECT_EQ(b.size(), 4);
  }
  EXPECT_TRUE(scope.leaked().empty());
  scope.check();
}

TEST(LeakCheck, ReportsEachLeakedSlotWithDtypeAndShape) {
  Array escaped;
  std::string msg;
  try {
    LeakCheck scope("escape");
    escaped = np::zeros({2, 3}, DType::float64);
    Array tmp = np::ones({5});  // freed before the check
  } catch (const LeakError& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("leak check 'escape': 1 slot leaked (48 bytes): #"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float64[2,3] (48 bytes)"), std::string::npos) << msg;
  escaped.dispose();
}

TEST(LeakCheck, AssertNoLeaksAndWithLeakCheck) {
  auto base = leak_baseline();
  Array a = np::ones({2}, DType::int32), b = np::ones({3}, DType::bool_);
  auto leaked = leaked_since(base);
  ASSERT_EQ(leaked.size(), 2u);
  EXPECT_EQ(leaked[0].tag.str(), "int32[2]");
  EXPECT_EQ(leaked[1].tag.str(), "bool[3]");
  EXPECT_TRUE(jxt::throws_with<LeakError>([&] { assert_no_leaks(base, "two"); },
                                          {"leak check 'two': 2 slots leaked (11 bytes)"}));
  a.dispose();
  b.dispose();
  assert_no_leaks(base, "none");
  double s = with_leak_check([] { return np::sum(np::arange(5)).item<double>(); });
  EXPECT_DOUBLE_EQ(s, 10.0);
  Array out;
  EXPECT_THROW(with_leak_check([&] { out = np::ones({1}); }, "escaping"), LeakError);
  out.dispose();
}

TEST(LeakCheck, FailedOpsLeakNothing) {
  LeakCheck scope("errors");
  Array x = np::ones({2, 3});
  EXPECT_THROW(np::add(x, np::ones({4})), ShapeError);
  EXPECT_THROW(np::linalg::inv(np::array({{1.0, 2.0}, {2.0, 4.0}})), LinAlgError);
  EXPECT_THROW(np::linalg::cholesky(np::array({{-1.0}})), LinAlgError);
  x.dispose();
  scope.check();
}

TEST(LeakCheck, ScopeDoesNotThrowWhileUnwinding) {
  Array keep;
  EXPECT_THROW(
      {
        LeakCheck scope("unwinding");
        keep = np::ones({1});
        throw std::runtime_error("boom");
      },
      std::runtime_error);
  keep.dispose();
}
