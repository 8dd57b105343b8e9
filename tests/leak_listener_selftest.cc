// Deliberately leaks one float32[2,3] slot; ctest expects this binary to FAIL with the report.
#include <gtest/gtest.h>

#include "core/jx.h"

namespace {
jx::Array kept;  // outlives the test: the listener must see it as leaked
}

TEST(LeakSelfTest, Leaks) { kept = jx::np::zeros({2, 3}); }
