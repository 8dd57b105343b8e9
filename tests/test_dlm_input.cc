// dlm::parse_input and read_input (issue 33): CSV and JSON input, the toolbox's and dlm-js's
// option names, and the input that used to give wrong numbers with exit 0.
#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <fmt/format.h>

#include "tests/helpers.h"
#include "workloads/dlm/dlm.h"
#include "workloads/dlm/dlm_io.h"

using namespace jx;

// Input that used to give wrong numbers with exit 0 (issue 33): a CSV's blank lines are
// missing values (the series no longer shifts), a byte-order mark is skipped, infinities are
// refused; dlm-js's option names mean what the toolbox's do; an unknown option names the known
// ones. Library level; tests/dlm_cli_inputs.sh checks the same through jxlab.
TEST(DlmInput, CsvBlankLinesByteOrderMarkAndNonFiniteValues) {
  dlm::Input in = dlm::parse_input("\xEF\xBB\xBFy\n1\n\n3\n \nNA\n5\n\n\n", "t.csv");
  ASSERT_EQ(in.y.size(), 6u);  // header, 1, blank, 3, blank, NA, 5; the two blank lines at the end dropped
  EXPECT_EQ(in.y[0], 1);
  EXPECT_TRUE(std::isnan(in.y[1]));
  EXPECT_EQ(in.y[2], 3);
  EXPECT_TRUE(std::isnan(in.y[3]) && std::isnan(in.y[4]));
  EXPECT_EQ(in.y[5], 5);
  EXPECT_TRUE(
      jxt::throws_with<ShapeError>([] { dlm::parse_input("1\n-inf\n", "t.csv"); }, {"t.csv: line 2", "not finite"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([] { dlm::parse_input(R"({"y": [1, 1e999], "s": 1, "w": 1})", "t.json"); },
                                           {"t.json: invalid JSON"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([] { dlm::parse_input(R"({"y": [null, null], "s": 1, "w": 1})", "t.json"); },
                                           {"no observed value (all 2 are missing)"}));
}

// CSV numbers are read as from_chars reads them, bit for bit, whichever way the reader takes
// (plain decimals up to 2^53 with at most 22 places fast, the rest through from_chars).
TEST(DlmInput, CsvNumbersAsFromChars) {
  std::vector<std::string> cells{"0",
                                 "-0",
                                 "-0.0",
                                 "1.",
                                 ".5",
                                 "-.25",
                                 "007.50",
                                 "9007199254740992",
                                 "9007199254740993",
                                 "0.1",
                                 "0.3",
                                 "123456789.123456789",
                                 "1e3",
                                 "-2.5E-3",
                                 "1.0000000000000000000001",
                                 "12345678901234567890",
                                 "3.14159265358979323846"};
  std::uint64_t state = 42;
  for (int i = 0; i < 20000; ++i) {  // random decimals of 1 to 21 digits, the point anywhere
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const int len = 1 + static_cast<int>((state >> 33) % 21), point = static_cast<int>((state >> 13) % (len + 1));
    std::string c = (state >> 7) % 3 == 0 ? "-" : "";
    for (int d = 0; d < len; ++d) {
      if (d == point) c += '.';
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      c += static_cast<char>('0' + (state >> 40) % 10);
    }
    cells.push_back(c);
  }
  std::string text;
  for (const std::string& c : cells) text += c + (cells.size() % 2 ? " \n" : "\n");
  const dlm::Input in = dlm::parse_input(text, "n.csv");
  ASSERT_EQ(in.y.size(), cells.size());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    double want = 0;
    std::from_chars(cells[i].data(), cells[i].data() + cells[i].size(), want);
    ASSERT_EQ(std::bit_cast<std::uint64_t>(in.y[i]), std::bit_cast<std::uint64_t>(want)) << cells[i];
  }
}

// A CSV over 256 KB is read in two halves at once: the values, the blank lines at the cut (each
// a missing value when a value follows, dropped at the end) and the line number in an error of
// either half are as one reading would give.
TEST(DlmInput, LargeCsvReadInTwoHalvesAsInOne) {
  std::string text = "level\n";
  std::vector<double> want;
  for (int i = 0; i < 60000; ++i) {
    if (i % 997 == 0) {
      text += "\n \n";  // two missing values
      want.insert(want.end(), 2, NAN);
    }
    text += fmt::format("{}.25\n", i);
    want.push_back(i + 0.25);
  }
  text += "\n\n";
  ASSERT_GT(text.size(), std::size_t{256} << 10);
  // the cut (the first line break after the middle) falls on every kind of line somewhere in
  // these shifts: a value, a blank line, the second of two
  for (int shift = 0; shift < 12; ++shift) {
    const std::string t = std::string(shift, '\n') + text.substr(text.find('\n') + 1);
    const dlm::Input in = dlm::parse_input(t, "big.csv");
    ASSERT_EQ(in.y.size(), want.size() + shift) << "shift " << shift;
    for (int i = 0; i < shift; ++i) EXPECT_TRUE(std::isnan(in.y[i]));
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_TRUE(std::isnan(want[i]) ? std::isnan(in.y[i + shift]) : in.y[i + shift] == want[i]) << i;
  }
  const dlm::Input headed = dlm::parse_input(text, "big.csv");
  EXPECT_EQ(headed.y.size(), want.size());
  // an error in the second half names its line in the whole file; one in each half: the first
  std::string late = text;
  const std::size_t at = late.rfind("59999.25");
  late.replace(at, 8, "oops");
  const int line = static_cast<int>(std::count(late.begin(), late.begin() + static_cast<std::ptrdiff_t>(at), '\n')) + 1;
  EXPECT_TRUE(jxt::throws_with<ShapeError>([&] { dlm::parse_input(late, "big.csv"); },
                                           {fmt::format("big.csv: line {}: 'oops' is not a number", line)}));
  const std::size_t early = late.find("\n5.25\n") + 1;
  late.replace(early, 4, "bad!");
  const int early_line =
      static_cast<int>(std::count(late.begin(), late.begin() + static_cast<std::ptrdiff_t>(early), '\n')) + 1;
  EXPECT_TRUE(jxt::throws_with<ShapeError>([&] { dlm::parse_input(late, "big.csv"); },
                                           {fmt::format("line {}: 'bad!'", early_line)}));
}

TEST(DlmInput, ToolboxAndDlmJsOptionNames) {
  const auto js = dlm::parse_input(R"({"y": [1, 2, 3], "s": 1, "w": [1, 1, 1, 1, 1, 1],
    "options": {"order": 1, "harmonics": 2, "seasonLength": 6, "fullSeasonal": false, "arCoefficients": [0.5]}})",
                                   "js.json");
  EXPECT_EQ(js.options.trig, 2);
  EXPECT_EQ(js.options.ns, 6);
  EXPECT_FALSE(js.options.fullseas);
  EXPECT_EQ(js.options.arphi, (std::vector<double>{0.5}));
  const auto tb = dlm::parse_input(
      R"({"y": [1, 2, 3], "s": 1, "w": [1, 1], "options": {"trig": 2, "ns": 6, "arphi": [0.5]}})", "tb.json");
  EXPECT_EQ(tb.options.trig, js.options.trig);
  EXPECT_EQ(tb.options.ns, js.options.ns);
  EXPECT_TRUE(jxt::throws_with<ShapeError>(
      [] { dlm::parse_input(R"({"y": [1], "s": 1, "w": 1, "options": {"harmonic": 2}})", "t.json"); },
      {"unknown option 'harmonic'", "trig (harmonics)", "ns (seasonLength)"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>(
      [] { dlm::parse_input(R"({"y": [1], "s": 1, "w": 1, "options": {"ns": 12, "seasonLength": 4}})", "t.json"); },
      {"'ns' and 'seasonLength' name the same option with different values"}));
  EXPECT_EQ(dlm::parse_input(R"({"y": [1, 2], "s": 1, "w": [1, 1, 1, 1], "options": {"trig": 1}})", "t.json").w.size(),
            4u);  // m = 4
  EXPECT_TRUE(jxt::throws_with<ShapeError>(
      [] { dlm::parse_input(R"({"y": [1, 2], "s": 1, "w": [1, 1, 1, 1, 1], "options": {"trig": 1}})", "t.json"); },
      {"5 values but the model has 4 states (order 1: 2 trend states, trig 1 with ns 12: 2 seasonal states)"}));
  EXPECT_EQ(
      dlm::parse_input(R"({"yy": [1, 2], "ss": 1, "w": 1, "X": [[2, 1], [3, 1]], "ys": 2.0, "ym": 5.0})", "t.json")
          .X.size(),
      2u);
  EXPECT_TRUE(
      jxt::throws_with<ShapeError>([] { dlm::parse_input(R"({"y": [1, 2], "s": 1, "w": 1, "X": [[2]]})", "t.json"); },
                                   {"field 'X' has 1 rows; expected one per observation (2)"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>(
      [] { dlm::parse_input(R"({"y": [1, 2], "s": 1, "w": 1, "X": [[2, 1], [3]]})", "t.json"); },
      {"field 'X[1]' has 1 columns; 'X[0]' has 2"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>(
      [] { dlm::parse_input(R"({"y": [1], "yy": [1], "s": 1, "w": 1})", "t.json"); }, {"'y' and 'yy'"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>([] { dlm::parse_input(R"({"y": [1], "s": 1, "w": 1, "z": 0})", "t.json"); },
                                           {"unknown field 'z'"}));
  EXPECT_TRUE(jxt::throws_with<ShapeError>(
      [] { dlm::parse_input(R"({"y": [1, 2], "s": 1, "w": 1, "t": [1, 3]})", "t.json"); }, {"only unit time steps"}));
}
