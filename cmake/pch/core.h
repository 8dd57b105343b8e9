// Precompiled for every layer of core/ (JX_PCH): the standard and fmt headers most of its files
// include. Nothing of jx itself, so a layer's include root still decides what it may include.
#pragma once
#pragma GCC system_header  // warnings of the standard and library headers stay off, as without the PCH
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
