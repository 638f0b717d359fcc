#include "sim/measured/csv_fields.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "scenarios/config/config.h"

namespace vlasim {

void drop_utf8_bom(std::string* text) {
  if (text->rfind("\xEF\xBB\xBF", 0) == 0) text->erase(0, 3);
}

std::vector<CsvField> split_csv(const std::string& line) {
  std::vector<CsvField> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = line.find(',', start);
    out.push_back({line.substr(start, comma == std::string::npos ? std::string::npos : comma - start), int(start) + 1});
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

double csv_number(const std::string& file, int line, const CsvField& f, const std::string& col) {
  const std::string& s = f.text;
  if (s.empty()) throw ConfigError(file, line, f.column, col, "empty value; expected a number");
  if (s.find_first_not_of("0123456789+-.eE") != std::string::npos)
    throw ConfigError(file, line, f.column, col, "'" + s + "' is not a number");
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v))
    throw ConfigError(file, line, f.column, col, "'" + s + "' is not a finite number");
  return v;
}

int64_t csv_whole(const std::string& file, int line, const CsvField& f, const std::string& col, int64_t lo,
                  int64_t hi) {
  const double v = csv_number(file, line, f, col);
  if (v != std::floor(v) || v < double(lo) || v > double(hi))
    throw ConfigError(file, line, f.column, col,
                      "'" + f.text + "' must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
  return int64_t(v);
}

bool split_time_stats_column(const std::string& name, std::string* what, std::string* stat) {
  if (name.rfind("time_stats.", 0) != 0) return false;
  const std::string rest = name.substr(11);
  const size_t dot = rest.rfind('.');
  *what = dot == std::string::npos ? rest : rest.substr(0, dot);
  *stat = dot == std::string::npos ? "" : rest.substr(dot + 1);
  return true;
}

}  // namespace vlasim
