// Fields of one CSV line with their columns, and numbers read from them with errors that name
// the file, line, column and column name (the readers of sim/measured/gpu_import.h and sim/measured/gpu_network.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace vlasim {

// Most data rows a measured CSV file may hold (Vidur's largest network file has 6958 rows).
inline constexpr size_t kMaxCsvRows = 200000;

struct CsvField {
  std::string text;
  int column = 1;  // 1-based character column of its first character
};

// A Vidur time column's name, "time_stats.<what>.<stat>", split: `what` (an op or a
// collective) and `stat` ("" when the name has no second dot). false for any other name.
bool split_time_stats_column(const std::string& name, std::string* what, std::string* stat);

// Removes a UTF-8 byte order mark (EF BB BF) at the start of `text`, which spreadsheet programs
// write and which would otherwise be read as part of the first column's name.
void drop_utf8_bom(std::string* text);
// The comma-separated fields of `line` (no quoting: the measured-data files have none).
std::vector<CsvField> split_csv(const std::string& line);
// `f` as a finite number. Throws ConfigError(file, line, f.column, col) when it is empty, has
// characters no number has, or is not finite.
double csv_number(const std::string& file, int line, const CsvField& f, const std::string& col);
// `f` as a whole number in [lo, hi]; throws as csv_number otherwise.
int64_t csv_whole(const std::string& file, int line, const CsvField& f, const std::string& col, int64_t lo,
                  int64_t hi);

}  // namespace vlasim
