// Precompiled once for every test binary (JX_PCH; reused from jx_test_main): the lab's set and
// GoogleTest.
#pragma once
#pragma GCC system_header  // warnings of the standard and library headers stay off, as without the PCH
#include "lab.h"

#include <gtest/gtest.h>
