#pragma once
// The fuzz targets, as plain functions: libFuzzer drivers (tests/fuzz/libfuzzer_main.cc, built
// with clang under JX_FUZZ) call them, and test_fuzz_replay runs every committed corpus and
// regression input through them in the ordinary suites. A target returns 0 for an input it
// accepted or rejected with a clear jx error; it aborts (a finding) on a crash, an unexpected
// exception type, a backend mismatch or a leak.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace jx::fuzz {

int scenario_file(const std::uint8_t* data, std::size_t size);
int dlm_input(const std::uint8_t* data, std::size_t size);
int differential(const std::uint8_t* data, std::size_t size);
int jaxpr_text(const std::uint8_t* data, std::size_t size);  // fuzz_jaxpr.cc

// The differential target's program for these bytes, in words (for findings and tests).
std::string describe_program(const std::uint8_t* data, std::size_t size);

// The differential target's program for these bytes as a program case (core/text's layout: the
// jaxpr traced from what the mode runs, its inputs, the cpu oracle's outputs) plus
// "reduce": {"backend", "transform"}, the arguments `jxlab reduce` runs it with. On a
// mismatch the target writes it to $JX_FUZZ_PROGRAMS/<backend>-<hash>.json before aborting.
nlohmann::json program_case(const std::uint8_t* data, std::size_t size, const std::string& backend);

[[noreturn]] void finding(const std::string& what);

}  // namespace jx::fuzz
