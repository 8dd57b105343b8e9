#pragma once
// Injected faults, a test switch off by default. A fault is armed by name, fires at its injection
// point on the (after+1)-th time that point is reached, and keeps firing `times` times (-1: for
// ever). JX_FAULTS="name[@after][:times],..." arms faults at start (for child processes of tests).
//
//   vk_out_of_device_memory  vkAllocateMemory returns VK_ERROR_OUT_OF_DEVICE_MEMORY
//   vk_device_lost           vkQueueSubmit / vkWaitForFences return VK_ERROR_DEVICE_LOST
//   report_write_stall       a report file stops half-written for 60 s (so a test can kill the
//                            process while the temporary file is incomplete)
//   native_wrong_tanh        the native C renderer emits tanh(x) + 0.25: a wrong answer with no
//                            error, for the tests of `jxlab reduce` and the differential fuzzer
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jx::faults {

// Throws Error for an unknown name.
void arm(std::string_view name, int after = 0, int times = 1);
void disarm_all();
// At an injection point: true when the fault fires now. Cheap when nothing is armed.
bool fire(std::string_view name);
// How often each fault fired since start (for reports and tests).
std::uint64_t fired(std::string_view name);
const std::vector<std::string>& names();
// Parses a JX_FAULTS-style list and arms each entry; throws Error naming a bad entry.
void arm_from_spec(std::string_view spec);

}  // namespace jx::faults
