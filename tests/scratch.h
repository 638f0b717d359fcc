// Scratch directories for tests: all under one directory per test process in the system's
// temporary directory, which tests/test_main.cc removes when the binary's tests end.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace vlasim::testing {

// The test process's scratch root (not created).
inline std::filesystem::path scratch_root() {
  return std::filesystem::temp_directory_path() / ("vlasim_test_" + std::to_string(::getpid()));
}

// scratch_root()/name, created empty.
inline std::filesystem::path scratch_dir(const std::string& name) {
  const std::filesystem::path d = scratch_root() / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace vlasim::testing
