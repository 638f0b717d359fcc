#include "scenarios/config/config.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace vlasim {

namespace {
// `text` with control characters other than line feed and tab written as \xNN: a value read
// from a file may hold a NUL, which ended the printed message there (issue 28).
std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

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
  return printable(os.str());
}

std::string child_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

int line_of(const YAML::Mark& m) { return m.line >= 0 ? m.line + 1 : 0; }
int column_of(const YAML::Mark& m) { return m.column >= 0 ? m.column + 1 : 0; }

// Throws if `value` is null, locating the error at `at` (the key, or the item itself).
void refuse_null(const YAML::Node& value, const YAML::Mark& at, const std::string& file,
                 const std::string& path, const std::string& message) {
  if (value.IsDefined() && value.IsNull())
    throw ConfigError(file, line_of(at), column_of(at), path, message);
}
const char* const kNullValue = "value is null; give a value or remove the key";

// Refuses non-scalar keys, a key given twice in one map, nesting past kMaxYamlDepth, an alias
// to a list or map that holds it, and more than kMaxYamlValues values (aliases counted each
// time they are used). A million values is twice a scenario of kMaxStreams streams, and
// walks in about 0.2 s (a billion-laughs document stops there).
constexpr long long kMaxYamlValues = 1'000'000;
struct TreeCheck {
  const std::string& file;
  long long values = 0;
  std::vector<YAML::Node> open;  // the lists and maps around the node being checked

  void walk(const YAML::Node& n, const std::string& path) {
    auto refuse = [&](const YAML::Mark& m, const std::string& key, const std::string& why) {
      throw ConfigError(file, line_of(m), column_of(m), key, why);
    };
    if (++values > kMaxYamlValues)
      refuse(n.Mark(), path, "more than " + std::to_string(kMaxYamlValues) +
                                 " values (an alias counts each time it is used)");
    if (!n.IsMap() && !n.IsSequence()) return;
    for (const YAML::Node& o : open)
      if (o.is(n)) refuse(n.Mark(), path, "an alias refers to a list or map that holds it");
    if (static_cast<int>(open.size()) >= kMaxYamlDepth)
      refuse(n.Mark(), path,
             "nesting deeper than " + std::to_string(kMaxYamlDepth) + " levels of lists and maps");
    open.push_back(n);
    if (n.IsSequence()) {
      for (size_t i = 0; i < n.size(); ++i) walk(n[i], path + "[" + std::to_string(i) + "]");
    } else {
      std::map<std::string, int> seen;  // key -> its line
      for (auto it = n.begin(); it != n.end(); ++it) {
        const YAML::Mark m = it->first.Mark();
        if (!it->first.IsScalar())
          refuse(m, path, "a key must be a single value (a name or a number)");
        const std::string k = it->first.Scalar();
        if (auto [prev, fresh] = seen.emplace(k, line_of(m)); !fresh)
          refuse(m, child_path(path, k),
                 "duplicate key; it is already given on line " + std::to_string(prev->second));
        walk(it->second, child_path(path, k));
      }
    }
    open.pop_back();
  }
};

// The 1-based line of the `---` that opens the document whose first node is on 0-based line
// `line0` (negative when unknown): the nearest such line at or above it.
int document_start_line(const std::string& text, int line0) {
  std::vector<size_t> starts{0};
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') starts.push_back(i + 1);
  const int last = static_cast<int>(starts.size()) - 1;
  for (int l = line0 >= 0 ? std::min(line0, last) : last; l >= 0; --l) {
    const size_t at = starts[static_cast<size_t>(l)];
    if (text.compare(at, 3, "---") == 0 &&
        (at + 3 == text.size() || std::isspace(static_cast<unsigned char>(text[at + 3]))))
      return l + 1;
  }
  return line0 >= 0 ? line0 + 1 : 0;
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

void check_input_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) {
    const bool absent = !ec || ec == std::errc::no_such_file_or_directory ||
                        ec == std::errc::not_a_directory;
    throw ConfigError(path, 0, 0, "", "cannot open file: " + (absent ? "no such file" : ec.message()));
  }
  if (fs::is_directory(st)) throw ConfigError(path, 0, 0, "", "is a directory, not a file");
  if (!fs::is_regular_file(st))
    throw ConfigError(path, 0, 0, "", "is not a regular file (a device, pipe or socket)");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw ConfigError(path, 0, 0, "", "cannot open file: " + ec.message());
  if (size > kMaxInputFileBytes)
    throw ConfigError(path, 0, 0, "", "file is " + std::to_string(size) +
                                          " bytes; the limit for an input file is " +
                                          std::to_string(kMaxInputFileBytes >> 20) + " MiB");
}

std::string read_input_file(const std::string& path) {
  check_input_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, 0, 0, "", "cannot open file");
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxInputFileBytes)
      throw ConfigError(path, 0, 0, "", "file grew past the limit for an input file, " +
                                            std::to_string(kMaxInputFileBytes >> 20) + " MiB");
  }
  if (in.bad()) throw ConfigError(path, 0, 0, "", "cannot read file");
  return text;
}

namespace {
// The umask of this process, read without changing it (umask(2) would, for every thread).
mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::strtol(line.c_str() + 6, nullptr, 8) & 0777);
  return 022;
}

// Writes all of `text` to `fd`; false (errno set) on any failed or short write.
bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}
}  // namespace

void write_output_file(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  auto fail = [&](const std::string& reason) {
    throw std::runtime_error("cannot write " + path + ": " + reason);
  };
  if (path.empty()) fail("no file name");
  std::error_code ec;
  fs::path target(path);
  if (fs::is_symlink(fs::symlink_status(target, ec))) {
    const fs::path resolved = fs::weakly_canonical(target, ec);
    if (ec) fail(ec.message());
    target = resolved;
  }
  struct stat st {};
  const bool exists = ::stat(target.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) fail("is a directory");
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or pipe: no temporary can be renamed onto it; written in place.
    const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) fail(std::strerror(errno));
    const bool ok = write_all(fd, text);
    const int err = errno;
    if (::close(fd) != 0 && ok) fail(std::strerror(errno));
    if (!ok) fail(std::strerror(err));
    return;
  }
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::string tmp = (dir / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) fail(std::strerror(errno));
  const mode_t mode = exists ? (st.st_mode & 07777) : (0666 & ~current_umask());
  bool ok = ::fchmod(fd, mode) == 0 && write_all(fd, text);
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(tmp.c_str(), target.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    fail(std::strerror(err));
  }
}

namespace {
// Where each document of a YAML text starts (its first node), read without building nodes.
// It also counts the values of the first document (keys and alias uses not counted) and
// refuses it past kMaxYamlValues before yaml-cpp builds a node: built, a 16 MiB flow list
// of small values took about 4 GB (issue 28). TreeCheck counts again on the built tree,
// aliases expanded.
struct DocumentStarts : YAML::EventHandler {
  const std::string& file;
  std::vector<YAML::Mark> starts;
  bool in_document = false;
  long long values = 0;
  std::string top_key;            // the top-level key whose value is being read
  std::vector<bool> expect_key;   // per open collection: a map expecting its next key (false
                                  // for a sequence, or a map expecting a value)
  std::vector<bool> is_map;
  explicit DocumentStarts(const std::string& f) : file(f) {}

  // A node starts at `m`; `scalar` is its text when it is a scalar.
  void node_at(const YAML::Mark& m, const std::string* scalar = nullptr) {
    if (in_document) starts.push_back(m);
    in_document = false;
    if (starts.size() != 1) return;  // only the first document is counted (a second is refused)
    if (!is_map.empty() && is_map.back()) {
      const bool key = expect_key.back();
      expect_key.back() = !key;
      if (key) {
        if (is_map.size() == 1) top_key = scalar ? *scalar : "";
        return;
      }
    }
    if (++values > kMaxYamlValues)
      throw ConfigError(file, line_of(m), column_of(m), top_key,
                        "more than " + std::to_string(kMaxYamlValues) + " values in one document");
  }
  void open(bool map) {
    is_map.push_back(map);
    expect_key.push_back(map);
  }
  void close() {
    if (starts.size() != 1 || is_map.empty()) return;
    is_map.pop_back();
    expect_key.pop_back();
  }
  void OnDocumentStart(const YAML::Mark&) override { in_document = true; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { node_at(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { node_at(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string& value) override {
    node_at(m, &value);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    node_at(m);
    if (starts.size() == 1) open(false);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    node_at(m);
    if (starts.size() == 1) open(true);
  }
  void OnMapEnd() override { close(); }
};
}  // namespace

static ConfigNode parse(const std::string& text, const std::string& name) {
  auto file = std::make_shared<const std::string>(name);
  YAML::Node root;
  try {
    // Documents are counted by hand, not with YAML::LoadAll: yaml-cpp 0.7 does not consume a
    // ',' that opens a document, so LoadAll("," or "# note\n,") returns an endless run of null
    // documents at one place (a hang that fills memory; found by tests/fuzz). Two documents
    // are enough to know there is a second; a document starting where the last one did is that
    // stuck parser.
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts docs(name);
    while (docs.starts.size() < 2 && parser.HandleNextDocument(docs)) {
      const auto& st = docs.starts;
      if (st.size() == 2 && st[1].pos == st[0].pos) {
        const char c = st[1].pos >= 0 && size_t(st[1].pos) < text.size() ? text[size_t(st[1].pos)] : '?';
        throw ConfigError(name, line_of(st[1]), column_of(st[1]), "",
                          std::string("malformed YAML: a document cannot start with '") + c + "'");
      }
    }
    if (docs.starts.size() > 1)
      throw ConfigError(name, document_start_line(text, docs.starts[1].line), 0, "",
                        "a second YAML document starts here; give one document per file");
    if (!docs.starts.empty()) root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    throw ConfigError(name, line_of(e.mark), column_of(e.mark), "",
                      "nesting deeper than " + std::to_string(kMaxYamlDepth) +
                          " levels of lists and maps");
  } catch (const YAML::Exception& e) {
    throw ConfigError(name, line_of(e.mark), column_of(e.mark), "", "malformed YAML: " + e.msg);
  }
  TreeCheck{name, 0, {}}.walk(root, "");
  return ConfigNode(root, file, "");
}

ConfigNode ConfigNode::load_file(const std::string& path) {
  ConfigNode n = parse(read_input_file(path), path);
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
  return node_.IsMap() && optional(key).defined();
}

ConfigNode ConfigNode::optional(const std::string& key) const {
  if (defined() && !node_.IsMap()) fail("expected a map with key '" + key + "'");
  const std::string path = child_path(path_, key);
  if (node_.IsMap())
    for (auto it = node_.begin(); it != node_.end(); ++it)
      if (it->first.IsScalar() && it->first.Scalar() == key) {
        refuse_null(it->second, it->first.Mark(), *file_, path, kNullValue);
        return ConfigNode(it->second, file_, path);
      }
  ConfigNode c(YAML::Node(YAML::NodeType::Undefined), file_, path);
  c.parent_line_ = line();
  c.parent_col_ = node_.IsDefined() ? column_of(node_.Mark()) : 0;
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
  for (size_t i = 0; i < node_.size(); ++i) {
    const std::string path = path_ + "[" + std::to_string(i) + "]";
    refuse_null(node_[i], node_[i].Mark(), *file_, path,
                "list item is null; give a value or remove the item");
    out.emplace_back(node_[i], file_, path);
  }
  return out;
}

std::vector<std::pair<std::string, ConfigNode>> ConfigNode::entries() const {
  if (!node_.IsMap()) fail("expected a map");
  std::vector<std::pair<std::string, ConfigNode>> out;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (!it->first.IsScalar()) fail("a key must be a single value (a name or a number)");
    const std::string k = it->first.Scalar();
    refuse_null(it->second, it->first.Mark(), *file_, child_path(path_, k), kNullValue);
    out.emplace_back(k, ConfigNode(it->second, file_, child_path(path_, k)));
  }
  return out;
}

void ConfigNode::check_keys(const std::vector<std::string>& allowed) const {
  if (!node_.IsMap()) fail("expected a map");
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (!it->first.IsScalar()) fail("a key must be a single value (a name or a number)");
    const std::string k = it->first.Scalar();
    bool ok = false;
    for (const auto& a : allowed) ok = ok || a == k;
    if (!ok) {
      auto m = it->first.Mark();
      throw ConfigError(*file_, m.line + 1, m.column + 1, child_path(path_, k),
                        "unknown key; valid keys are: " + join_names(allowed));
    }
  }
}

namespace {
// True if s is well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF).
bool valid_utf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned char c = *p++;
    if (c < 0x80) continue;
    int more;
    unsigned cp;
    if ((c & 0xE0) == 0xC0) more = 1, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) more = 2, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) more = 3, cp = c & 0x07;
    else return false;
    if (end - p < more) return false;
    for (int k = 0; k < more; ++k, ++p) {
      if ((*p & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (*p & 0x3F);
    }
    static const unsigned kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[more] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
  }
  return true;
}
}  // namespace

std::string ConfigNode::as_string() const {
  if (!node_.IsScalar()) fail("expected a single value");
  if (!valid_utf8(node_.Scalar())) fail("is not valid UTF-8 text");
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
