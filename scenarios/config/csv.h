// CSV text as RFC 4180 has it, for every CSV file vlasim writes. It sits in the lowest layer
// so that the scheduler's writers (placement, traffic controller) and the reports' use one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vlasim {

// `text` as one CSV field: unchanged when it holds no comma, double quote, CR or LF, else
// enclosed in double quotes with each double quote doubled. Reading the field back with any
// RFC 4180 reader gives `text` again.
inline std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

// The fields joined by commas, each through csv_field, without a line end.
inline std::string csv_row(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + csv_field(fields[i]);
  return out;
}

}  // namespace vlasim
