// Precompiled for the lab, the workloads, the text loader, the CLI, the tests and the benchmarks
// (JX_PCH): core's set, the JSON library and the public API.
#pragma once
#pragma GCC system_header  // warnings of the standard and library headers stay off, as without the PCH
#include "core.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/jx.h"
