#include "sim/measured/gpu_import.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "scenarios/config/config.h"
#include "sim/measured/csv_fields.h"

namespace vlasim {

namespace fs = std::filesystem;

Op gemm_op(int64_t m, int64_t n, int64_t k, bool bias, DType t) {
  const double eb = dtype_bytes(t);
  Op o;
  o.kind = OpKind::Gemm;
  o.fn = OpFn::Linear;
  o.dtype = t;
  o.m = m;
  o.n = n;
  o.k = k;
  o.epi.bias = bias;
  o.flops = 2.0 * m * n * k;
  o.weight_bytes = (double(k) * n + (bias ? n : 0)) * eb;
  o.out_bytes = double(m) * n * eb;
  o.bytes_read = double(m) * k * eb + o.weight_bytes;
  o.bytes_written = o.out_bytes;
  return o;
}

Op norm_op(OpFn fn, int64_t rows, int64_t width, DType t) {
  const double eb = dtype_bytes(t);
  Op o;
  o.kind = OpKind::Norm;
  o.fn = fn;
  o.dtype = t;
  o.rows = rows;
  o.width = width;
  o.flops = (fn == OpFn::LayerNorm ? 8.0 : 4.0) * rows * width;
  o.weight_bytes = double(width) * (fn == OpFn::LayerNorm ? 2 : 1) * eb;
  o.out_bytes = double(rows) * width * eb;
  o.bytes_read = o.out_bytes + o.weight_bytes;
  o.bytes_written = o.out_bytes;
  return o;
}

Op eltwise_op(OpFn fn, int64_t rows, int64_t width, double inputs, DType t) {
  const double eb = dtype_bytes(t);
  Op o;
  o.kind = OpKind::Elementwise;
  o.fn = fn;
  o.dtype = t;
  o.rows = rows;
  o.width = width;
  o.flops = (fn == OpFn::Gelu ? 8.0 : fn == OpFn::Silu ? 4.0 : 1.0) * rows * width;
  o.out_bytes = double(rows) * width * eb;
  o.bytes_read = inputs * o.out_bytes;
  o.bytes_written = o.out_bytes;
  return o;
}

namespace {

const std::vector<std::string> kVidurOps = {"emb", "input_layernorm", "attn_pre_proj", "attn_rope",
                                            "attn_post_proj", "post_attention_layernorm",
                                            "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"};
const std::vector<std::string> kVidurStats = {"min", "max", "mean", "median", "std"};
const std::vector<std::string> kVidurShape = {"n_head",      "n_kv_head", "n_embd",
                                              "n_expanded_embd", "vocab_size", "use_gated_mlp",
                                              "num_tokens", "num_tensor_parallel_workers"};

// Merges samples of equal op_signature: the median time, the first source.
std::vector<KernelSample> merge(std::vector<KernelSample> in) {
  std::map<std::string, std::vector<KernelSample>> by;
  std::vector<std::string> order;
  for (KernelSample& s : in) {
    const std::string sig = op_signature(s.op);
    auto [it, fresh] = by.try_emplace(sig);
    if (fresh) order.push_back(sig);
    it->second.push_back(std::move(s));
  }
  std::vector<KernelSample> out;
  for (const std::string& sig : order) {
    std::vector<KernelSample>& v = by[sig];
    std::vector<double> t;
    for (const KernelSample& s : v) t.push_back(s.seconds);
    std::sort(t.begin(), t.end());
    const size_t n = t.size();
    KernelSample s = v.front();
    s.seconds = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    s.merged = int(n);
    out.push_back(std::move(s));
  }
  return out;
}

// Reads a Vidur mlp.csv header row: its column names in order, each name's index, and the ops
// with time columns; refuses an unknown or repeated column, a missing one, and a header with no
// time columns.
void read_vidur_header(const std::vector<CsvField>& f, const std::string& path, std::vector<std::string>* header,
                       std::map<std::string, int>* col, std::set<std::string>* ops_present) {
  for (size_t i = 0; i < f.size(); ++i) {
    const std::string& name = f[i].text;
    bool known = std::find(kVidurShape.begin(), kVidurShape.end(), name) != kVidurShape.end();
    if (std::string op, stat; split_time_stats_column(name, &op, &stat)) {
      if (std::find(kVidurOps.begin(), kVidurOps.end(), op) == kVidurOps.end())
        throw ConfigError(path, 1, f[i].column, name,
                          "unknown op '" + op + "' in a time column; Vidur mlp.csv ops are " +
                              join_names(kVidurOps));
      if (std::find(kVidurStats.begin(), kVidurStats.end(), stat) == kVidurStats.end())
        throw ConfigError(path, 1, f[i].column, name,
                          "unknown statistic '" + stat + "'; expected " + join_names(kVidurStats) +
                              " (milliseconds)");
      ops_present->insert(op);
      known = true;
    }
    if (!known)
      throw ConfigError(path, 1, f[i].column, name,
                        "unknown column '" + name + "'; expected time_stats.<op>.<stat> and " +
                            join_names(kVidurShape));
    if (!col->emplace(name, int(i)).second)
      throw ConfigError(path, 1, f[i].column, name, "column '" + name + "' appears twice");
    header->push_back(name);
  }
  for (const std::string& need : kVidurShape)
    if (!col->count(need))
      throw ConfigError(path, 1, 0, need, "missing column '" + need + "'");
  for (const std::string& op : *ops_present)
    for (const std::string& st : kVidurStats)
      if (!col->count("time_stats." + op + "." + st))
        throw ConfigError(path, 1, 0, "time_stats." + op + "." + st,
                          "missing column 'time_stats." + op + "." + st + "' (op " + op +
                              " has other statistics)");
  if (ops_present->empty())
    throw ConfigError(path, 1, 0, "", "no time_stats.<op>.<stat> columns: not a Vidur mlp.csv");
}

void parse_vidur_file(const std::string& text, const std::string& path, std::vector<KernelSample>* out) {
  std::string body = text;
  drop_utf8_bom(&body);  // a spreadsheet's byte order mark is not part of the first column's name
  std::istringstream in(body);
  std::string line;
  int lineno = 0;
  std::vector<std::string> header;
  std::map<std::string, int> col;  // name -> index
  std::set<std::string> ops_present;
  size_t rows = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<CsvField> f = split_csv(line);
    if (lineno == 1) {
      read_vidur_header(f, path, &header, &col, &ops_present);
      continue;
    }
    if (line.empty()) continue;
    if (++rows > kMaxCsvRows)
      throw ConfigError(path, lineno, 1, "", "more than " + std::to_string(kMaxCsvRows) + " rows");
    if (f.size() != header.size())
      throw ConfigError(path, lineno,
                        f.size() > header.size() ? f[header.size()].column : int(line.size()) + 1, "",
                        "row has " + std::to_string(f.size()) + " fields, the header " +
                            std::to_string(header.size()) + " (truncated or malformed row)");
    auto field = [&](const std::string& name) -> const CsvField& { return f[size_t(col.at(name))]; };
    auto whole = [&](const std::string& name, int64_t lo, int64_t hi) {
      return csv_whole(path, lineno, field(name), name, lo, hi);
    };
    const int64_t heads = whole("n_head", 1, 4096), kv_heads = whole("n_kv_head", 1, 4096);
    const int64_t h = whole("n_embd", 1, 1 << 20), ff = whole("n_expanded_embd", 1, 1 << 22);
    whole("vocab_size", 1, 1 << 24);
    const int64_t T = whole("num_tokens", 1, 1 << 24);
    const int64_t tp = whole("num_tensor_parallel_workers", 1, 1024);
    const CsvField& g = field("use_gated_mlp");
    bool gated;
    if (g.text == "True" || g.text == "true" || g.text == "1") gated = true;
    else if (g.text == "False" || g.text == "false" || g.text == "0") gated = false;
    else
      throw ConfigError(path, lineno, g.column, "use_gated_mlp", "'" + g.text + "' is not True or False");
    if (h % heads || kv_heads > heads)
      throw ConfigError(path, lineno, field("n_head").column, "n_head",
                        "n_embd " + std::to_string(h) + " is not a multiple of n_head, or n_kv_head > n_head");
    const int64_t hd = h / heads;
    const int64_t up = gated ? 2 * ff : ff;
    if (up % tp || ff % tp || (heads * hd) % tp || ((heads + 2 * kv_heads) * hd) % tp)
      throw ConfigError(path, lineno, field("num_tensor_parallel_workers").column,
                        "num_tensor_parallel_workers",
                        std::to_string(tp) + " workers do not divide the heads and MLP width");
    for (const std::string& op : ops_present) {
      const std::string p = "time_stats." + op + ".";
      double st[5];
      for (int i = 0; i < 5; ++i) {
        st[i] = csv_number(path, lineno, field(p + kVidurStats[size_t(i)]), p + kVidurStats[size_t(i)]);
        if (st[i] < 0)
          throw ConfigError(path, lineno, field(p + kVidurStats[size_t(i)]).column, p + kVidurStats[size_t(i)],
                            "negative time");
      }
      const CsvField& med = field(p + "median");
      const double lo = st[0], hi = st[1], median = st[3];
      if (median < lo * (1 - 1e-9) || median > hi * (1 + 1e-9))
        throw ConfigError(path, lineno, med.column, p + "median",
                          "median " + med.text + " is outside [min, max] = [" + field(p + "min").text + ", " +
                              field(p + "max").text + "]: inconsistent statistics or units");
      // Kernel times in milliseconds: from 0.5 us to 100 s.
      if (median < 5e-4 || median > 1e5)
        throw ConfigError(path, lineno, med.column, p + "median",
                          "time " + med.text + " is not plausibly in milliseconds (expected 0.0005 to 100000)");
      if (op == "emb" || op == "attn_rope") continue;
      Op o;
      const DType t = DType::F16;
      if (op == "attn_pre_proj") o = gemm_op(T, (heads + 2 * kv_heads) * hd / tp, h, true, t);
      else if (op == "attn_post_proj") o = gemm_op(T, h, heads * hd / tp, false, t);
      else if (op == "mlp_up_proj") o = gemm_op(T, up / tp, h, false, t);
      else if (op == "mlp_down_proj") o = gemm_op(T, h, ff / tp, false, t);
      else if (op == "input_layernorm" || op == "post_attention_layernorm")
        o = norm_op(gated ? OpFn::RMSNorm : OpFn::LayerNorm, T, h, t);
      else if (op == "mlp_act") o = eltwise_op(gated ? OpFn::Silu : OpFn::Gelu, T, ff / tp, gated ? 2 : 1, t);
      else if (op == "add") o = eltwise_op(OpFn::Add, T, h, 2, t);
      o.name = op;
      KernelSample s;
      s.op = std::move(o);
      s.label = op;
      s.seconds = std::max(median, 1e-9) * 1e-3;
      s.spread = median > 0 ? st[4] / median : 0;
      s.reps = 20;
      s.source = "vidur:" + path + ":" + std::to_string(lineno);
      out->push_back(std::move(s));
    }
  }
  if (header.empty()) throw ConfigError(path, 1, 1, "", "empty file: expected a Vidur mlp.csv header");
  if (rows == 0) throw ConfigError(path, lineno + 1, 1, "", "no data rows after the header");
}

// 1-based line and column of byte `at` of `text`.
std::pair<int, int> line_col(const std::string& text, size_t at) {
  at = std::min(at, text.size());
  int line = 1, colm = 1;
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') { ++line; colm = 1; } else ++colm;
  }
  return {line, colm};
}

}  // namespace

std::vector<KernelSample> import_vidur(const std::string& path) {
  std::vector<KernelSample> out;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> files;
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->path().filename() == "mlp.csv") files.push_back(it->path().string());
    if (ec) throw ConfigError(path, 0, 0, "", "cannot list the folder: " + ec.message());
    if (files.empty()) throw ConfigError(path, 0, 0, "", "no mlp.csv under this folder");
    std::sort(files.begin(), files.end());
    // Each file under the one input rule, and all of them together at most kMaxVidurFolderBytes:
    // every row becomes several ops, ~18 bytes of memory per byte of text (issue 49).
    std::uintmax_t total = 0;
    for (const std::string& f : files) {
      check_input_file(f);
      total += fs::file_size(f, ec);
      if (total > kMaxVidurFolderBytes)
        throw ConfigError(path, 0, 0, "", "the mlp.csv files under this folder hold more than " +
                                              std::to_string(kMaxVidurFolderBytes >> 20) +
                                              " MiB together (the limit of one import; at " + f + ")");
    }
    for (const std::string& f : files) parse_vidur_file(read_input_file(f), f, &out);
  } else {
    parse_vidur_file(read_input_file(path), path, &out);
  }
  return merge(std::move(out));
}

std::vector<KernelSample> parse_vidur(const std::string& text, const std::string& name) {
  std::vector<KernelSample> out;
  parse_vidur_file(text, name, &out);
  return merge(std::move(out));
}

std::vector<KernelSample> import_apxinf(const std::string& path, std::string* device_name) {
  return parse_apxinf(read_input_file(path), path, device_name);
}

namespace {
// Lower-case alphanumeric words of `s` ("NVIDIA GeForce RTX 4090" -> nvidia, geforce, rtx, 4090).
std::set<std::string> words(const std::string& s) {
  std::set<std::string> out;
  std::string w;
  for (char c : s + " ") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!w.empty()) {
      out.insert(w);
      w.clear();
    }
  }
  return out;
}
}  // namespace

std::string device_name_mismatch(const std::string& measured_on, const DeviceSpec& gpu) {
  static const std::set<std::string> vendor = {"nvidia", "geforce", "tesla", "jetson", "agx", "corporation"};
  std::set<std::string> entry = words(gpu.name + " " + gpu.description);
  for (const std::string& w : words(gpu.name)) {  // "rtx4090" also as "rtx" and "4090"
    size_t i = 0;
    while (i < w.size() && std::isalpha(static_cast<unsigned char>(w[i]))) ++i;
    if (i > 0 && i < w.size()) entry.insert(w.substr(0, i)), entry.insert(w.substr(i));
  }
  for (const std::string& w : words(measured_on))
    if (!vendor.count(w) && !entry.count(w))
      return "measured on '" + measured_on + "', but the catalog GPU " + gpu.name + " is '" + gpu.description +
             "' ('" + w + "' is not in its name)";
  return "";
}

std::vector<KernelSample> parse_apxinf(const std::string& text, const std::string& path, std::string* device_name) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    auto [l, c] = line_col(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string what = e.what();
    throw ConfigError(path, l, c, "", "malformed JSON: " + what.substr(what.find(']') + 2));
  } catch (const nlohmann::json::exception& e) {
    // Thrown while parsing without a byte position, e.g. a number past the double range
    // ("number overflow parsing '1e999'"): placed at the quoted token when it is in the text.
    std::string what = e.what();
    what = what.substr(what.find(']') + 2);
    std::pair<int, int> at{0, 0};
    const size_t q1 = what.find('\''), q2 = what.rfind('\'');
    if (q1 != std::string::npos && q2 > q1 + 1) {
      const size_t pos = text.find(what.substr(q1 + 1, q2 - q1 - 1));
      if (pos != std::string::npos) at = line_col(text, pos);
    }
    throw ConfigError(path, at.first, at.second, "", "malformed JSON: " + what);
  }
  // The line of the n-th (0-based) occurrence of "field": after "records" (a record's value).
  auto where = [&](const std::string& field, size_t nth) -> std::pair<int, int> {
    size_t at = text.find("\"records\"");
    for (size_t i = 0; at != std::string::npos && i <= nth; ++i) at = text.find("\"" + field + "\"", at + 1);
    return at == std::string::npos ? std::pair<int, int>{0, 0} : line_col(text, at);
  };
  // The line of "field" in the n-th record's key object (after its n-th "key").
  auto where_key = [&](const std::string& field, size_t nth) -> std::pair<int, int> {
    size_t at = text.find("\"records\"");
    for (size_t i = 0; at != std::string::npos && i <= nth; ++i) at = text.find("\"key\"", at + 1);
    if (at != std::string::npos) {
      const size_t f = text.find("\"" + field + "\"", at);
      if (f != std::string::npos) at = f;
    }
    return at == std::string::npos ? std::pair<int, int>{0, 0} : line_col(text, at);
  };
  auto fail_key = [&](const std::string& key, const std::string& field, size_t nth, const std::string& msg) {
    auto [l, c] = where_key(field, nth);
    throw ConfigError(path, l, c, key, msg);
  };
  auto fail = [&](const std::string& key, const std::string& field, size_t nth, const std::string& msg) {
    auto [l, c] = where(field, nth);
    throw ConfigError(path, l, c, key, msg);
  };
  check_json_unique_keys(text, path);  // a key given twice: refused, not the last one taken
  if (!j.is_object()) throw ConfigError(path, 1, 1, "", "expected a JSON object (ApxInf tuning file)");
  static const std::set<std::string> top = {"cublas_version", "cuda_version", "device_name", "kernel_build_id",
                                            "records", "schema", "sm", "tuning_policy"};
  for (auto& [k, v] : j.items())
    if (!top.count(k)) {
      auto [l, c] = line_col(text, text.find("\"" + k + "\""));
      throw ConfigError(path, l, c, k, "unknown key '" + k + "'; expected " +
                                           join_names(std::vector<std::string>(top.begin(), top.end())));
    }
  if (!j.contains("schema") || j["schema"] != "apxinf.cuda.tuning.v1")
    throw ConfigError(path, 1, 1, "schema", "schema must be apxinf.cuda.tuning.v1");
  if (!j.contains("records") || !j["records"].is_array() || j["records"].empty())
    throw ConfigError(path, 1, 1, "records", "missing or empty 'records' list");
  if (device_name && j.contains("device_name") && j["device_name"].is_string())
    *device_name = j["device_name"].get<std::string>();
  const std::string policy_cache = j.value("/tuning_policy/cache_state"_json_pointer, std::string("?"));
  const int iters = j.value("/tuning_policy/benchmark_iterations"_json_pointer, 0);
  std::vector<KernelSample> out;
  static const std::set<std::string> rec_keys = {"candidates", "key", "milliseconds", "profiles", "tactic"};
  static const std::set<std::string> key_keys = {"activation_dtype", "epilogue", "k", "layout", "m", "n", "op",
                                                 "output_dtype", "scale_mode", "weight_dtype", "workspace_limit"};
  const auto& recs = j["records"];
  for (size_t i = 0; i < recs.size(); ++i) {
    const auto& r = recs[i];
    const std::string at = "records[" + std::to_string(i) + "]";
    if (!r.is_object()) fail(at, "key", i, at + " is not an object");
    for (auto& [k, v] : r.items())
      if (!rec_keys.count(k)) fail(at + "." + k, "milliseconds", i, "unknown key '" + k + "' in " + at);
    if (!r.contains("key") || !r["key"].is_object()) fail(at + ".key", "milliseconds", i, at + " has no 'key' object");
    const auto& k = r["key"];
    for (auto& [kk, v] : k.items())
      if (!key_keys.count(kk)) fail_key(at + ".key." + kk, kk, i, "unknown key '" + kk + "' in " + at + ".key");
    int64_t dims[3];
    const char* names[3] = {"m", "n", "k"};
    for (int d = 0; d < 3; ++d) {
      if (!k.contains(names[d]) || !k[names[d]].is_number_integer() || k[names[d]].get<int64_t>() < 1 ||
          k[names[d]].get<int64_t>() > (int64_t(1) << 24))
        fail_key(at + ".key." + names[d], names[d], i, std::string(names[d]) + " must be a whole number from 1 to 16777216");
      dims[d] = k[names[d]].get<int64_t>();
    }
    for (const char* dt : {"op", "activation_dtype", "weight_dtype", "output_dtype"})
      if (k.value(dt, std::string()) != "bf16")
        fail_key(at + ".key." + dt, dt, i, std::string(dt) + " must be bf16 (only bf16 GEMMs are imported)");
    if (k.value("epilogue", std::string()) != "none")
      fail_key(at + ".key.epilogue", "epilogue", i, "epilogue must be none (only plain GEMMs are imported)");
    if (!r.contains("milliseconds") || !r["milliseconds"].is_number())
      fail(at + ".milliseconds", "milliseconds", i, "milliseconds must be a number");
    const double ms = r["milliseconds"].get<double>();
    if (!(ms >= 5e-4 && ms <= 1e5))
      fail(at + ".milliseconds", "milliseconds", i,
           "time " + std::to_string(ms) + " is not plausibly in milliseconds (expected 0.0005 to 100000)");
    KernelSample s;
    s.op = gemm_op(dims[0], dims[1], dims[2], false, DType::BF16);
    s.op.name = "gemm";
    s.label = "gemm";
    s.seconds = ms * 1e-3;
    s.reps = iters;
    auto [l, c] = where("milliseconds", i);
    s.source = "apxinf:" + path + ":" + std::to_string(l) + " (" + policy_cache + ")";
    out.push_back(std::move(s));
  }
  return merge(std::move(out));
}

void check_against_datasheet(const KernelSample& s, const DeviceSpec& gpu) {
  const OpWork w = op_work(s.op);
  const double peak = s.op.kind == OpKind::Gemm
                          ? std::max(gpu.peak.matrix(s.op.dtype), gpu.peak.matrix_fp16_acc16)
                          : std::max(gpu.peak.vector_fp32, gpu.peak.matrix(s.op.dtype));
  if (!(peak > 0) || !(gpu.mem_bw > 0)) return;  // no datasheet to hold it against
  const double datasheet_s = std::max(w.flops / peak, w.bytes / gpu.mem_bw);
  const double fastest_s = std::max(w.flops / (kDatasheetComputeSlack * peak), w.bytes / (kDatasheetMemorySlack * gpu.mem_bw));
  char buf[512];
  if (s.seconds < fastest_s) {
    std::snprintf(buf, sizeof buf,
                  "%s: measured %.3g s for %.3g FLOP and %.3g bytes, faster than %s's datasheet allows (%.3g FLOP/s, "
                  "%.3g bytes/s: at least %.3g s); is the file from another GPU, or in other units?",
                  s.label.c_str(), s.seconds, w.flops, w.bytes, gpu.name.c_str(), peak, gpu.mem_bw, fastest_s);
    throw ConfigError(s.source, 0, 0, "", buf);
  }
  const double slowest_s = std::max(kSlowestPlausibleS, kDatasheetSlowFactor * datasheet_s);
  if (s.seconds > slowest_s) {
    std::snprintf(buf, sizeof buf,
                  "%s: measured %.3g s, over %.0f times what %s's datasheet gives (%.3g s) and over %.3g s: "
                  "microseconds written as milliseconds, or the file is from another GPU?",
                  s.label.c_str(), s.seconds, kDatasheetSlowFactor, gpu.name.c_str(), datasheet_s, kSlowestPlausibleS);
    throw ConfigError(s.source, 0, 0, "", buf);
  }
}

DeviceProfile samples_to_profile(const std::vector<KernelSample>& samples, const DeviceSpec& gpu,
                                 const std::string& tool, const std::string& machine) {
  for (const KernelSample& s : samples) check_against_datasheet(s, gpu);
  DeviceProfile p;
  p.catalog_device = gpu.name;
  p.machine = machine;
  p.executor = tool;
  p.grid = "none";
  p.threads = {gpu.sms};
  for (const KernelSample& s : samples) {
    ProfileSection* sec = nullptr;
    for (ProfileSection& x : p.sections)
      if (x.dtype == s.op.dtype) sec = &x;
    if (!sec) {
      p.sections.push_back({});
      sec = &p.sections.back();
      sec->threads = gpu.sms;
      sec->dtype = s.op.dtype;
      sec->executor_device = tool + ":" + machine;
      p.dtypes.push_back(s.op.dtype);
    }
    Measurement m;
    m.kind = s.op.kind;
    m.fn = s.op.fn;
    m.work = op_work(s.op);
    m.median_s = s.seconds;
    m.spread = s.spread;
    m.reps = s.reps;
    m.source = s.source;
    sec->table[op_signature(s.op)] = m;
    p.repetitions = std::max(p.repetitions, s.reps);
  }
  for (ProfileSection& x : p.sections) x.refit();
  return p;
}

}  // namespace vlasim
