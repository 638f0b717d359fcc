#include "scenarios/config/data_dir.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace vlasim {

namespace fs = std::filesystem;

std::string module_dir() {
  // dladdr1 names the loaded object holding this very function. The main program's link map
  // has an empty name; its file is /proc/self/exe.
  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(reinterpret_cast<void*>(&module_dir), &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) == 0 || map == nullptr)
    return {};
  std::error_code ec;
  fs::path file = (map->l_name && map->l_name[0]) ? fs::path(map->l_name)
                                                  : fs::read_symlink("/proc/self/exe", ec);
  if (ec || file.empty()) return {};
  fs::path real = fs::canonical(file, ec);
  if (ec) return {};
  return real.parent_path().string();
}

std::string find_data_dir(const char* env_var, const std::string& name, const std::string& built_in) {
  if (const char* env = std::getenv(env_var); env && *env) return env;
  if (const char* root = std::getenv("VLASIM_DATA_DIR"); root && *root) return (fs::path(root) / name).string();
  if (std::string dir = module_dir(); !dir.empty()) {
    fs::path installed = (fs::path(dir) / ".." / "share" / "vlasim" / name).lexically_normal();
    std::error_code ec;
    if (fs::is_directory(installed, ec)) return installed.string();
  }
  return built_in;
}

}  // namespace vlasim
