#include "reports/plot.h"

#include "scenarios/config/config.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace vlasim {

std::string printf_number(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) return true;
  }
  return false;
}

// A gnuplot single-quoted string literal.
std::string gp_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'') out += '\'';
    out += ch;
  }
  return out + "'";
}

// A shell single-quoted word.
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'')
      out += "'\\''";
    else
      out += ch;
  }
  return out + "'";
}

void write_file(const std::string& path, const std::string& text) { write_output_file(path, text); }

void write_into(const std::string& dir, const std::string& name, const std::string& text,
                std::vector<std::string>* written) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  write_file(path, text);
  written->push_back(path);
}

// Runs gnuplot on `script` in the script's folder (scripts name their files relative to it);
// on failure returns a message naming the script, else "".
std::string run_gnuplot(const std::string& script, const std::string& svg) {
  std::error_code ec;
  std::filesystem::remove(svg, ec);
  const std::filesystem::path path(script);
  const std::string cmd = "cd " + sh_quote(path.parent_path().empty() ? "." : path.parent_path().string()) +
                          " && gnuplot " + sh_quote(path.filename().string()) + " 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return "gnuplot could not be started for " + script;
  std::string output;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) output.append(buf, n);
  const int status = ::pclose(pipe);
  if (status != 0 || !std::filesystem::exists(svg))
    return "gnuplot failed on " + script + (status != 0 ? " (exit status " + std::to_string(status) + ")" : "") +
           (output.empty() ? std::string(": no SVG written") : ": " + output);
  return "";
}


}  // namespace vlasim
