// Configuration layer shared by every part of vlasim: precise configuration errors and a
// checked view of YAML nodes that knows its file, line and key path.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace vlasim {

// A problem in user input (scenario, model card, catalog entry, profile, command line).
// what() reads "FILE:LINE:COL: key 'a.b.c': message"; LINE and COL are 1-based and
// omitted when unknown.
class ConfigError : public std::runtime_error {
 public:
  ConfigError(const std::string& file, int line, int column, const std::string& key,
              const std::string& message);
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& key() const { return key_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_, key_, message_;
  int line_;
};

// Joins names as "a, b, c" (used for "valid names are ..." messages).
std::string join_names(const std::vector<std::string>& names);

// Largest input file (scenario, card, catalog entry, profile) that is read.
inline constexpr std::uintmax_t kMaxInputFileBytes = std::uintmax_t{16} << 20;
// Deepest nesting of lists and maps accepted in a YAML input.
inline constexpr int kMaxYamlDepth = 64;

// Throws ConfigError naming `path` unless it is a regular file of at most kMaxInputFileBytes
// (a missing file, a directory, a device, a pipe or a larger file is refused before reading).
void check_input_file(const std::string& path);
// Reads a whole input file after check_input_file; throws ConfigError if it cannot be read or
// grows past kMaxInputFileBytes while being read.
std::string read_input_file(const std::string& path);

// The one writer of vlasim's output files. Writes `text` to a temporary file beside `path`,
// checks every write and the close, then renames it onto `path`: `path` is either left as it was
// or holds all of `text`, never a part. A `path` that is a device or pipe (/dev/null,
// /dev/stdout) is written in place, each write checked; a symbolic link is followed. A new file
// gets mode 0666 less the umask, a replaced one keeps its mode. Throws std::runtime_error
// "cannot write PATH: REASON" (a full disk, /dev/full, a missing folder) and leaves no temporary.
void write_output_file(const std::string& path, const std::string& text);

// A YAML node together with where it came from. Accessors throw ConfigError naming the
// file, line and full key path of the offending value.
//
// Documents loaded here hold one YAML document, no map with the same key twice, only single
// values as keys, at most kMaxYamlDepth levels of nesting, no alias to a list or map around
// it, and at most 4 million values counting every use of an alias. A key whose value is null (`~`,
// `null` or nothing) is an error wherever it is looked at (has, optional, required, get_*,
// entries), and so is a null list item (items); a key that is absent is missing.
class ConfigNode {
 public:
  ConfigNode() = default;
  ConfigNode(YAML::Node node, std::shared_ptr<const std::string> file, std::string path);
  ConfigNode(const ConfigNode&) = default;
  // Rebinds to o's node. (YAML::Node's own assignment would overwrite the node it refers
  // to inside the document, changing every other handle on it.)
  ConfigNode& operator=(const ConfigNode& o);

  // Parses a YAML file (read with read_input_file). Throws ConfigError if the file is
  // refused, malformed, breaks the rules above or holds no document.
  static ConfigNode load_file(const std::string& path);
  // Parses YAML text; `name` stands in for the file name in errors. Empty text gives an
  // undefined node.
  static ConfigNode load_string(const std::string& text, const std::string& name);

  bool defined() const { return node_.IsDefined() && !node_.IsNull(); }
  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }
  // Whether this is a map holding `key` (throws if its value is null).
  bool has(const std::string& key) const;

  // The child under `key`; throws if missing or null. optional() returns an undefined node
  // when the key is absent.
  ConfigNode required(const std::string& key) const;
  ConfigNode optional(const std::string& key) const;
  // Elements of a sequence (throws if this is not a sequence).
  std::vector<ConfigNode> items() const;
  // (key, child) pairs of a map in file order (throws if this is not a map).
  std::vector<std::pair<std::string, ConfigNode>> entries() const;
  // Throws if this map has a key outside `allowed`, naming it and listing the allowed keys.
  void check_keys(const std::vector<std::string>& allowed) const;

  std::string as_string() const;
  double as_double() const;
  long long as_int() const;
  bool as_bool() const;
  std::vector<double> as_doubles() const;
  std::vector<long long> as_ints() const;
  std::vector<std::string> as_strings() const;

  // Typed reads of a child with a default when it is absent.
  std::string get_string(const std::string& key, const std::string& fallback) const;
  double get_double(const std::string& key, double fallback) const;
  long long get_int(const std::string& key, long long fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  // Numeric reads with range checks: throws unless lo <= value (and value <= hi).
  double get_positive(const std::string& key) const;   // required, > 0
  double get_positive(const std::string& key, double fallback) const;
  double get_nonneg(const std::string& key, double fallback) const;
  long long get_count(const std::string& key, long long fallback, long long lo = 1,
                      long long hi = (1LL << 40)) const;

  // Throws a ConfigError located at this node.
  [[noreturn]] void fail(const std::string& message) const;

  const std::string& file() const { return *file_; }
  const std::string& path() const { return path_; }
  int line() const;  // 1-based, 0 when unknown
  const YAML::Node& raw() const { return node_; }

 private:
  YAML::Node node_;
  std::shared_ptr<const std::string> file_ = std::make_shared<const std::string>("<none>");
  std::string path_;
  int parent_line_ = 0, parent_col_ = 0;  // where the parent is, for missing keys
};

// Named parameters of a swappable part, as read from a scenario. A part declares its
// parameters (ParamSpec); Params::check rejects undeclared names.
struct ParamSpec {
  std::string name;
  std::string description;
  std::string default_value;  // as text, "" when required
};

class Params {
 public:
  Params() = default;
  explicit Params(ConfigNode node) : node_(std::move(node)) {}
  // Throws ConfigError for a key not in `specs`, listing the valid parameter names.
  void check(const std::vector<ParamSpec>& specs) const;
  double get_double(const std::string& key, double fallback) const;
  long long get_int(const std::string& key, long long fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  const ConfigNode& node() const { return node_; }

 private:
  ConfigNode node_;
};

}  // namespace vlasim
