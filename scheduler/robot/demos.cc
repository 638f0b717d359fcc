#include "scheduler/robot/demos.h"

#include <cmath>
#include <random>
#include <sstream>

#include "scenarios/config/config.h"

namespace vlasim {

std::vector<Trajectory> synthetic_demonstration(int dof, int steps, double h, double peak_vel, uint64_t seed,
                                                int count) {
  const long long n = static_cast<long long>(steps) * count;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> amp(0.3, 1.0), phase(0, 2 * M_PI);
  const double freq[3] = {0.15, 0.4, 0.9};
  std::vector<std::vector<double>> q(static_cast<size_t>(n + 1), std::vector<double>(static_cast<size_t>(dof)));
  for (int j = 0; j < dof; ++j) {
    double a[3], p[3];
    for (int m = 0; m < 3; ++m) {
      a[m] = amp(rng) / (m + 1);
      p[m] = phase(rng);
    }
    for (long long k = 0; k <= n; ++k) {
      double v = 0;
      for (int m = 0; m < 3; ++m) v += a[m] * std::sin(2 * M_PI * freq[m] * k * h + p[m]);
      q[k][j] = v;
    }
  }
  double fastest = 0;
  for (long long k = 0; k < n; ++k)
    for (int j = 0; j < dof; ++j) fastest = std::max(fastest, std::fabs(q[k + 1][j] - q[k][j]) / h);
  const double scale = fastest > 0 ? peak_vel / fastest : 0;
  std::vector<Trajectory> out(static_cast<size_t>(count));
  for (int c = 0; c < count; ++c) {
    out[c].h = h;
    for (int k = 0; k <= steps; ++k) {
      std::vector<double> w = q[static_cast<size_t>(c) * static_cast<size_t>(steps) + static_cast<size_t>(k)];
      for (double& x : w) x *= scale;
      out[c].q.push_back(std::move(w));
    }
  }
  return out;
}

std::vector<Trajectory> recorded_demonstration(const std::string& path, int steps, double h) {
  const std::string text = read_input_file(path);
  std::istringstream in(text);
  std::string line;
  std::vector<std::vector<double>> rows;
  int number = 0;
  size_t cols = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (number == 1 || line.empty()) continue;  // the header
    if (line.back() == ',') throw ConfigError(path, number, 0, "demonstrations", "a row ends with a comma: a joint is missing");
    std::vector<double> row;
    std::stringstream fields(line);
    std::string f;
    while (std::getline(fields, f, ',')) {
      char* end = nullptr;
      const double v = std::strtod(f.c_str(), &end);
      if (f.empty() || *end != '\0' || !std::isfinite(v) || std::fabs(v) > 1e3)
        throw ConfigError(path, number, 0, "demonstrations", "'" + f + "' is not a joint position (a number of rad, at most 1e3)");
      row.push_back(v);
    }
    if (cols == 0) cols = row.size();
    if (row.size() != cols)
      throw ConfigError(path, number, 0, "demonstrations",
                        std::to_string(row.size()) + " joints where the first row has " + std::to_string(cols));
    rows.push_back(std::move(row));
  }
  if (static_cast<int>(rows.size()) < steps + 1)
    throw ConfigError(path, number, 0, "demonstrations",
                      std::to_string(rows.size()) + " steps recorded; a chunk needs " + std::to_string(steps + 1));
  std::vector<Trajectory> out;
  for (size_t start = 0; start + static_cast<size_t>(steps) < rows.size(); start += static_cast<size_t>(steps)) {
    Trajectory t;
    t.h = h;
    t.q.assign(rows.begin() + static_cast<long>(start), rows.begin() + static_cast<long>(start) + steps + 1);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace vlasim
