#include <dlfcn.h>
#include <link.h>
#include <set>
#include <string>
#include <mutex>
#include "core/backends/vulkan/vk_context.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <string_view>

#include "core/base/env.h"
#include "core/base/errors.h"
#include "core/instrument/debug.h"

namespace jx::vk {
namespace {

std::mutex g_msg_mu;
std::vector<std::string> g_msgs;
std::atomic<std::size_t> g_msg_count{0};

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev, VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  if (sev < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
  std::string m = data && data->pMessage ? data->pMessage : "(no message)";
  fmt::print(stderr, "vulkan validation: {}\n", m);
  std::lock_guard lock(g_msg_mu);
  if (g_msgs.size() < 1000) g_msgs.push_back(std::move(m));
  ++g_msg_count;
  return VK_FALSE;
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

bool has_layer(const char* name) {
  std::uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> v(n);
  vkEnumerateInstanceLayerProperties(&n, v.data());
  for (auto& l : v)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

// The system's Vulkan loader (JX_VULKAN_LOADER overrides the library name), opened once; without
// it the backend is unavailable with this reason.
void open_loader() {
  static std::once_flag once;
  static std::string error;
  std::call_once(once, [] {
    const char* e = std::getenv("JX_VULKAN_LOADER");
    const std::string lib = e && *e ? e : "libvulkan.so.1";
    void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      error = fmt::format("vulkan: no Vulkan loader: {} (install libvulkan1)", dlerror());
      return;
    }
    auto gipa = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(h, "vkGetInstanceProcAddr"));
    if (!gipa) {
      error = fmt::format("vulkan: {} has no vkGetInstanceProcAddr", lib);
      return;
    }
    volkInitializeCustom(gipa);
  });
  if (!error.empty()) throw BackendError(error);
}

// The shared objects loaded into the process now (dl_iterate_phdr's names).
std::set<std::string> loaded_libraries() {
  std::set<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        if (info->dlpi_name && *info->dlpi_name) static_cast<std::set<std::string>*>(data)->insert(info->dlpi_name);
        return 0;
      },
      &names);
  return names;
}
// What the process had loaded before its first Vulkan instance.
const std::set<std::string>& libraries_before_vulkan() {
  static const std::set<std::string> before = loaded_libraries();
  return before;
}
// Keeps what Vulkan loaded (the loader, the drivers, their libraries) loaded until the process
// exits. Mesa's drivers (lavapipe) keep once-initialized state (CPU detection) that unloading
// them at vkDestroyInstance orphans: LeakSanitizer reports it as a leak on some CPUs, and a later
// instance would redo the drivers' start-up.
void pin_vulkan_libraries() {
  const std::set<std::string>& before = libraries_before_vulkan();
  for (const std::string& name : loaded_libraries())
    if (!before.count(name))
      if (void* h = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE)) dlclose(h);  // the flag stays
}

VkInstance make_instance(bool validation) {
  (void)libraries_before_vulkan();
  open_loader();
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "jxlab";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  const char* layer = "VK_LAYER_KHRONOS_validation";
  const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  if (validation) {
    if (!has_layer(layer))
      throw BackendError(
          "vulkan: validation requested (JX_VULKAN_VALIDATION) but VK_LAYER_KHRONOS_validation is not installed "
          "(package vulkan-validationlayers)");
    ci.enabledLayerCount = 1;
    ci.ppEnabledLayerNames = &layer;
    ci.enabledExtensionCount = 1;
    ci.ppEnabledExtensionNames = &ext;
  }
  VkInstance inst = VK_NULL_HANDLE;
  check(vkCreateInstance(&ci, nullptr, &inst), "vkCreateInstance (is a Vulkan driver installed?)");
  volkLoadInstanceOnly(inst);  // instance-level entry points are the loader's, valid for any instance
  return inst;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance inst) {
  std::uint32_t n = 0;
  check(vkEnumeratePhysicalDevices(inst, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> v(n);
  check(vkEnumeratePhysicalDevices(inst, &n, v.data()), "vkEnumeratePhysicalDevices");
  pin_vulkan_libraries();  // the drivers are loaded by now
  return v;
}

DeviceDesc describe(VkPhysicalDevice p) {
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &drv;
  vkGetPhysicalDeviceProperties2(p, &props);
  VkPhysicalDeviceFeatures f{};
  vkGetPhysicalDeviceFeatures(p, &f);
  const auto& pr = props.properties;
  DeviceDesc d;
  d.name = pr.deviceName;
  d.type = type_name(pr.deviceType);
  d.driver = fmt::format("{} {}", drv.driverName, drv.driverInfo);
  d.api = pr.apiVersion;
  d.float64 = f.shaderFloat64 == VK_TRUE;
  d.max_storage_buffers = pr.limits.maxPerStageDescriptorStorageBuffers;
  d.max_invocations = pr.limits.maxComputeWorkGroupInvocations;
  d.max_shared_bytes = pr.limits.maxComputeSharedMemorySize;
  d.timestamp_ns = pr.limits.timestampPeriod;  // the chosen queue family may still have none
  return d;
}

// The device has VK_KHR_pipeline_executable_properties with its pipelineExecutableInfo feature.
bool pipeline_executable_info(VkPhysicalDevice p) {
  std::uint32_t n = 0;
  if (vkEnumerateDeviceExtensionProperties(p, nullptr, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> exts(n);
  if (vkEnumerateDeviceExtensionProperties(p, nullptr, &n, exts.data()) != VK_SUCCESS) return false;
  const bool has = std::any_of(exts.begin(), exts.end(), [](const VkExtensionProperties& e) {
    return std::string_view(e.extensionName) == VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
  });
  if (!has) return false;
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &exec;
  vkGetPhysicalDeviceFeatures2(p, &f2);
  return exec.pipelineExecutableInfo == VK_TRUE;
}

std::atomic<bool> g_exiting{false};

}  // namespace

bool process_exiting() noexcept { return g_exiting.load(std::memory_order_relaxed); }
void mark_process_exiting() noexcept { g_exiting.store(true); }

std::string result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return fmt::format("VkResult({})", static_cast<int>(r));
  }
}

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw BackendError(fmt::format("vulkan: {} failed: {}", what, result_name(r)));
}

std::size_t validation_message_count() { return g_msg_count.load(); }
std::vector<std::string> validation_messages() {
  std::lock_guard lock(g_msg_mu);
  return g_msgs;
}

namespace {

// The messenger that collects the validation layer's warnings and errors (validation runs).
VkDebugUtilsMessengerEXT make_messenger(VkInstance instance) {
  VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  mi.pfnUserCallback = on_message;
  auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
      vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
  if (!create) throw BackendError("vulkan: VK_EXT_debug_utils is not available for validation messages");
  VkDebugUtilsMessengerEXT m = VK_NULL_HANDLE;
  check(create(instance, &mi, nullptr, &m), "vkCreateDebugUtilsMessengerEXT");
  return m;
}

// JX_VULKAN_DEVICE's index, else the first discrete GPU, else device 0.
std::uint32_t pick_device(const std::vector<VkPhysicalDevice>& devs) {
  if (const char* e = std::getenv("JX_VULKAN_DEVICE"); e && *e) {
    char* end = nullptr;
    const long i = std::strtol(e, &end, 10);
    if (*end != '\0' || i < 0 || i >= static_cast<long>(devs.size()))
      throw BackendError(fmt::format("vulkan: JX_VULKAN_DEVICE={} is not a device index (0..{})", e, devs.size() - 1));
    return static_cast<std::uint32_t>(i);
  }
  for (std::uint32_t i = 0; i < devs.size(); ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(devs[i], &p);
    if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) return i;
  }
  return 0;
}

// The first queue family with compute; a family without timestamps turns desc.timestamp_ns off.
std::uint32_t compute_family(VkPhysicalDevice phys, DeviceDesc& desc) {
  std::uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qs(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qs.data());
  for (std::uint32_t i = 0; i < nq; ++i)
    if (qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      if (qs[i].timestampValidBits == 0) desc.timestamp_ns = 0;
      return i;
    }
  throw BackendError(fmt::format("vulkan: {} has no compute queue", desc.name));
}

}  // namespace

Context::Context(bool validation) : validation_(validation) {
  instance_ = make_instance(validation);
  try {
    if (validation) messenger_ = make_messenger(instance_);
    auto devs = physical_devices(instance_);
    if (devs.empty())
      throw BackendError("vulkan: no Vulkan physical device (install a driver, e.g. mesa-vulkan-drivers for lavapipe)");
    index_ = pick_device(devs);
    phys_ = devs[index_];
    desc_ = describe(phys_);
    if (VK_API_VERSION_MAJOR(desc_.api) == 1 && VK_API_VERSION_MINOR(desc_.api) < 1)
      throw BackendError(fmt::format("vulkan: {} supports Vulkan {}.{} only (1.1 needed)", desc_.name,
                                     VK_API_VERSION_MAJOR(desc_.api), VK_API_VERSION_MINOR(desc_.api)));
    vkGetPhysicalDeviceMemoryProperties(phys_, &mem_);
    family_ = compute_family(phys_, desc_);
    create_device();
  } catch (...) {
    release();
    throw;
  }
}

// One compute queue of family_, doubles where the device has them, and the pipeline statistics'
// extension where JX_VK_PIPELINE_STATS asks for it and the device has it.
void Context::create_device() {
  const float prio = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = family_;
  qi.queueCount = 1;
  qi.pQueuePriorities = &prio;
  VkPhysicalDeviceFeatures feats{};
  feats.shaderFloat64 = desc_.float64 ? VK_TRUE : VK_FALSE;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  di.pEnabledFeatures = &feats;
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  const char* exec_ext = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
  if (env_is_on("JX_VK_PIPELINE_STATS")) {
    pipeline_stats_ = pipeline_executable_info(phys_);
    if (pipeline_stats_) {
      exec.pipelineExecutableInfo = VK_TRUE;
      di.pNext = &exec;
      di.enabledExtensionCount = 1;
      di.ppEnabledExtensionNames = &exec_ext;
    } else {
      debug_log(0, fmt::format("vulkan: JX_VK_PIPELINE_STATS: {} has no {}; pipelines carry no statistics", desc_.name,
                               exec_ext));
    }
  }
  check(vkCreateDevice(phys_, &di, nullptr, &device_), "vkCreateDevice");
  volkLoadDevice(device_);  // device-level entry points straight from the driver (and its layers)
  vkGetDeviceQueue(device_, family_, 0, &queue_);
}

Context::~Context() { release(); }

void Context::release() noexcept {
  if (process_exiting()) return;  // left to the OS, see process_exiting()
  if (device_) {
    vkDeviceWaitIdle(device_);
    vkDestroyDevice(device_, nullptr);
    device_ = VK_NULL_HANDLE;
  }
  if (messenger_) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
    messenger_ = VK_NULL_HANDLE;
  }
  if (instance_) vkDestroyInstance(instance_, nullptr);
  instance_ = VK_NULL_HANDLE;
}

std::vector<DeviceDesc> enumerate_devices(std::string& why) {
  std::vector<DeviceDesc> out;
  VkInstance inst = VK_NULL_HANDLE;
  try {
    inst = make_instance(false);
    for (VkPhysicalDevice p : physical_devices(inst)) out.push_back(describe(p));
    if (out.empty()) why = "no Vulkan physical device";
  } catch (const BackendError& e) {
    why = e.what();
  }
  if (inst) vkDestroyInstance(inst, nullptr);
  return out;
}

}  // namespace jx::vk
