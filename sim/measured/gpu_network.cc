#include "sim/measured/gpu_network.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>

#include "scenarios/config/config.h"
#include "sim/measured/csv_fields.h"

namespace vlasim {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kCollectives = {"send_recv", "all_reduce"};
const std::vector<std::string> kStats = {"min", "max", "mean", "median", "std"};
const std::vector<std::string> kShape = {"rank", "num_workers", "size", "collective", "devices_per_node",
                                         "max_devices_per_node"};

std::string fmt(double v, int digits = 4) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = q * double(v.size() - 1);
  const size_t lo = size_t(std::floor(at)), hi = size_t(std::ceil(at));
  return v[lo] + (v[hi] - v[lo]) * (at - double(lo));
}

// Reads a Vidur network profile's header row: each named column's index and the one collective of
// its time columns; refuses an unknown or repeated column, time columns of two collectives or of
// none, and a missing column.
void read_network_header(const std::vector<CsvField>& f, const std::string& path, std::map<std::string, int>* col,
                         std::string* coll) {
  for (size_t i = 0; i < f.size(); ++i) {
    const std::string& name = f[i].text;
    bool known = (i == 0 && name.empty()) ||  // pandas' index column
                 std::find(kShape.begin(), kShape.end(), name) != kShape.end();
    if (std::string c, st; split_time_stats_column(name, &c, &st)) {
      if (std::find(kCollectives.begin(), kCollectives.end(), c) == kCollectives.end())
        throw ConfigError(path, 1, f[i].column, name,
                          "unknown collective '" + c + "'; Vidur network profiles hold " + join_names(kCollectives));
      if (!coll->empty() && c != *coll)
        throw ConfigError(path, 1, f[i].column, name,
                          "time columns of two collectives ('" + *coll + "' and '" + c + "'): one file per collective");
      if (std::find(kStats.begin(), kStats.end(), st) == kStats.end())
        throw ConfigError(path, 1, f[i].column, name,
                          "unknown statistic '" + st + "'; expected " + join_names(kStats) + " (milliseconds)");
      *coll = c;
      known = true;
    }
    if (!known)
      throw ConfigError(path, 1, f[i].column, name,
                        "unknown column '" + name + "'; expected time_stats.<collective>.<stat> and " +
                            join_names(kShape));
    if (!name.empty() && !col->emplace(name, int(i)).second)
      throw ConfigError(path, 1, f[i].column, name, "column '" + name + "' appears twice");
  }
  if (coll->empty())
    throw ConfigError(path, 1, 1, "", "no time_stats.<collective>.<stat> columns: not a Vidur send_recv.csv or all_reduce.csv");
  for (const std::string& need : kShape)
    if (!col->count(need)) throw ConfigError(path, 1, 0, need, "missing column '" + need + "'");
  for (const std::string& st : kStats)
    if (!col->count("time_stats." + *coll + "." + st))
      throw ConfigError(path, 1, 0, "time_stats." + *coll + "." + st,
                        "missing column 'time_stats." + *coll + "." + st + "'");
}

}  // namespace

std::string NetworkGroup::name() const {
  if (collective == "send_recv") return node + ".send_recv." + (nodes() > 1 ? "inter_node" : "intra_node");
  std::string n = node + "." + collective + "." + std::to_string(gpus) + "gpu";
  if (nodes() > 1) n += "_" + std::to_string(nodes()) + "node";
  return n;
}

std::vector<NetworkGroup> parse_vidur_network(const std::string& text, const std::string& path,
                                              const std::string& node) {
  std::string body = text;
  drop_utf8_bom(&body);  // a spreadsheet's byte order mark is not part of the first column's name
  std::istringstream in(body);
  std::string line;
  int lineno = 0;
  std::map<std::string, int> col;
  size_t width = 0, rows = 0;
  std::string coll;  // the one collective of the time_stats columns
  std::vector<NetworkGroup> groups;
  std::map<std::string, size_t> index;  // group key -> position
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::vector<CsvField> f = split_csv(line);
    if (lineno == 1) {
      read_network_header(f, path, &col, &coll);
      width = f.size();
      continue;
    }
    if (line.empty()) continue;
    if (++rows > kMaxCsvRows) throw ConfigError(path, lineno, 1, "", "more than " + std::to_string(kMaxCsvRows) + " rows");
    if (f.size() != width)
      throw ConfigError(path, lineno, f.size() > width ? f[width].column : int(line.size()) + 1, "",
                        "row has " + std::to_string(f.size()) + " fields, the header " + std::to_string(width) +
                            " (truncated or malformed row)");
    auto field = [&](const std::string& name) -> const CsvField& { return f[size_t(col.at(name))]; };
    auto count = [&](const std::string& name, int64_t lo, int64_t hi) {
      return csv_whole(path, lineno, field(name), name, lo, hi);
    };
    const CsvField& c = field("collective");
    if (c.text != coll)
      throw ConfigError(path, lineno, c.column, "collective",
                        "collective '" + c.text + "' in a file of time_stats." + coll + " columns");
    count("rank", 0, 4095);
    const int gpus = int(count("num_workers", 2, 4096));
    const int per_node = int(count("devices_per_node", 1, 1024));
    const int node_gpus = int(count("max_devices_per_node", 1, 1024));
    const double bytes = double(count("size", 1, int64_t(1) << 40));
    if (coll == "send_recv" && gpus != 2)
      throw ConfigError(path, lineno, field("num_workers").column, "num_workers",
                        "a send_recv is between 2 GPUs, not " + std::to_string(gpus));
    if (per_node > node_gpus)
      throw ConfigError(path, lineno, field("devices_per_node").column, "devices_per_node",
                        std::to_string(per_node) + " GPUs per node, more than the node's max_devices_per_node " +
                            std::to_string(node_gpus));
    if (per_node > gpus)
      throw ConfigError(path, lineno, field("devices_per_node").column, "devices_per_node",
                        std::to_string(per_node) + " GPUs per node, more than the " + std::to_string(gpus) +
                            " GPUs of the collective (num_workers)");
    if (gpus > per_node && gpus % per_node)
      throw ConfigError(path, lineno, field("num_workers").column, "num_workers",
                        std::to_string(gpus) + " GPUs do not fill nodes of " + std::to_string(per_node));
    double st[5];
    for (size_t i = 0; i < 5; ++i) {
      const std::string k = "time_stats." + coll + "." + kStats[i];
      st[i] = csv_number(path, lineno, field(k), k);
      if (st[i] < 0) throw ConfigError(path, lineno, field(k).column, k, "negative time");
    }
    const std::string mk = "time_stats." + coll + ".median";
    const CsvField& med = field(mk);
    const double lo = st[0], hi = st[1], median = st[3];
    if (median < lo * (1 - 1e-9) || median > hi * (1 + 1e-9))
      throw ConfigError(path, lineno, med.column, mk,
                        "median " + med.text + " is outside [min, max] = [" + field("time_stats." + coll + ".min").text +
                            ", " + field("time_stats." + coll + ".max").text + "]: inconsistent statistics or units");
    // NCCL kernel times in milliseconds: from 0.5 us to 1000 s.
    if (median < 5e-4 || median > 1e6)
      throw ConfigError(path, lineno, med.column, mk,
                        "time " + med.text + " is not plausibly in milliseconds (expected 0.0005 to 1000000)");
    const std::string key = std::to_string(gpus) + "/" + std::to_string(per_node) + "/" + std::to_string(node_gpus);
    auto [it, fresh] = index.try_emplace(key, groups.size());
    if (fresh) {
      NetworkGroup g;
      g.node = node;
      g.collective = coll;
      g.file = path;
      g.gpus = gpus;
      g.gpus_per_node = per_node;
      g.node_gpus = node_gpus;
      groups.push_back(std::move(g));
    }
    groups[it->second].points.push_back({bytes, median * 1e-3, lo * 1e-3, hi * 1e-3, lineno});
  }
  if (width == 0) throw ConfigError(path, 1, 1, "", "empty file: expected a Vidur send_recv.csv or all_reduce.csv header");
  if (rows == 0) throw ConfigError(path, lineno + 1, 1, "", "no data rows after the header");
  for (NetworkGroup& g : groups)
    std::stable_sort(g.points.begin(), g.points.end(),
                     [](const NetworkPoint& a, const NetworkPoint& b) { return a.bytes < b.bytes; });
  return groups;
}

std::vector<NetworkGroup> import_vidur_network(const std::string& path) {
  auto node_of = [](const fs::path& file) {
    const std::string n = file.parent_path().filename().string();
    return n.empty() ? std::string("network") : n;
  };
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return parse_vidur_network(read_input_file(path), path, node_of(fs::path(path)));
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->path().filename() == "send_recv.csv" || it->path().filename() == "all_reduce.csv")
      files.push_back(it->path().string());
  if (ec) throw ConfigError(path, 0, 0, "", "cannot list the folder: " + ec.message());
  if (files.empty()) throw ConfigError(path, 0, 0, "", "no send_recv.csv or all_reduce.csv under this folder");
  std::sort(files.begin(), files.end());
  std::vector<NetworkGroup> out;
  for (const std::string& f : files)
    for (NetworkGroup& g : parse_vidur_network(read_input_file(f), f, node_of(fs::path(f)))) out.push_back(std::move(g));
  return out;
}

double bus_factor(const std::string& collective, int gpus) {
  if (collective == "all_reduce") return 2.0 * double(gpus - 1) / double(gpus);
  return 1.0;
}

NetworkFit fit_network(const NetworkGroup& g, double max_bytes) {
  if (!(max_bytes >= 0) || !std::isfinite(max_bytes))
    throw std::invalid_argument("fit_network: max_bytes must be a finite number >= 0");
  const double factor = bus_factor(g.collective, g.gpus);
  // Weighted least squares of t = a + b x with weights 1 / t^2 (squared relative error).
  double S = 0, Sx = 0, Sy = 0, Sxx = 0, Sxy = 0;
  int n = 0, first = 0, last = 0;
  double lo = 0, hi = 0;
  for (const NetworkPoint& p : g.points) {
    if (max_bytes > 0 && p.bytes > max_bytes) continue;
    const double x = p.bytes * factor, w = 1 / (p.seconds * p.seconds);
    S += w, Sx += w * x, Sy += w * p.seconds, Sxx += w * x * x, Sxy += w * x * p.seconds;
    if (n == 0) lo = p.bytes, first = p.line;
    hi = std::max(hi, p.bytes);
    first = std::min(first, p.line);
    last = std::max(last, p.line);
    ++n;
  }
  const int at = g.points.empty() ? 0 : g.points.front().line;
  if (n < 2 || hi <= lo)
    throw ConfigError(g.file, at, 0, "size",
                      g.name() + ": " + std::to_string(n) + " row(s) of one size; a latency and a bandwidth need two sizes");
  const double det = S * Sxx - Sx * Sx;
  double b = det > 0 ? (S * Sxy - Sx * Sy) / det : 0;
  double a = (Sy - b * Sx) / S;
  if (a < 0) {  // no negative latency: the best bandwidth alone
    a = 0;
    b = Sxy / Sxx;
  }
  if (!(b > 0) || !std::isfinite(b) || !std::isfinite(a))
    throw ConfigError(g.file, at, 0, "size", g.name() + ": the time does not grow with the size; no bandwidth to fit");
  // Within what a network profile may hold (parse_network_profile), or no fit at all: a time flat
  // in the size gives a bandwidth no link has.
  if (!(1 / b >= kMinNetworkGbs * 1e9 && 1 / b <= kMaxNetworkGbs * 1e9) || a > kMaxNetworkLatencyUs * 1e-6)
    throw ConfigError(g.file, at, 0, "size",
                      g.name() + ": the fit gives " + fmt(a * 1e6) + " us + " + fmt(1e-9 / b) +
                          " GB/s, outside what a link can be (0.001 to 1e6 GB/s, at most 1e6 us): the time "
                          "barely grows with the size, or the rows are not in bytes and seconds");
  NetworkFit f;
  f.name = g.name();
  f.node = g.node;
  f.collective = g.collective;
  f.gpus = g.gpus;
  f.nodes = g.nodes();
  f.latency_s = a;
  f.bytes_per_s = 1 / b;
  f.points = n;
  f.min_bytes = lo;
  f.max_bytes = hi;
  f.source = "vidur:" + g.file + ":" + std::to_string(first) + "-" + std::to_string(last);
  std::vector<double> e;
  for (const NetworkPoint& p : g.points)
    if (max_bytes <= 0 || p.bytes <= max_bytes) e.push_back(std::abs(collective_seconds(f, p.bytes) / p.seconds - 1));
  f.median_error = quantile(e, 0.5);
  f.p90_error = quantile(e, 0.9);
  f.max_error = *std::max_element(e.begin(), e.end());
  return f;
}

std::vector<double> fit_errors(const NetworkFit& f, const NetworkGroup& g, double min_bytes) {
  std::vector<double> e;
  for (const NetworkPoint& p : g.points)
    if (p.bytes > min_bytes) e.push_back(std::abs(collective_seconds(f, p.bytes) / p.seconds - 1));
  return e;
}

double collective_seconds(const NetworkFit& f, double bytes) {
  return f.latency_s + std::max(0.0, bytes) * bus_factor(f.collective, f.gpus) / f.bytes_per_s;
}

std::string network_profile_yaml(const std::vector<NetworkFit>& fits, const std::string& note) {
  std::ostringstream o;
  std::istringstream n(note);
  for (std::string l; std::getline(n, l);) o << "# " << l << "\n";
  o << "links:\n";
  for (const NetworkFit& f : fits) {
    std::string key;
    for (char ch : f.name) key += (ch == '"' || ch == '\\') ? std::string("\\") + ch : std::string(1, ch);
    o << "  \"" << key << "\":\n"
      << "    collective: " << f.collective << "\n"
      << "    gpus: " << f.gpus << "\n"
      << "    nodes: " << f.nodes << "\n"
      << "    latency_us: " << fmt(f.latency_s * 1e6) << "\n"
      << "    " << (f.collective == "send_recv" ? "gbs" : "bus_gbs") << ": " << fmt(f.bytes_per_s / 1e9) << "\n"
      << "    points: " << f.points << "\n"
      << "    bytes: [" << fmt(f.min_bytes, 12) << ", " << fmt(f.max_bytes, 12) << "]\n"
      << "    error_median_pct: " << fmt(100 * f.median_error, 3) << "\n"
      << "    error_p90_pct: " << fmt(100 * f.p90_error, 3) << "\n"
      << "    error_max_pct: " << fmt(100 * f.max_error, 3) << "\n"
      << "    source: \"";
    for (char ch : f.source) o << ((ch == '"' || ch == '\\') ? "\\" : "") << ch;
    o << "\"\n";
  }
  return o.str();
}

std::vector<NetworkFit> parse_network_profile(const std::string& text, const std::string& name) {
  const ConfigNode root = ConfigNode::load_string(text, name);
  if (!root.defined() || !root.is_map())
    throw ConfigError(name, 1, 1, "",
                      "expected a map with 'links:' (a vlasim network profile; vlasim import vidur-network writes one)");
  root.check_keys({"links"});
  const ConfigNode links = root.required("links");
  if (!links.is_map() || links.entries().empty()) links.fail("expected a map of link name -> fitted cost");
  std::vector<NetworkFit> out;
  for (auto& [key, n] : links.entries()) {
    if (!n.is_map()) n.fail("expected a map: collective, gpus, latency_us, gbs or bus_gbs, ...");
    n.check_keys({"collective", "gpus", "nodes", "latency_us", "gbs", "bus_gbs", "points", "bytes", "error_median_pct",
                  "error_p90_pct", "error_max_pct", "source"});
    NetworkFit f;
    f.name = key;
    f.collective = n.required("collective").as_string();
    if (std::find(kCollectives.begin(), kCollectives.end(), f.collective) == kCollectives.end())
      n.required("collective").fail("unknown collective '" + f.collective + "'; valid names are: " + join_names(kCollectives));
    f.gpus = int(n.get_count("gpus", 2, 2, 4096));
    if (f.collective == "send_recv" && f.gpus != 2) n.required("gpus").fail("a send_recv is between 2 GPUs");
    f.nodes = int(n.get_count("nodes", 1, 1, 4096));
    if (f.nodes > f.gpus) n.required("nodes").fail("more nodes than GPUs");
    const double lat = n.required("latency_us").as_double();
    if (!(lat >= 0 && lat <= kMaxNetworkLatencyUs)) n.required("latency_us").fail("must be from 0 to 1e6 us, got " + fmt(lat));
    f.latency_s = lat * 1e-6;
    const std::string bw = f.collective == "send_recv" ? "gbs" : "bus_gbs";
    const std::string other = f.collective == "send_recv" ? "bus_gbs" : "gbs";
    if (n.has(other))
      n.required(other).fail("'" + other + "' is " + (f.collective == "send_recv" ? "an all_reduce" : "a send_recv") +
                             " figure; " + (f.collective == "send_recv" ? "a send_recv" : "an all_reduce") +
                             " entry gives '" + bw + "'");
    const double gbs = n.required(bw).as_double();
    if (!(gbs >= kMinNetworkGbs && gbs <= kMaxNetworkGbs)) n.required(bw).fail("must be from 0.001 to 1e6 GB/s, got " + fmt(gbs));
    f.bytes_per_s = gbs * 1e9;
    f.points = int(n.get_count("points", 0, 0, 1 << 30));
    if (n.has("bytes")) {
      const std::vector<double> b = n.required("bytes").as_doubles();
      if (b.size() != 2 || !(b[0] > 0) || !(b[1] >= b[0]) || !std::isfinite(b[1]))
        n.required("bytes").fail("expected [smallest, largest] bytes measured, 0 < smallest <= largest");
      f.min_bytes = b[0];
      f.max_bytes = b[1];
    }
    // (A structured binding cannot be captured before C++20 in clang 14: a named reference can.)
    const auto& node = n;
    auto pct = [&node](const std::string& k) {
      if (!node.has(k)) return 0.0;
      const double v = node.required(k).as_double();
      if (!(v >= 0 && v <= 1e6)) node.required(k).fail("must be a percentage from 0, got " + fmt(v));
      return v / 100;
    };
    f.median_error = pct("error_median_pct");
    f.p90_error = pct("error_p90_pct");
    f.max_error = pct("error_max_pct");
    f.source = n.get_string("source", "");
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<NetworkFit> load_network_profile(const std::string& path) {
  return parse_network_profile(read_input_file(path), path);
}

}  // namespace vlasim
