// Device profiles as JSON: profile_to_json / save_profile write one, parse_profile / load_profile
// read one back (every key checked, every measured figure within its bounds), and
// check_json_unique_keys refuses a repeated key. The rest of profile.h is in profile.cc.
#include "sim/measured/profile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "scenarios/config/config.h"

namespace vlasim {

using nlohmann::json;

namespace {

json work_json(const OpWork& w) { return json{{"flops", w.flops}, {"bytes", w.bytes}}; }

json fit_json(const FitModel& f) {
  return json{{"form", to_string(f.form)},     {"overhead_s", f.overhead_s},
              {"s_per_flop", f.s_per_flop},   {"s_per_byte", f.s_per_byte},
              {"points", f.points},           {"cv_roofline", f.cv_roofline},
              {"cv_linear", f.cv_linear},     {"fit_error", f.fit_error}};
}

// A JSON value with its key path, for precise errors.
class At {
 public:
  At(const json& j, std::string file, std::string path) : j_(j), file_(std::move(file)), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& msg) const { throw ConfigError(file_, 0, 0, path_, msg); }

  At key(const std::string& k) const {
    if (!j_.is_object()) fail("expected an object");
    auto it = j_.find(k);
    if (it == j_.end()) At(j_, file_, child(k)).fail("missing");
    return At(*it, file_, child(k));
  }
  bool has(const std::string& k) const { return j_.is_object() && j_.contains(k); }
  std::vector<At> items() const {
    if (!j_.is_array()) fail("expected an array");
    std::vector<At> out;
    for (size_t i = 0; i < j_.size(); ++i) out.emplace_back(j_[i], file_, path_ + "[" + std::to_string(i) + "]");
    return out;
  }
  std::vector<std::pair<std::string, At>> entries() const {
    if (!j_.is_object()) fail("expected an object");
    std::vector<std::pair<std::string, At>> out;
    for (auto it = j_.begin(); it != j_.end(); ++it) out.emplace_back(it.key(), At(it.value(), file_, child(it.key())));
    return out;
  }
  void check_keys(const std::vector<std::string>& allowed) const {
    for (const auto& [k, v] : entries())
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
        v.fail("unknown key; valid keys are: " + join_names(allowed));
  }
  std::string str() const {
    if (!j_.is_string()) fail("expected a string");
    return j_.get<std::string>();
  }
  bool boolean() const {
    if (!j_.is_boolean()) fail("expected true or false");
    return j_.get<bool>();
  }
  double num() const {
    if (!j_.is_number()) fail("expected a number");
    double v = j_.get<double>();
    if (!std::isfinite(v)) fail("expected a finite number");
    return v;
  }
  double nonneg() const {
    double v = num();
    if (v < 0) fail("must be >= 0");
    return v;
  }
  // A number from 0 to hi.
  double at_most(double hi) const {
    double v = nonneg();
    if (v > hi) fail("must be at most " + std::to_string(hi));
    return v;
  }
  // A measured figure within physical bounds: from lo to hi (inclusive), `what` saying the unit
  // and why ("bytes/s: 0.1 GB/s to 10 TB/s").
  double within(double lo, double hi, const std::string& what) const {
    const double v = num();
    if (lo > 0 && !(v > 0)) fail("must be > 0: from " + what);
    if (!(v >= lo && v <= hi)) fail("must be from " + what);
    return v;
  }
  double positive() const {
    double v = num();
    if (!(v > 0)) fail("must be > 0");
    return v;
  }
  int integer(int lo, int hi) const {
    if (!j_.is_number_integer()) fail("expected an integer");
    long long v = j_.get<long long>();
    if (v < lo || v > hi) fail("must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return static_cast<int>(v);
  }
  DType dtype() const {
    DType d;
    std::string s = str();
    if (!parse_dtype(s, &d)) fail("unknown dtype '" + s + "'; valid: fp32, bf16, fp16, int8");
    return d;
  }

 private:
  std::string child(const std::string& k) const { return path_.empty() ? k : path_ + "." + k; }
  const json& j_;
  std::string file_, path_;
};

OpKind parse_kind(const At& a) {
  std::string s = a.str();
  for (OpKind k : {OpKind::Gemm, OpKind::Attention, OpKind::Norm, OpKind::Elementwise,
                   OpKind::Embedding, OpKind::Transfer})
    if (s == to_string(k)) return k;
  a.fail("unknown op kind '" + s + "'");
}

OpFn parse_fn(const At& a) {
  std::string s = a.str();
  for (int i = static_cast<int>(OpFn::None); i <= static_cast<int>(OpFn::DeviceToDevice); ++i)
    if (s == to_string(static_cast<OpFn>(i))) return static_cast<OpFn>(i);
  a.fail("unknown op fn '" + s + "'");
}

FitModel parse_fit(const At& a) {
  a.check_keys({"form", "overhead_s", "s_per_flop", "s_per_byte", "points", "cv_roofline", "cv_linear", "fit_error"});
  FitModel f;
  std::string form = a.key("form").str();
  if (form == "roofline") f.form = FitForm::Roofline;
  else if (form == "linear") f.form = FitForm::Linear;
  else a.key("form").fail("unknown fit form '" + form + "'; valid: roofline, linear");
  // At most a second an op, a microsecond a FLOP or byte: past them no kernel was timed.
  f.overhead_s = a.key("overhead_s").at_most(1);
  f.s_per_flop = a.key("s_per_flop").at_most(1e-6);
  f.s_per_byte = a.key("s_per_byte").at_most(1e-6);
  f.points = a.key("points").integer(1, 1 << 30);
  f.cv_roofline = a.key("cv_roofline").num();
  f.cv_linear = a.key("cv_linear").num();
  f.fit_error = a.key("fit_error").nonneg();
  return f;
}

}  // namespace

std::string profile_to_json(const DeviceProfile& p) {
  json j;
  j["format"] = "vlasim-device-profile";
  j["version"] = DeviceProfile::kVersion;
  j["catalog_device"] = p.catalog_device;
  j["made_with"] = json{{"machine", p.machine},         {"logical_cpus", p.logical_cpus},
                        {"load_average", p.load_average},
                        {"executor", p.executor},       {"libraries", p.libraries},
                        {"date", p.date},               {"grid", p.grid},
                        {"repetitions", p.repetitions}, {"warmup", p.warmup}};
  if (!p.isa.empty()) j["made_with"]["isa"] = p.isa;
  if (p.graph) j["made_with"]["graph"] = true;
  j["threads"] = p.threads;
  json dts = json::array();
  for (DType d : p.dtypes) dts.push_back(to_string(d));
  j["dtypes"] = dts;
  json pts = json::array();
  for (const auto& [b, s] : p.memcpy.points) pts.push_back(json::array({b, s}));
  j["memcpy"] = json{{"link", p.memcpy.link},
                     {"latency_s", p.memcpy.latency_s},
                     {"bytes_per_s", p.memcpy.bytes_per_s},
                     {"points", pts}};
  if (!p.host.empty()) {
    json gs = json::array();
    for (const HostGroupBandwidth& g : p.host.groups)
      gs.push_back(json{{"cores", g.cores}, {"alone_bw", g.alone_bw}, {"loaded_bw", g.loaded_bw}});
    j["host"] = json{{"groups", gs},
                     {"node_bw", p.host.node_bw},
                     {"llc_bytes", p.host.llc_bytes},
                     {"llc_shared_cpus", p.host.llc_shared_cpus},
                     {"freq_hz", p.host.freq_hz}};
    if (!p.host.curve.empty()) {
      json cv = json::array();
      for (const auto& [bytes, bw] : p.host.curve) cv.push_back(json::array({bytes, bw}));
      j["host"]["curve"] = cv;
    }
    if (!p.host.corun.empty()) {
      json cs = json::array();
      for (const CorunSlowdown& c : p.host.corun)
        cs.push_back(json{{"key", c.key}, {"segment", c.segment}, {"runs", c.runs}, {"overlap", c.overlap},
                          {"slowdown", c.slowdown}});
      j["host"]["corun"] = cs;
    }
    if (const HostSteadiness& st = p.host.steadiness; st.measured())
      j["host"]["steadiness"] = json{{"seconds", st.seconds},
                                     {"window_s", st.window_s},
                                     {"windows", st.windows},
                                     {"memory_spread", st.memory_spread},
                                     {"core_spread", st.core_spread}};
  }
  if (!p.sentinel.empty()) {
    json ss = json::array();
    for (const auto& [t, v] : p.sentinel.samples) ss.push_back(json::array({t, v}));
    j["sentinel"] = ss;
    if (p.sentinel.others_cpu >= 0 && p.sentinel.steal >= 0)
      j["sentinel_load"] = json{{"others_cpu", p.sentinel.others_cpu}, {"steal", p.sentinel.steal}};
  }
  json secs = json::array();
  for (const ProfileSection& s : p.sections) {
    json js;
    js["threads"] = s.threads;
    js["dtype"] = to_string(s.dtype);
    js["executor_device"] = s.executor_device;
    json table = json::object();
    for (const auto& [sig, m] : s.table)
      table[sig] = json{{"kind", to_string(m.kind)}, {"fn", to_string(m.fn)},
                        {"work", work_json(m.work)}, {"median_s", m.median_s},
                        {"spread", m.spread},       {"reps", m.reps},
                        {"source", m.source}};
    js["table"] = table;
    json fits = json::object();
    for (const auto& [key, f] : s.fits) fits[key] = fit_json(f);
    js["fits"] = fits;
    js["skipped"] = s.skipped;
    if (s.op_overhead_s > 0) js["op_overhead_s"] = s.op_overhead_s;
    if (s.op_outside_s > 0) js["op_outside_s"] = s.op_outside_s;
    if (s.op_overhead_share > 0) js["op_overhead_share"] = s.op_overhead_share;
    if (!s.service_quantiles.empty()) js["service_quantiles"] = s.service_quantiles;
    secs.push_back(js);
  }
  j["sections"] = secs;
  return j.dump(1) + "\n";
}

void save_profile(const DeviceProfile& p, const std::string& path) {
  write_output_file(path, profile_to_json(p));
}

namespace {

// A SAX pass that only checks every object's keys for repeats (nlohmann keeps the last
// silently) and turns a syntax error into a ConfigError naming the file. Linear in the text:
// nlohmann's callback parser, used for this before, rescans a parent array at each object's
// end and took quadratic time on a long array of objects (issue 28).
struct DuplicateKeyCheck : nlohmann::json_sax<json> {
  const std::string& name;
  std::vector<std::set<std::string>> keys;  // keys seen in each open object, innermost last
  explicit DuplicateKeyCheck(const std::string& n) : name(n) {}
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    keys.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!keys.back().insert(k).second) throw ConfigError(name, 0, 0, k, "duplicate key in a JSON object");
    return true;
  }
  bool end_object() override {
    keys.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    // parse_error, and out_of_range for a number past a double's range ("1e400")
    throw ConfigError(name, 0, 0, "", std::string("malformed JSON: ") + e.what());
  }
};

}  // namespace

namespace {

// Physical bounds of a host entry's measured figures (calibrate measures them): a bandwidth
// (a core group's, the node's, a point of the curve) from 0.1 GB/s to 10 TB/s, the LLC 0 or
// 64 KiB to 64 GiB, the clock 0 or 10 MHz to 100 GHz; a sentinel kernel at most 60 s, taken at
// most 1e7 s after the start.
constexpr double kMinHostBw = 1e8, kMaxHostBw = 1e13;
constexpr const char* kHostBwRange = "1e8 to 1e13 bytes/s (0.1 GB/s to 10 TB/s)";
constexpr double kMaxSentinelKernelS = 60, kMaxSentinelAtS = 1e7;

HostEntry parse_host_entry(const At& h) {
  h.check_keys({"groups", "node_bw", "llc_bytes", "llc_shared_cpus", "freq_hz", "curve", "corun", "steadiness"});
  HostEntry e;
  for (const At& ga : h.key("groups").items()) {
    ga.check_keys({"cores", "alone_bw", "loaded_bw"});
    HostGroupBandwidth g;
    g.cores = ga.key("cores").integer(1, 1 << 16);
    if (!e.groups.empty() && g.cores <= e.groups.back().cores)
      ga.key("cores").fail("groups must grow in cores (each size once)");
    g.alone_bw = ga.key("alone_bw").within(kMinHostBw, kMaxHostBw, kHostBwRange);
    g.loaded_bw = ga.key("loaded_bw").within(kMinHostBw, kMaxHostBw, kHostBwRange);
    e.groups.push_back(g);
  }
  if (e.groups.empty()) h.key("groups").fail("a host entry needs at least one measured core group");
  e.node_bw = h.key("node_bw").within(kMinHostBw, kMaxHostBw, kHostBwRange);
  e.llc_bytes = h.key("llc_bytes").nonneg();
  if (e.llc_bytes != 0 && !(e.llc_bytes >= 65536 && e.llc_bytes <= 68719476736.0 && e.llc_bytes == std::floor(e.llc_bytes)))
    h.key("llc_bytes").fail("must be 0 (not measured) or a whole number of bytes from 64 KiB to 64 GiB");
  e.llc_shared_cpus = h.key("llc_shared_cpus").integer(0, 1 << 20);
  e.freq_hz = h.key("freq_hz").nonneg();
  if (e.freq_hz != 0 && !(e.freq_hz >= 1e7 && e.freq_hz <= 1e11))
    h.key("freq_hz").fail("must be 0 (not measured) or from 1e7 to 1e11 Hz (10 MHz to 100 GHz)");
  if (h.has("curve"))
    for (const At& pt : h.key("curve").items()) {
      std::vector<At> v = pt.items();
      if (v.size() != 2) pt.fail("expected [working-set bytes, bytes/s]");
      const double bytes = v[0].positive();
      if (bytes > 1e13) v[0].fail("must be at most 1e13 bytes (10 TB)");
      if (!e.curve.empty() && bytes <= e.curve.back().first) v[0].fail("curve sizes must increase");
      e.curve.push_back({bytes, v[1].within(kMinHostBw, kMaxHostBw, kHostBwRange)});
    }
  if (h.has("corun"))
    for (const At& ca : h.key("corun").items()) {
      ca.check_keys({"key", "segment", "runs", "overlap", "slowdown"});
      CorunSlowdown c;
      c.key = ca.key("key").str();
      if (c.key.empty()) ca.key("key").fail("must not be empty");
      if (!e.corun.empty() && c.key <= e.corun.back().key)
        ca.key("key").fail("co-run keys must increase (each key once)");
      c.segment = ca.key("segment").str();
      c.runs = ca.key("runs").integer(1, 1 << 30);
      c.overlap = ca.key("overlap").positive();
      if (c.overlap > 1) ca.key("overlap").fail("must be at most 1 (a share of the segment's time)");
      c.slowdown = ca.key("slowdown").positive();
      if (c.slowdown > 100) ca.key("slowdown").fail("must be at most 100");
      e.corun.push_back(std::move(c));
    }
  if (h.has("steadiness")) {
    const At st = h.key("steadiness");
    st.check_keys({"seconds", "window_s", "windows", "memory_spread", "core_spread"});
    HostSteadiness& s = e.steadiness;
    s.seconds = st.key("seconds").positive();
    if (s.seconds > 86400) st.key("seconds").fail("must be at most 86400 (a day)");
    s.window_s = st.key("window_s").positive();
    if (s.window_s > s.seconds) st.key("window_s").fail("must be at most seconds (a window within the measurement)");
    s.windows = st.key("windows").integer(2, 1 << 30);
    // A spread is max/min - 1 of window medians; 100 is a machine 101 times slower at times.
    s.memory_spread = st.key("memory_spread").nonneg();
    if (s.memory_spread > 100) st.key("memory_spread").fail("must be at most 100 (max/min - 1 of window medians)");
    s.core_spread = st.key("core_spread").nonneg();
    if (s.core_spread > 100) st.key("core_spread").fail("must be at most 100 (max/min - 1 of window medians)");
  }
  return e;
}

SentinelRecord parse_sentinel(const At& a) {
  SentinelRecord r;
  for (const At& pt : a.items()) {
    std::vector<At> v = pt.items();
    if (v.size() != 2) pt.fail("expected [seconds since start, kernel seconds]");
    const double t = v[0].within(0, kMaxSentinelAtS, "0 to 1e7 seconds since the start (116 days)");
    if (!r.samples.empty() && t < r.samples.back().first) v[0].fail("sentinel samples must not go back in time");
    const double kernel = v[1].positive();
    if (kernel > kMaxSentinelKernelS) v[1].fail("must be at most 60 seconds (one sentinel kernel)");
    r.samples.push_back({t, kernel});
  }
  return r;
}

// The profile's `sentinel` and `sentinel_load` (empty record when neither is given).
SentinelRecord parse_sentinel_keys(const At& root) {
  SentinelRecord r;
  if (root.has("sentinel")) r = parse_sentinel(root.key("sentinel"));
  if (root.has("sentinel_load")) {
    const At l = root.key("sentinel_load");
    if (!root.has("sentinel")) l.fail("given without the sentinel it describes");
    l.check_keys({"others_cpu", "steal"});
    r.others_cpu = l.key("others_cpu").within(0, 1, "a share of the machine's CPU time, 0 to 1");
    r.steal = l.key("steal").within(0, 1, "a share of the machine's CPU time, 0 to 1");
  }
  return r;
}

// A section's table entry `ma` for signature `sig` in a section of `dtype`.
Measurement parse_measurement(const At& ma, const std::string& sig, DType dtype) {
  ma.check_keys({"kind", "fn", "work", "median_s", "spread", "reps", "source"});
  Measurement m;
  m.kind = parse_kind(ma.key("kind"));
  m.fn = parse_fn(ma.key("fn"));
  const std::string prefix = std::string(to_string(m.kind)) + "/" + to_string(m.fn) + "/" + to_string(dtype) + "/";
  if (sig.rfind(prefix, 0) != 0)
    ma.fail("signature does not start with '" + prefix + "' (its kind, fn and the section's dtype)");
  At wa = ma.key("work");
  wa.check_keys({"flops", "bytes"});
  m.work.flops = wa.key("flops").nonneg();
  m.work.bytes = wa.key("bytes").nonneg();
  m.median_s = ma.key("median_s").positive();
  m.spread = ma.key("spread").nonneg();
  m.reps = ma.key("reps").integer(1, 1 << 30);
  m.source = ma.key("source").str();
  if (m.source != "grid" && m.source != "graph" && m.source != "in-context" &&
      m.source.rfind("vidur:", 0) != 0 && m.source.rfind("apxinf:", 0) != 0 && m.source.rfind("trace:", 0) != 0)
    ma.key("source").fail("must be 'grid', 'graph', 'in-context' or an import's 'vidur:<file>:<line>' / "
                          "'apxinf:<file>:<line> ...' / 'trace:<file>:<op key>'");
  return m;
}

}  // namespace

void check_json_unique_keys(const std::string& text, const std::string& name) {
  DuplicateKeyCheck check(name);
  json::sax_parse(text, &check);
}

DeviceProfile parse_profile(const std::string& text, const std::string& name) {
  check_json_unique_keys(text, name);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw ConfigError(name, 0, 0, "", std::string("malformed JSON: ") + e.what());
  }
  At root(j, name, "");
  root.check_keys({"format", "version", "catalog_device", "made_with", "threads", "dtypes", "memcpy", "host",
                   "sentinel", "sentinel_load", "sections"});
  if (root.key("format").str() != "vlasim-device-profile")
    root.key("format").fail("not a vlasim device profile (expected 'vlasim-device-profile')");
  int version = root.key("version").integer(0, 1 << 20);
  if (version != DeviceProfile::kVersion)
    root.key("version").fail("profile format version " + std::to_string(version) +
                             " is not supported (this build reads version " +
                             std::to_string(DeviceProfile::kVersion) + "); recalibrate");
  DeviceProfile p;
  p.catalog_device = root.key("catalog_device").str();
  if (p.catalog_device.empty()) root.key("catalog_device").fail("must not be empty");
  At mw = root.key("made_with");
  mw.check_keys({"machine", "isa", "graph", "logical_cpus", "load_average", "executor", "libraries", "date", "grid",
                 "repetitions", "warmup"});
  p.machine = mw.key("machine").str();
  if (mw.has("isa")) p.isa = mw.key("isa").str();
  if (mw.has("graph")) p.graph = mw.key("graph").boolean();
  p.logical_cpus = mw.key("logical_cpus").integer(0, 1 << 20);
  p.load_average = mw.key("load_average").nonneg();
  p.executor = mw.key("executor").str();
  for (const auto& [k, v] : mw.key("libraries").entries()) p.libraries[k] = v.str();
  p.date = mw.key("date").str();
  p.grid = mw.key("grid").str();
  p.repetitions = mw.key("repetitions").integer(0, 1 << 20);
  p.warmup = mw.key("warmup").integer(0, 1 << 20);
  for (const At& t : root.key("threads").items()) p.threads.push_back(t.integer(1, 1 << 16));
  for (const At& d : root.key("dtypes").items()) p.dtypes.push_back(d.dtype());

  At mc = root.key("memcpy");
  mc.check_keys({"link", "latency_s", "bytes_per_s", "points"});
  p.memcpy.link = mc.key("link").str();
  p.memcpy.latency_s = mc.key("latency_s").nonneg();
  p.memcpy.bytes_per_s = mc.key("bytes_per_s").nonneg();
  if (!p.memcpy.link.empty() && !(p.memcpy.bytes_per_s > 0))
    mc.key("bytes_per_s").fail("must be > 0 when a link is named");
  for (const At& pt : mc.key("points").items()) {
    std::vector<At> v = pt.items();
    if (v.size() != 2) pt.fail("expected [bytes, seconds]");
    p.memcpy.points.push_back({v[0].positive(), v[1].positive()});
    const size_t n = p.memcpy.points.size();
    if (n > 1 && (p.memcpy.points[n - 1].first <= p.memcpy.points[n - 2].first ||
                  p.memcpy.points[n - 1].second < p.memcpy.points[n - 2].second))
      pt.fail("memcpy points must grow in bytes and not shrink in seconds");
  }

  if (root.has("host")) {
    p.host = parse_host_entry(root.key("host"));
    if (p.logical_cpus > 0 && p.host.groups.back().cores > p.logical_cpus)
      root.key("host").key("groups").fail("a group of " + std::to_string(p.host.groups.back().cores) +
                                          " cores, but the profile was made on " +
                                          std::to_string(p.logical_cpus) + " logical CPUs");
  }
  p.sentinel = parse_sentinel_keys(root);

  for (const At& sa : root.key("sections").items()) {
    sa.check_keys({"threads", "dtype", "executor_device", "table", "fits", "skipped", "op_overhead_s",
                   "op_outside_s", "op_overhead_share", "service_quantiles"});
    ProfileSection s;
    s.threads = sa.key("threads").integer(1, 1 << 16);
    s.dtype = sa.key("dtype").dtype();
    if (std::find(p.threads.begin(), p.threads.end(), s.threads) == p.threads.end())
      sa.key("threads").fail("thread count " + std::to_string(s.threads) + " is not listed in 'threads'");
    if (std::find(p.dtypes.begin(), p.dtypes.end(), s.dtype) == p.dtypes.end())
      sa.key("dtype").fail(std::string("dtype ") + to_string(s.dtype) + " is not listed in 'dtypes'");
    if (p.section(s.threads, s.dtype))
      sa.fail("a second section for " + std::to_string(s.threads) + " threads, " + to_string(s.dtype));
    s.executor_device = sa.key("executor_device").str();
    for (const auto& [sig, ma] : sa.key("table").entries()) {
      s.table[sig] = parse_measurement(ma, sig, s.dtype);
    }
    for (const auto& [key, fa] : sa.key("fits").entries()) s.fits[key] = parse_fit(fa);
    for (const auto& [sig, why] : sa.key("skipped").entries()) s.skipped[sig] = why.str();
    if (sa.has("op_overhead_s")) s.op_overhead_s = sa.key("op_overhead_s").at_most(1);
    if (sa.has("op_overhead_share")) s.op_overhead_share = sa.key("op_overhead_share").at_most(1);
    if (sa.has("op_outside_s")) {
      s.op_outside_s = sa.key("op_outside_s").at_most(1);
      if (s.op_outside_s > s.op_overhead_s)
        sa.key("op_outside_s").fail("is " + std::to_string(s.op_outside_s) + " s, more than op_overhead_s (" +
                                    std::to_string(s.op_overhead_s) + " s), of which it is a part");
    }
    if (sa.has("service_quantiles")) {
      for (const At& q : sa.key("service_quantiles").items()) {
        const double v = q.positive();
        if (!s.service_quantiles.empty() && v < s.service_quantiles.back())
          q.fail("service quantiles must not decrease");
        s.service_quantiles.push_back(v);
      }
      if (s.service_quantiles.size() < 2)
        sa.key("service_quantiles").fail("needs at least 2 quantiles (the minimum and the maximum)");
    }
    p.sections.push_back(std::move(s));
  }
  if (p.sections.empty()) root.key("sections").fail("a profile needs at least one section");
  return p;
}

DeviceProfile load_profile(const std::string& path) {
  return parse_profile(read_input_file(path), path);
}

}  // namespace vlasim
