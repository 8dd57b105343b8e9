// Fuzz target for the jaxpr text loader (core/text): any bytes either load (parse, trace through
// the rules, typecheck) or fail with a jx error (ParseError with file:line:column, ShapeError);
// anything else is a finding. A program that loads must read back from its own printed text to
// the same text (parse(print(j)) == print(j)). Nothing runs: a fuzzed while loop need not end.
#include <string>

#include "core/jx.h"
#include "core/text/load.h"
#include "tests/fuzz/fuzz_targets.h"

namespace jx::fuzz {

int jaxpr_text(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string printed;
  try {
    printed = text::load_program(text, "fuzz.jaxpr").jaxpr.str();
  } catch (const Error&) {
    return 0;
  } catch (const std::exception& e) {
    finding(std::string("jaxpr_text: unexpected exception (not a jx error naming the problem): ") + e.what());
  }
  try {
    const std::string again = text::load_program(printed, "printed.jaxpr").jaxpr.str();
    if (again != printed)
      finding("jaxpr_text: a loaded program's printed text reads back differently:\n" + printed + "\n---\n" + again);
  } catch (const std::exception& e) {
    finding(std::string("jaxpr_text: a loaded program's printed text does not load: ") + e.what() + "\n" + printed);
  }
  return 0;
}

}  // namespace jx::fuzz
