#include "scenarios/config.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace vlasim {

namespace {
std::string format_error(const std::string& file, int line, int column, const std::string& key,
                         const std::string& message) {
  std::ostringstream os;
  os << file;
  if (line > 0) {
    os << ':' << line;
    if (column > 0) os << ':' << column;
  }
  os << ": ";
  if (!key.empty()) os << "key '" << key << "': ";
  os << message;
  return os.str();
}

std::string child_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}
}  // namespace

ConfigError::ConfigError(const std::string& file, int line, int column, const std::string& key,
                         const std::string& message)
    : std::runtime_error(format_error(file, line, column, key, message)),
      file_(file),
      key_(key),
      message_(message),
      line_(line) {}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

ConfigNode::ConfigNode(YAML::Node node, std::shared_ptr<const std::string> file, std::string path)
    // yaml-cpp hands out "zombie" nodes for missing keys; most accessors (assignment too)
    // throw on them, so a missing child becomes a fresh undefined node.
    : node_(node.IsDefined() ? node : YAML::Node(YAML::NodeType::Undefined)),
      file_(std::move(file)),
      path_(std::move(path)) {}

ConfigNode& ConfigNode::operator=(const ConfigNode& o) {
  if (this != &o) {
    node_.reset(o.node_);
    file_ = o.file_;
    path_ = o.path_;
    parent_line_ = o.parent_line_;
    parent_col_ = o.parent_col_;
  }
  return *this;
}

static ConfigNode parse(const std::string& text, const std::string& name) {
  auto file = std::make_shared<const std::string>(name);
  try {
    return ConfigNode(YAML::Load(text), file, "");
  } catch (const YAML::Exception& e) {
    throw ConfigError(name, e.mark.line >= 0 ? e.mark.line + 1 : 0,
                      e.mark.column >= 0 ? e.mark.column + 1 : 0, "",
                      "malformed YAML: " + e.msg);
  }
}

ConfigNode ConfigNode::load_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path, 0, 0, "", "cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  ConfigNode n = parse(ss.str(), path);
  if (!n.defined()) throw ConfigError(path, 0, 0, "", "file is empty");
  return n;
}

ConfigNode ConfigNode::load_string(const std::string& text, const std::string& name) {
  return parse(text, name);
}

int ConfigNode::line() const {
  if (node_.IsDefined()) {
    auto m = node_.Mark();
    if (m.line >= 0) return m.line + 1;
  }
  return parent_line_;
}

void ConfigNode::fail(const std::string& message) const {
  int col = 0;
  if (node_.IsDefined() && node_.Mark().column >= 0) col = node_.Mark().column + 1;
  else col = parent_col_;
  throw ConfigError(*file_, line(), col, path_, message);
}

bool ConfigNode::has(const std::string& key) const {
  return node_.IsMap() && node_[key].IsDefined();
}

ConfigNode ConfigNode::optional(const std::string& key) const {
  if (defined() && !node_.IsMap()) fail("expected a map with key '" + key + "'");
  ConfigNode c(node_.IsMap() ? node_[key] : YAML::Node(YAML::NodeType::Undefined), file_,
               child_path(path_, key));
  if (!c.node_.IsDefined() || c.node_.IsNull()) {
    c.parent_line_ = line();
    c.parent_col_ = node_.IsDefined() && node_.Mark().column >= 0 ? node_.Mark().column + 1 : 0;
  }
  return c;
}

ConfigNode ConfigNode::required(const std::string& key) const {
  ConfigNode c = optional(key);
  if (!c.defined()) c.fail("missing required key");
  return c;
}

std::vector<ConfigNode> ConfigNode::items() const {
  if (!node_.IsSequence()) fail("expected a list");
  std::vector<ConfigNode> out;
  for (size_t i = 0; i < node_.size(); ++i)
    out.emplace_back(node_[i], file_, path_ + "[" + std::to_string(i) + "]");
  return out;
}

std::vector<std::pair<std::string, ConfigNode>> ConfigNode::entries() const {
  if (!node_.IsMap()) fail("expected a map");
  std::vector<std::pair<std::string, ConfigNode>> out;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    std::string k = it->first.as<std::string>();
    out.emplace_back(k, ConfigNode(it->second, file_, child_path(path_, k)));
  }
  return out;
}

void ConfigNode::check_keys(const std::vector<std::string>& allowed) const {
  if (!node_.IsMap()) fail("expected a map");
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    std::string k = it->first.as<std::string>();
    bool ok = false;
    for (const auto& a : allowed) ok = ok || a == k;
    if (!ok) {
      auto m = it->first.Mark();
      throw ConfigError(*file_, m.line + 1, m.column + 1, child_path(path_, k),
                        "unknown key; valid keys are: " + join_names(allowed));
    }
  }
}

std::string ConfigNode::as_string() const {
  if (!node_.IsScalar()) fail("expected a single value");
  return node_.Scalar();
}

double ConfigNode::as_double() const {
  std::string s = as_string();
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(v)) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    fail("expected a number, got '" + s + "'");
  }
}

long long ConfigNode::as_int() const {
  std::string s = as_string();
  try {
    size_t used = 0;
    long long v = std::stoll(s, &used);
    if (used != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    fail("expected an integer, got '" + s + "'");
  }
}

bool ConfigNode::as_bool() const {
  std::string s = as_string();
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  fail("expected true or false, got '" + s + "'");
}

std::vector<double> ConfigNode::as_doubles() const {
  std::vector<double> out;
  for (auto& c : items()) out.push_back(c.as_double());
  return out;
}

std::vector<long long> ConfigNode::as_ints() const {
  std::vector<long long> out;
  for (auto& c : items()) out.push_back(c.as_int());
  return out;
}

std::vector<std::string> ConfigNode::as_strings() const {
  if (node_.IsScalar()) return {as_string()};
  std::vector<std::string> out;
  for (auto& c : items()) out.push_back(c.as_string());
  return out;
}

std::string ConfigNode::get_string(const std::string& key, const std::string& fallback) const {
  ConfigNode c = optional(key);
  return c.defined() ? c.as_string() : fallback;
}
double ConfigNode::get_double(const std::string& key, double fallback) const {
  ConfigNode c = optional(key);
  return c.defined() ? c.as_double() : fallback;
}
long long ConfigNode::get_int(const std::string& key, long long fallback) const {
  ConfigNode c = optional(key);
  return c.defined() ? c.as_int() : fallback;
}
bool ConfigNode::get_bool(const std::string& key, bool fallback) const {
  ConfigNode c = optional(key);
  return c.defined() ? c.as_bool() : fallback;
}
double ConfigNode::get_positive(const std::string& key) const {
  ConfigNode c = required(key);
  double v = c.as_double();
  if (!(v > 0)) c.fail("must be greater than 0, got " + c.as_string());
  return v;
}
double ConfigNode::get_positive(const std::string& key, double fallback) const {
  ConfigNode c = optional(key);
  if (!c.defined()) return fallback;
  return get_positive(key);
}
double ConfigNode::get_nonneg(const std::string& key, double fallback) const {
  ConfigNode c = optional(key);
  if (!c.defined()) return fallback;
  double v = c.as_double();
  if (v < 0) c.fail("must not be negative, got " + c.as_string());
  return v;
}
long long ConfigNode::get_count(const std::string& key, long long fallback, long long lo,
                                long long hi) const {
  ConfigNode c = optional(key);
  if (!c.defined()) return fallback;
  long long v = c.as_int();
  if (v < lo || v > hi)
    c.fail("must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " +
           c.as_string());
  return v;
}

void Params::check(const std::vector<ParamSpec>& specs) const {
  if (!node_.defined()) return;
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back(s.name);
  if (names.empty() && node_.is_map() && node_.raw().size() > 0)
    node_.fail("this part takes no parameters");
  node_.check_keys(names);
}
double Params::get_double(const std::string& key, double fallback) const {
  return node_.defined() ? node_.get_double(key, fallback) : fallback;
}
long long Params::get_int(const std::string& key, long long fallback) const {
  return node_.defined() ? node_.get_int(key, fallback) : fallback;
}
std::string Params::get_string(const std::string& key, const std::string& fallback) const {
  return node_.defined() ? node_.get_string(key, fallback) : fallback;
}
bool Params::get_bool(const std::string& key, bool fallback) const {
  return node_.defined() ? node_.get_bool(key, fallback) : fallback;
}

}  // namespace vlasim
