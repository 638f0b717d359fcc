// Small helpers for the reports' files: writing text, quoting for gnuplot and the shell, and
// running gnuplot on a script to make an SVG (gnuplot is an optional tool: callers check
// on_path("gnuplot") and warn when it is missing).
#pragma once

#include <string>
#include <vector>

namespace vlasim {

// Whether an executable called `program` is on PATH.
bool on_path(const std::string& program);
// `x` formatted by printf format `f` (one double conversion, e.g. "%.4g").
std::string printf_number(const char* f, double x);
// A gnuplot single-quoted string literal.
std::string gp_quote(const std::string& s);
// A shell single-quoted word.
std::string sh_quote(const std::string& s);
// Writes `text` to `path` with write_output_file (scenarios/config/config.h): all of it or nothing, every
// write and the close checked; throws std::runtime_error naming the path on failure.
void write_file(const std::string& path, const std::string& text);
// Writes `text` to dir/name (write_file) and appends that path to `written`.
void write_into(const std::string& dir, const std::string& name, const std::string& text,
                std::vector<std::string>* written);
// Runs gnuplot on `script` in the script's folder (scripts name their files relative to it);
// on failure returns a message naming the script, else "". `svg` is the file it must write.
std::string run_gnuplot(const std::string& script, const std::string& svg);
// The first lines of every SVG script: terminal, no enhanced text, UTF-8.
inline constexpr const char* kSvgHeader =
    "set terminal svg size 800,600 dynamic\nset termoption noenhanced\nset encoding utf8\n";

}  // namespace vlasim
