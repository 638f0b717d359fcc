#include "sim/measured/torch_trace.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <istream>
#include <map>
#include <sstream>
#include <streambuf>
#include <tuple>
#include <unordered_map>

#include "scenarios/config/config.h"

namespace vlasim {

namespace {

using json = nlohmann::json;

// Reads a file through zlib (plain files pass through), counting bytes; past kMaxTraceBytes
// or on a zlib error it stops and says why.
class GzBuf : public std::streambuf {
 public:
  explicit GzBuf(gzFile f) : f_(f) {}
  uint64_t bytes = 0;
  std::string error;  // why reading stopped early, "" at a clean end

 protected:
  int_type underflow() override {
    if (!error.empty() || !f_) return traits_type::eof();
    const int n = gzread(f_, buf_, sizeof buf_);
    if (n < 0) {
      int code = 0;
      const char* m = gzerror(f_, &code);
      error = std::string("cannot decompress: ") + (m ? m : "zlib error") + " (a damaged or truncated gzip file)";
      return traits_type::eof();
    }
    if (n == 0) {
      int code = 0;
      gzerror(f_, &code);
      if (code != Z_OK && code != Z_STREAM_END) error = "cannot decompress: the gzip stream ends early or is damaged (a truncated or damaged gzip file)";
      return traits_type::eof();
    }
    bytes += uint64_t(n);
    if (bytes > kMaxTraceBytes) {
      error = "more than " + std::to_string(kMaxTraceBytes >> 20) +
              " MB of JSON; traces over that are refused (profile fewer steps: torch.profiler.schedule(active=N))";
      return traits_type::eof();
    }
    setg(buf_, buf_, buf_ + n);
    return traits_type::to_int_type(buf_[0]);
  }

 private:
  gzFile f_;
  char buf_[1 << 16];
};

enum class Cat { Skip, Op, Range, Kernel, Copy, Set, Launch, GpuRange };

Cat kineto_cat(const std::string& c) {
  std::string l = c;
  for (char& ch : l) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  if (l == "cpu_op" || l == "operator") return Cat::Op;
  if (l == "user_annotation") return Cat::Range;
  if (l == "kernel") return Cat::Kernel;
  if (l == "gpu_memcpy" || l == "memcpy") return Cat::Copy;
  if (l == "gpu_memset" || l == "memset") return Cat::Set;
  // launch calls of every back end Kineto names (its ActivityType): CUDA (HIP on ROCm builds),
  // Intel XPU, MTIA and out-of-tree devices (privateuse1); "runtime" is PyTorch 1.8/1.9's
  if (l == "cuda_runtime" || l == "cuda_driver" || l == "runtime" || l == "xpu_runtime" || l == "xpu_driver" ||
      l == "mtia_runtime" || l == "privateuse1_runtime" || l == "privateuse1_driver")
    return Cat::Launch;
  return Cat::Skip;
}

// One event as read, before its category is known to matter.
struct Ev {
  std::string name, ph, cat, pid, tid;
  bool has_cat = false, has_ts = false, has_dur = false, has_name = false, has_corr = false;
  double ts = 0, dur = 0;
  int64_t corr = 0, stream = -1;
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::string> types;
  bool has_dims = false;
  bool name_not_text = false, corr_not_number = false;  // present, but of the wrong JSON type
};

// Kept device and launch events.
struct DevEv {
  Cat cat;
  double ts, dur;
  int64_t corr, stream;
  size_t event;
};
struct LaunchEv {
  double ts;
  int thread;
  int64_t corr;
  size_t event;
  bool starts_work;  // named as a launch, copy or set (cudaLaunchKernel, hipMemcpyAsync, ...)
  bool graph;        // a graph replay (cudaGraphLaunch, hipGraphLaunch)
};

std::string lower(std::string s) {
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string num_text(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

// The SAX handler: walks the document keeping one event at a time.
class Reader : public nlohmann::json_sax<json> {
 public:
  explicit Reader(const std::string& name) : name_(name) {}
  TorchTrace t;
  std::vector<DevEv> dev;
  std::vector<LaunchEv> launches;
  bool saw_events = false;
  bool root_array = false;

  bool null() override { return scalar(Val{}); }
  bool boolean(bool) override { return scalar(Val{}); }
  bool number_integer(number_integer_t v) override { return scalar(Val{true, double(v), int64_t(v)}); }
  bool number_unsigned(number_unsigned_t v) override {
    return scalar(Val{true, double(v), v > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(v)});
  }
  bool number_float(number_float_t v, const string_t&) override {
    return scalar(Val{true, double(v), std::isfinite(v) && std::fabs(v) < 9e18 ? int64_t(v) : 0});
  }
  bool string(string_t& s) override { return scalar(Val{false, 0, 0, true, &s}); }
  bool binary(binary_t&) override { return scalar(Val{}); }

  bool start_object(std::size_t) override {
    const size_t d = stack_.size();
    if (is_events_array(d)) {
      in_ev_ = true;
      ev_ = Ev{};
      ev_depth_ = d + 1;
    } else if (in_ev_ && d == ev_depth_ + 1 && keys_[d - 1] == "args") {
      // args object
    } else if (d == 1 && !root_array && keys_[0] == "deviceProperties") {
    }
    stack_.push_back(true);
    keys_.push_back("");
    return true;
  }
  bool end_object() override {
    stack_.pop_back();
    keys_.pop_back();
    if (in_ev_ && stack_.size() + 1 == ev_depth_) {
      in_ev_ = false;
      finish_event();
    }
    after_value();
    return true;
  }
  bool start_array(std::size_t) override {
    const size_t d = stack_.size();
    if (is_events_array(d)) not_an_event("a list");
    if (d == 0) {
      root_array = true;
      saw_events = true;
    }
    if (d == 2 && !root_array && keys_[0] == "traceEvents") {
    }
    if (in_ev_ && d == ev_depth_ + 1 && is_dims_key(keys_[d - 1]) && keys_[ev_depth_ - 1] == "args") {
      ev_.has_dims = true;
    }
    if (in_ev_ && d == ev_depth_ + 2 && dims_open(d)) ev_.dims.emplace_back();
    stack_.push_back(false);
    keys_.push_back("");
    if (d == 1 && !root_array && keys_[0] == "traceEvents") saw_events = true;
    return true;
  }
  bool end_array() override {
    stack_.pop_back();
    keys_.pop_back();
    after_value();
    return true;
  }
  bool key(string_t& k) override {
    keys_.back() = k;
    return true;
  }
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& e) override {
    std::string m = e.what();
    const size_t p = m.find("] ");
    if (p != std::string::npos) m = m.substr(p + 2);
    throw ConfigError(name_, 0, 0, where(), "malformed JSON at byte " + std::to_string(pos) + ": " + m);
  }

  // "traceEvents[i]" or "[i]" for the event being read (or the last one).
  std::string where() const {
    return (root_array ? std::string("[") : std::string("traceEvents[")) + std::to_string(t.events) + "]";
  }

 private:
  struct Val {
    bool num = false;
    double d = 0;
    int64_t i = 0;
    bool str = false;
    std::string* s = nullptr;
  };
  const std::string& name_;
  std::vector<bool> stack_;  // true: object
  std::vector<std::string> keys_;
  bool in_ev_ = false;
  size_t ev_depth_ = 0;  // stack size inside the event object
  Ev ev_;
  std::unordered_map<std::string, int> thread_ids_;

  // The array at stack depth d holds events.
  bool is_events_array(size_t d) const {
    if (in_ev_ || d == 0 || stack_[d - 1]) return false;
    if (d == 1) return root_array;
    return d == 2 && !root_array && stack_[0] && keys_[0] == "traceEvents";
  }
  bool dims_open(size_t d) const {
    return d >= ev_depth_ + 2 && keys_[ev_depth_ - 1] == "args" && is_dims_key(keys_[ev_depth_]);
  }
  // PyTorch writes "Input Dims"; 1.8.0 wrote "Input dims".
  static bool is_dims_key(const std::string& k) { return k == "Input Dims" || k == "Input dims"; }
  void after_value() {}

  // An element of the event list that is no object: refused, naming it.
  [[noreturn]] void not_an_event(const std::string& what) const {
    throw ConfigError(name_, 0, 0, where(), what + " where an event (a JSON object) should be: not a PyTorch profiler trace");
  }

  bool scalar(const Val& v) {
    const size_t d = stack_.size();
    if (is_events_array(d)) not_an_event(v.str ? "a string" : v.num ? "a number" : "a literal");
    if (d == 1 && !root_array && stack_[0] && keys_[0] == "deviceProperties") return true;
    if (d == 3 && !root_array && keys_[0] == "deviceProperties" && keys_[2] == "name" && v.str &&
        t.device_name.empty())
      t.device_name = *v.s;
    if (!in_ev_) return true;
    if (d == ev_depth_) {
      const std::string& k = keys_[d - 1];
      if (k == "name" && v.str) ev_.name = *v.s, ev_.has_name = true;
      else if (k == "name") ev_.name_not_text = true;
      else if (k == "ph" && v.str) ev_.ph = *v.s;
      else if (k == "cat" && v.str) ev_.cat = *v.s, ev_.has_cat = true;
      else if (k == "ts" && v.num) ev_.ts = v.d, ev_.has_ts = true;
      else if (k == "dur" && v.num) ev_.dur = v.d, ev_.has_dur = true;
      else if (k == "pid") ev_.pid = v.str ? *v.s : v.num ? std::to_string(v.i) : "";
      else if (k == "tid") ev_.tid = v.str ? *v.s : v.num ? std::to_string(v.i) : "";
      else if (k == "ts" || k == "dur")
        throw ConfigError(name_, 0, 0, where() + "." + k, "'" + k + "' is not a number");
    } else if (d == ev_depth_ + 1 && keys_[ev_depth_ - 1] == "args") {
      const std::string& k = keys_[d - 1];
      if (k == "correlation" && v.num) ev_.corr = v.i, ev_.has_corr = true;
      else if (k == "correlation") ev_.corr_not_number = true;
      else if (k == "stream" && v.num) ev_.stream = v.i;
    } else if (d == ev_depth_ + 2 && keys_[ev_depth_ - 1] == "args" && keys_[ev_depth_] == "Input type") {
      ev_.types.push_back(v.str ? *v.s : "");
    } else if (d == ev_depth_ + 3 && dims_open(d) && v.num && !ev_.dims.empty()) {
      if (ev_.dims.back().size() < 16) ev_.dims.back().push_back(v.i);
    }
    return true;
  }

  int thread_of(const Ev& e) {
    const std::string key = e.pid + "/" + e.tid;
    auto [it, fresh] = thread_ids_.try_emplace(key, int(t.threads.size()));
    if (fresh) t.threads.push_back(key);
    return it->second;
  }

  void finish_event() {
    const std::string w = where();
    ++t.events;
    if (ev_.ph != "X") return;  // metadata, instants, flows, counters
    Cat c;
    if (ev_.has_cat) {
      t.kineto = true;
      c = kineto_cat(ev_.cat);
    } else {
      // legacy: "ns::op" names are ops, others record_function ranges
      c = ev_.name.find("::") != std::string::npos ? Cat::Op : Cat::Range;
    }
    if (c == Cat::Skip) return;
    if (!ev_.has_name && (c == Cat::Op || c == Cat::Range))
      throw ConfigError(name_, 0, 0, w + ".name",
                        ev_.name_not_text ? "'name' is not a string" : "an 'X' event without a name");
    // PyTorch 1.8/1.9 wrote record_function ranges (ProfilerStep#N, optimizer steps, the
    // user's) as "Operator" too: a range when it is a profiler step, or when its name has no
    // namespace and it recorded no input (an op records its inputs' dims, [] for a scalar)
    if (c == Cat::Op && ev_.has_cat && lower(ev_.cat) == "operator" &&
        (ev_.name.rfind("ProfilerStep#", 0) == 0 || (ev_.name.find("::") == std::string::npos && ev_.dims.empty())))
      c = Cat::Range;
    if (!ev_.has_ts) throw ConfigError(name_, 0, 0, w + ".ts", "an 'X' event without 'ts' (its start, us)");
    if (!ev_.has_dur) throw ConfigError(name_, 0, 0, w + ".dur", "an 'X' event without 'dur' (its duration, us)");
    if (!std::isfinite(ev_.ts) || ev_.ts < 0)
      throw ConfigError(name_, 0, 0, w + ".ts", "start " + num_text(ev_.ts) + " is negative or not finite");
    if (ev_.ts > kMaxTraceTimeUs)
      throw ConfigError(name_, 0, 0, w + ".ts",
                        "start " + num_text(ev_.ts) + " us is past any clock a profiler uses (over " +
                            num_text(kMaxTraceTimeUs) + " us): a damaged trace");
    if (!std::isfinite(ev_.dur) || ev_.dur < 0)
      throw ConfigError(name_, 0, 0, w + ".dur",
                        "negative or non-finite duration " + num_text(ev_.dur) + " ('" + ev_.name + "')");
    if (ev_.dur > kMaxTraceEventUs)
      throw ConfigError(name_, 0, 0, w + ".dur",
                        "duration " + num_text(ev_.dur) + " us ('" + ev_.name + "') is over a day (" +
                            num_text(kMaxTraceEventUs) + " us): a damaged trace");
    switch (c) {
      case Cat::Op: {
        TraceOp o;
        o.name = ev_.name;
        o.ts_us = ev_.ts;
        o.dur_us = ev_.dur;
        o.thread = thread_of(ev_);
        o.dims = std::move(ev_.dims);
        o.types = std::move(ev_.types);
        if (ev_.has_dims) t.shapes = true;
        o.event = t.events - 1;
        t.ops.push_back(std::move(o));
        break;
      }
      case Cat::Range:
        t.ranges.push_back({ev_.name, ev_.ts, ev_.dur, thread_of(ev_), -1});
        break;
      case Cat::Kernel:
      case Cat::Copy:
      case Cat::Set:
        if (!ev_.has_corr)
          throw ConfigError(name_, 0, 0, w + ".args.correlation",
                            ev_.corr_not_number
                                ? "'correlation' is not a number (it names the launch call the device event belongs to)"
                                : "a device event without 'correlation' (which launch call it belongs to)");
        dev.push_back({c, ev_.ts, ev_.dur, ev_.corr, ev_.stream, t.events - 1});
        break;
      case Cat::Launch:
        if (ev_.name.find("Synchronize") != std::string::npos) t.syncs.push_back({ev_.ts, ev_.dur, thread_of(ev_)});
        if (ev_.name.find("GraphLaunch") != std::string::npos)
          t.graph_launches.push_back({ev_.ts, ev_.dur, thread_of(ev_)});
        if (ev_.has_corr)
          launches.push_back({ev_.ts, thread_of(ev_), ev_.corr, t.events - 1,
                              ev_.name.find("Launch") != std::string::npos || ev_.name.find("Memcpy") != std::string::npos ||
                                  ev_.name.find("Memset") != std::string::npos,
                              ev_.name.find("GraphLaunch") != std::string::npos});
        break;
      default:
        break;
    }
  }
};

struct ByStart {
  template <class T>
  bool operator()(const T& a, const T& b) const {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.ts_us != b.ts_us) return a.ts_us < b.ts_us;
    return a.dur_us > b.dur_us;
  }
};

// A device event recorded twice (same kind, stream, correlation, start and duration: two
// kernels cannot run at once on one stream) is a trace written twice or merged: refused.
void refuse_repeated_device_events(const Reader& r, const std::string& name, const std::string& list) {
  std::vector<size_t> by(r.dev.size());
  for (size_t i = 0; i < by.size(); ++i) by[i] = i;
  auto key = [&](size_t i) {
    const DevEv& d = r.dev[i];
    return std::make_tuple(d.stream, d.corr, d.ts, d.dur, int(d.cat));
  };
  std::sort(by.begin(), by.end(), [&](size_t a, size_t b) { return key(a) != key(b) ? key(a) < key(b) : a < b; });
  for (size_t i = 1; i < by.size(); ++i)
    if (key(by[i]) == key(by[i - 1]))
      throw ConfigError(name, 0, 0, list + std::to_string(r.dev[by[i]].event) + "]",
                        "repeats " + list + std::to_string(r.dev[by[i - 1]].event) +
                            "] (same stream, correlation " + std::to_string(r.dev[by[i]].corr) +
                            ", start and duration): a trace written twice or merged from copies counts its device "
                            "time twice; refused");
}

// Launch calls but no device event at all: the GPU's activity was not recorded (or dropped),
// and the ops' times would be their CPU dispatch times. Refused.
void refuse_missing_device_events(const Reader& r, const TorchTrace& t, const std::string& name,
                                  const std::string& list) {
  size_t starting = 0, first_starting = 0;
  for (const LaunchEv& l : r.launches)
    if (l.starts_work && starting++ == 0) first_starting = l.event;
  if (r.dev.empty() && starting > 0)
    throw ConfigError(name, 0, 0, list + std::to_string(first_starting) + "]",
                      std::to_string(starting) + " kernel launch, copy or set calls" +
                          (t.device_name.empty() ? std::string() : " on " + t.device_name) +
                          " but no kernel, copy or set: the trace's GPU events are missing (recorded without "
                          "ProfilerActivity.CUDA, or dropped by the profiler); its op times would be CPU dispatch "
                          "times, not GPU times. Record with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]");
}

// Each launch call's device time and the end of its last device event (-1: it launched none recorded).
struct LaunchDevice {
  std::vector<double> us, end;
};

// Adds every device event to t's totals and to its launch call's device time and end, and
// counts those in flight at the profiler's start (see the header) apart; refuses any other
// device event that no launch call has.
LaunchDevice add_device_events(const Reader& r, TorchTrace& t, const std::string& name) {
  // Launch calls by correlation.
  std::unordered_map<int64_t, size_t> launch_of;
  for (size_t i = 0; i < r.launches.size(); ++i) launch_of.emplace(r.launches[i].corr, i);
  LaunchDevice ld{std::vector<double>(r.launches.size(), 0.0), std::vector<double>(r.launches.size(), -1.0)};
  // In flight at the profiler's start (see the header): a device event with no launch call,
  // with a correlation below every launch call's, that starts before the first launched
  // device event on its stream (on a stream with none: before the first launch call that
  // launched a recorded device event).
  double first_launching = 1e308;
  bool any_launching = false;
  std::map<int64_t, double> first_launched;  // stream -> start of its first launched device event
  int64_t lowest_corr = INT64_MAX;
  for (const LaunchEv& l : r.launches) lowest_corr = std::min(lowest_corr, l.corr);
  for (const DevEv& d : r.dev) {
    auto it = launch_of.find(d.corr);
    if (it == launch_of.end()) continue;
    any_launching = true;
    first_launching = std::min(first_launching, r.launches[it->second].ts);
    auto [f, fresh] = first_launched.try_emplace(d.stream, d.ts);
    if (!fresh) f->second = std::min(f->second, d.ts);
  }
  auto launched_before = [&](const DevEv& d) {
    auto f = first_launched.find(d.stream);
    return d.ts < (f != first_launched.end() ? f->second : first_launching);
  };
  for (const DevEv& d : r.dev) {
    double* sum = d.cat == Cat::Kernel ? &t.kernel_us : d.cat == Cat::Copy ? &t.copy_us : &t.set_us;
    size_t* count = d.cat == Cat::Kernel ? &t.kernels : d.cat == Cat::Copy ? &t.copies : &t.sets;
    *sum += d.dur;
    ++*count;
    ++t.streams[d.stream];
    t.device.push_back({d.ts, d.dur, d.stream, -1, -1, false, d.corr});
    auto it = launch_of.find(d.corr);
    if (it == launch_of.end() && any_launching && launched_before(d) && d.corr < lowest_corr) {
      ++t.inflight;
      t.inflight_us += d.dur;
      continue;
    }
    if (it == launch_of.end())
      throw ConfigError(name, 0, 0,
                        (r.root_array ? "[" : "traceEvents[") + std::to_string(d.event) + "].args.correlation",
                        "a " + std::string(d.cat == Cat::Kernel ? "kernel" : d.cat == Cat::Copy ? "copy" : "memset") +
                            " with correlation " + std::to_string(d.corr) +
                            " that no launch call (cuda_runtime / cuda_driver) has, and that was not in flight when "
                            "the profiler started (it starts after the first launched event on its stream " +
                            std::to_string(d.stream) +
                            ", or its correlation is not below every launch call's): a broken trace");
    ld.us[it->second] += d.dur;
    ld.end[it->second] = std::max(ld.end[it->second], d.ts + d.dur);
    const LaunchEv& l = r.launches[it->second];
    if (l.graph) t.graph_us += d.dur;
    t.device.back().launch_us = l.ts;
    t.device.back().thread = l.thread;
    t.device.back().graph = l.graph;
  }
  return ld;
}

// A launch call that launched recorded device work: its thread, start and last device end.
struct LaunchEnd {
  int thread;
  double ts, end;
};

// Orders launch ends by thread, then start.
bool launch_before(const LaunchEnd& a, const LaunchEnd& b) {
  return a.thread != b.thread ? a.thread < b.thread : a.ts < b.ts;
}

// Sets each op's parent and gives each launch call's device time and end to the innermost op
// open at its start, then each op its children's (t.ops sorted ByStart). Returns the ends of
// the launch calls that launched recorded device work.
std::vector<LaunchEnd> nest_ops(const Reader& r, TorchTrace& t, const LaunchDevice& ld) {
  // One sweep per thread over ops and launch calls by start time: the stack holds the ops open
  // at that time, so an op's parent and a launch's innermost op are its top. Linear in events
  // (after sorting) however deep the nesting.
  std::vector<size_t> order(r.launches.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const LaunchEv &x = r.launches[a], &y = r.launches[b];
    return x.thread != y.thread ? x.thread < y.thread : x.ts < y.ts;
  });
  std::vector<LaunchEnd> ends;
  std::vector<int> stack;
  auto pop_until = [&](int thread, double ts, bool op_start) {
    while (!stack.empty()) {
      const TraceOp& top = t.ops[size_t(stack.back())];
      const double end = top.ts_us + top.dur_us;
      if (top.thread != thread || (op_start ? ts >= end : ts > end)) stack.pop_back();
      else break;
    }
  };
  auto take_launch = [&](size_t li) {
    const LaunchEv& l = r.launches[li];
    if (ld.end[li] < 0) return;  // launched nothing recorded
    pop_until(l.thread, l.ts, false);
    ends.push_back({l.thread, l.ts, ld.end[li]});
    if (stack.empty()) return;
    TraceOp& o = t.ops[size_t(stack.back())];
    o.device_us += ld.us[li];
    o.device_end_us = std::max(o.device_end_us, ld.end[li]);
    t.launched_us += ld.us[li];
  };
  size_t next = 0;
  for (size_t i = 0; i < t.ops.size(); ++i) {
    TraceOp& o = t.ops[i];
    // launches before this op starts (on earlier threads, or earlier on this one)
    while (next < order.size()) {
      const LaunchEv& l = r.launches[order[next]];
      if (l.thread < o.thread || (l.thread == o.thread && l.ts < o.ts_us)) take_launch(order[next++]);
      else break;
    }
    pop_until(o.thread, o.ts_us, true);
    o.parent = stack.empty() ? -1 : stack.back();
    stack.push_back(int(i));
  }
  while (next < order.size()) take_launch(order[next++]);
  // Device time and end of an op include its children's: children come after their parent.
  for (size_t i = t.ops.size(); i-- > 0;) {
    const TraceOp& o = t.ops[i];
    if (o.parent < 0) continue;
    TraceOp& p = t.ops[size_t(o.parent)];
    p.device_us += o.device_us;
    p.device_end_us = std::max(p.device_end_us, o.device_end_us);
  }
  return ends;
}

// Sets each range's last device end: the latest end of the launches inside it (a segment tree).
void set_range_device_ends(std::vector<LaunchEnd> ends, TorchTrace& t) {
  std::sort(ends.begin(), ends.end(), launch_before);
  const size_t n = ends.size();
  std::vector<double> tree(2 * n, -1);  // a segment tree of the ends (max)
  for (size_t i = 0; i < n; ++i) tree[n + i] = ends[i].end;
  for (size_t i = n; i-- > 1;) tree[i] = std::max(tree[2 * i], tree[2 * i + 1]);
  for (TraceRange& q : t.ranges) {
    auto lo = std::lower_bound(ends.begin(), ends.end(), LaunchEnd{q.thread, q.ts_us, 0}, launch_before);
    auto hi = std::upper_bound(ends.begin(), ends.end(), LaunchEnd{q.thread, q.ts_us + q.dur_us, 0}, launch_before);
    if (lo >= hi) continue;
    const size_t a = size_t(lo - ends.begin()), b = size_t(hi - ends.begin());  // [a, b)
    double m = -1;
    for (size_t l = a + n, r = b + n; l < r; l >>= 1, r >>= 1) {
      if (l & 1) m = std::max(m, tree[l++]);
      if (r & 1) m = std::max(m, tree[--r]);
    }
    q.device_end_us = m;
  }
}

// The trace read by `r`, checked whole and its events tied together: ops nested, device time
// given to ops and ranges.
TorchTrace finish(Reader& r, const std::string& name) {
  TorchTrace t = std::move(r.t);
  t.path = name;
  if (!r.saw_events)
    throw ConfigError(name, 0, 0, "traceEvents",
                      "no 'traceEvents' list: not a PyTorch profiler trace (torch.profiler's export_chrome_trace)");
  const std::string list = r.root_array ? "[" : "traceEvents[";
  if (t.ops.empty() && t.ranges.empty() && r.dev.empty() && r.launches.empty())
    throw ConfigError(name, 0, 0, r.root_array ? "[]" : "traceEvents",
                      std::to_string(t.events) + (t.events == 1 ? " event" : " events") +
                          ", none of them an op, a record_function range, a kernel, copy or set, or a launch "
                          "call: nothing to read (an empty or foreign trace)");
  refuse_repeated_device_events(r, name, list);
  refuse_missing_device_events(r, t, name, list);
  std::stable_sort(t.ops.begin(), t.ops.end(), ByStart{});
  std::stable_sort(t.ranges.begin(), t.ranges.end(), ByStart{});
  const LaunchDevice ld = add_device_events(r, t, name);
  set_range_device_ends(nest_ops(r, t, ld), t);
  std::stable_sort(t.device.begin(), t.device.end(), [](const TraceDeviceEvent& a, const TraceDeviceEvent& b) {
    return a.stream != b.stream ? a.stream < b.stream : a.ts_us < b.ts_us;
  });
  auto by_thread = [](const TraceSync& a, const TraceSync& b) {
    return a.thread != b.thread ? a.thread < b.thread : a.ts_us < b.ts_us;
  };
  std::stable_sort(t.syncs.begin(), t.syncs.end(), by_thread);
  std::stable_sort(t.graph_launches.begin(), t.graph_launches.end(), by_thread);
  return t;
}

void parse_stream(std::istream& in, Reader& r, const std::string& name, const GzBuf* buf) {
  try {
    json::sax_parse(in, &r, json::input_format_t::json, true);
  } catch (const ConfigError&) {
    if (buf && !buf->error.empty()) throw ConfigError(name, 0, 0, r.where(), buf->error);
    throw;
  }
  if (buf && !buf->error.empty()) throw ConfigError(name, 0, 0, r.where(), buf->error);
}

}  // namespace

TorchTrace parse_torch_trace(const std::string& text, const std::string& name) {
  if (text.size() > kMaxTraceBytes)
    throw ConfigError(name, 0, 0, "", "more than " + std::to_string(kMaxTraceBytes >> 20) + " MB of JSON");
  Reader r(name);
  std::istringstream in(text);
  parse_stream(in, r, name, nullptr);
  return finish(r, name);
}

TorchTrace read_torch_trace(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw ConfigError(path, 0, 0, "", "cannot read the trace: no such file (or not a regular file)");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw ConfigError(path, 0, 0, "", std::string("cannot open the trace: ") + std::strerror(errno));
  GzBuf buf(f);
  std::istream in(&buf);
  Reader r(path);
  try {
    parse_stream(in, r, path, &buf);
  } catch (...) {
    gzclose(f);
    throw;
  }
  gzclose(f);
  return finish(r, path);
}

}  // namespace vlasim
