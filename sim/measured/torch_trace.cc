#include "sim/measured/torch_trace.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <istream>
#include <set>
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
  // A device event recorded twice (same kind, stream, correlation, start and duration: two
  // kernels cannot run at once on one stream) is a trace written twice or merged: refused.
  {
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
  // and the ops' times would be their CPU dispatch times.
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
  std::stable_sort(t.ops.begin(), t.ops.end(), ByStart{});
  std::stable_sort(t.ranges.begin(), t.ranges.end(), ByStart{});
  // Launch calls by correlation.
  std::unordered_map<int64_t, size_t> launch_of;
  for (size_t i = 0; i < r.launches.size(); ++i) launch_of.emplace(r.launches[i].corr, i);
  // Each launch call's device time and end (its kernels, copies and sets).
  std::vector<double> launch_us(r.launches.size(), 0.0), launch_end(r.launches.size(), -1.0);
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
    launch_us[it->second] += d.dur;
    launch_end[it->second] = std::max(launch_end[it->second], d.ts + d.dur);
    if (r.launches[it->second].graph) t.graph_us += d.dur;
  }
  // One sweep per thread over ops and launch calls by start time: the stack holds the ops open
  // at that time, so an op's parent and a launch's innermost op are its top. Linear in events
  // (after sorting) however deep the nesting.
  std::vector<size_t> order(r.launches.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const LaunchEv &x = r.launches[a], &y = r.launches[b];
    return x.thread != y.thread ? x.thread < y.thread : x.ts < y.ts;
  });
  struct LaunchEnd {
    int thread;
    double ts, end;
  };
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
    if (launch_end[li] < 0) return;  // launched nothing recorded
    pop_until(l.thread, l.ts, false);
    ends.push_back({l.thread, l.ts, launch_end[li]});
    if (stack.empty()) return;
    TraceOp& o = t.ops[size_t(stack.back())];
    o.device_us += launch_us[li];
    o.device_end_us = std::max(o.device_end_us, launch_end[li]);
    t.launched_us += launch_us[li];
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
  // Each range's last device end: the latest end of the launches inside it (a segment tree).
  std::sort(ends.begin(), ends.end(), [](const LaunchEnd& a, const LaunchEnd& b) {
    return a.thread != b.thread ? a.thread < b.thread : a.ts < b.ts;
  });
  const size_t n = ends.size();
  std::vector<double> tree(2 * n, -1);  // a segment tree of the ends (max)
  for (size_t i = 0; i < n; ++i) tree[n + i] = ends[i].end;
  for (size_t i = n; i-- > 1;) tree[i] = std::max(tree[2 * i], tree[2 * i + 1]);
  for (TraceRange& q : t.ranges) {
    auto lo = std::lower_bound(ends.begin(), ends.end(), LaunchEnd{q.thread, q.ts_us, 0},
                               [](const LaunchEnd& a, const LaunchEnd& b) {
                                 return a.thread != b.thread ? a.thread < b.thread : a.ts < b.ts;
                               });
    auto hi = std::upper_bound(ends.begin(), ends.end(), LaunchEnd{q.thread, q.ts_us + q.dur_us, 0},
                               [](const LaunchEnd& a, const LaunchEnd& b) {
                                 return a.thread != b.thread ? a.thread < b.thread : a.ts < b.ts;
                               });
    if (lo >= hi) continue;
    const size_t a = size_t(lo - ends.begin()), b = size_t(hi - ends.begin());  // [a, b)
    double m = -1;
    for (size_t l = a + n, r = b + n; l < r; l >>= 1, r >>= 1) {
      if (l & 1) m = std::max(m, tree[l++]);
      if (r & 1) m = std::max(m, tree[--r]);
    }
    q.device_end_us = m;
  }
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

namespace {

// Product of d[from, to), or -1 when an entry is negative or the product overflows.
int64_t prod(const std::vector<int64_t>& d, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t p = 1;
  for (size_t i = from; i < std::min(to, d.size()); ++i) {
    if (d[i] < 0 || (d[i] > 0 && p > INT64_MAX / d[i])) return -1;
    p *= d[i];
  }
  return p;
}
int64_t mul(int64_t a, int64_t b) { return prod({a, b}); }

std::string gemm_key(int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return "";
  return "gemm m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
}

std::string elems_key(const std::string& what, int64_t e) {
  return e > 0 ? what + " " + std::to_string(e) : "";
}

// The name without its namespace and in-place / out suffixes: "aten::add_" -> "add".
std::string base_name(const std::string& n) {
  const size_t c = n.rfind("::");
  std::string b = c == std::string::npos ? n : n.substr(c + 2);
  while (!b.empty() && b.back() == '_') b.pop_back();
  while (!b.empty() && b.front() == '_') b.erase(b.begin());
  return b;
}

}  // namespace

std::string trace_op_key(const TraceOp& op) {
  const std::vector<std::vector<int64_t>>& d = op.dims;
  const std::string b = base_name(op.name);
  auto at = [&](size_t i) -> const std::vector<int64_t>& {
    static const std::vector<int64_t> none;
    return i < d.size() ? d[i] : none;
  };
  if (b == "linear" && at(0).size() >= 1 && at(1).size() == 2 && at(0).back() == at(1)[1])
    return gemm_key(prod(at(0), 0, at(0).size() - 1), at(1)[0], at(1)[1]);
  if (b == "addmm" && at(1).size() == 2 && at(2).size() == 2 && at(1)[1] == at(2)[0])
    return gemm_key(at(1)[0], at(2)[1], at(1)[1]);
  if ((b == "mm" || b == "matmul") && at(0).size() >= 2 && at(1).size() == 2 && at(0).back() == at(1)[0])
    return gemm_key(prod(at(0), 0, at(0).size() - 1), at(1)[1], at(1)[0]);
  if ((b == "conv2d" || b == "convolution") && at(0).size() == 4 && at(1).size() == 4) {
    const std::vector<int64_t>&x = at(0), &w = at(1);
    if (prod(x) < 0 || prod(w) <= 0 || x[2] % w[2] || x[3] % w[3]) return "";  // patch convs only (stride = kernel)
    return gemm_key(prod({x[0], x[2] / w[2], x[3] / w[3]}), w[0], prod(w, 1));
  }
  if (b == "scaled_dot_product_attention" && at(0).size() == 4 && at(1).size() == 4) {
    const int64_t bh = mul(at(0)[0], at(0)[1]);
    if (bh <= 0 || prod(at(0)) <= 0 || prod(at(1)) <= 0) return "";
    return "attention bh=" + std::to_string(bh) + " q=" + std::to_string(at(0)[2]) +
           " kv=" + std::to_string(at(1)[2]) + " d=" + std::to_string(at(0)[3]);
  }
  if (d.empty() || at(0).empty()) return "";
  if (b == "layer_norm") return elems_key("norm layernorm", prod(at(0)));
  if (b == "rms_norm") return elems_key("norm rmsnorm", prod(at(0)));
  if (b == "group_norm") return elems_key("norm groupnorm", prod(at(0)));
  int64_t out = 0;  // elements of a broadcast result
  for (const std::vector<int64_t>& x : d)
    if (!x.empty()) out = std::max(out, prod(x));
  if (b == "gelu") return elems_key("eltwise gelu", out);
  if (b == "silu") return elems_key("eltwise silu", out);
  if (b == "add") return elems_key("eltwise add", out);
  if (b == "mul") return elems_key("eltwise mul", out);
  if (b == "sub") return elems_key("eltwise sub", out);
  if (b == "softmax") return elems_key("eltwise softmax", out);
  if (b == "embedding" && at(0).size() == 2 && d.size() >= 2)
    return elems_key("embedding", prod(at(1)) < 0 ? -1 : mul(prod(at(1)), at(0)[1]));
  return "";
}

std::string graph_op_key(const Op& o) {
  switch (o.kind) {
    case OpKind::Gemm:
      return gemm_key(o.m * std::max<int64_t>(o.batch, 1), o.n, o.k);
    case OpKind::Attention:
      return "attention bh=" + std::to_string(o.batch * o.heads) + " q=" + std::to_string(o.q_len) +
             " kv=" + std::to_string(o.kv_len) + " d=" + std::to_string(o.head_dim);
    case OpKind::Norm:
      return elems_key(std::string("norm ") + to_string(o.fn), o.rows * o.width);
    case OpKind::Elementwise:
      switch (o.fn) {
        case OpFn::Gelu: return elems_key("eltwise gelu", o.rows * o.width);
        case OpFn::Silu: return elems_key("eltwise silu", o.rows * o.width);
        case OpFn::Add:
        case OpFn::BiasAdd: return elems_key("eltwise add", o.rows * o.width);
        case OpFn::Mul: return elems_key("eltwise mul", o.rows * o.width);
        case OpFn::Sub: return elems_key("eltwise sub", o.rows * o.width);
        case OpFn::Softmax: return elems_key("eltwise softmax", o.rows * o.width);
        default: return "";
      }
    case OpKind::Embedding:
      return elems_key("embedding", o.rows * o.width);
    default:
      return "";
  }
}

namespace {
// A range's name as inferences are counted: torch.profiler's schedule numbers its steps
// ("ProfilerStep#12"), which count as one name, "ProfilerStep#*".
std::string range_kind(const std::string& n) {
  return n.rfind("ProfilerStep#", 0) == 0 ? std::string("ProfilerStep#*") : n;
}
}  // namespace

std::vector<TraceInference> trace_inferences(const TorchTrace& t, const std::string& name, std::string* chosen) {
  // One sweep over the ranges (sorted by thread, then start, longer first): the stack holds
  // the ranges open at each start. A stage range marks the ranges around it as holding a
  // stage (each range once: a marked range's enclosing ones are marked already), and is
  // given to the innermost open range named `pick`.
  const size_t n = t.ranges.size();
  std::vector<int> stage_of(n, -1);
  for (size_t i = 0; i < n; ++i) {
    Stage s;
    if (parse_stage(t.ranges[i].name, &s)) stage_of[i] = int(s);
  }
  struct Open {
    size_t range;
    int inference;  // innermost open range named pick at or below this one, -1 when none
  };
  auto sweep = [&](const std::string& pick, std::vector<char>* holds, std::vector<TraceInference>* out) {
    std::vector<Open> stack;
    for (size_t i = 0; i < n; ++i) {
      const TraceRange& x = t.ranges[i];
      while (!stack.empty()) {
        const TraceRange& top = t.ranges[stack.back().range];
        if (top.thread != x.thread || x.ts_us >= top.ts_us + top.dur_us) stack.pop_back();
        else break;
      }
      int inference = stack.empty() ? -1 : stack.back().inference;
      if (stage_of[i] >= 0) {
        if (holds)
          for (size_t k = stack.size(); k-- > 0 && !(*holds)[stack[k].range];) (*holds)[stack[k].range] = 1;
        if (out && inference >= 0) {
          TraceInference& in = (*out)[size_t(inference)];
          const int k = stage_of[i];
          const double end = std::max(x.ts_us + x.dur_us, x.device_end_us);
          if (in.stage_start_us[k] < 0 || x.ts_us < in.stage_start_us[k]) in.stage_start_us[k] = x.ts_us;
          in.stage_end_us[k] = std::max(in.stage_end_us[k], end);
        }
      } else if (out && range_kind(x.name) == pick) {
        TraceInference in;
        in.start_us = x.ts_us;
        in.end_us = std::max(x.ts_us + x.dur_us, x.device_end_us);
        out->push_back(in);
        inference = int(out->size()) - 1;
      }
      stack.push_back({i, inference});
    }
  };
  std::string pick = name;
  if (pick.empty()) {
    std::vector<char> holds(n, 0);
    sweep("", &holds, nullptr);
    std::map<std::string, size_t> count;
    for (size_t i = 0; i < n; ++i)
      if (stage_of[i] < 0) ++count[range_kind(t.ranges[i].name)];
    size_t best = 0;
    for (size_t i = 0; i < n; ++i) {
      const std::string k = range_kind(t.ranges[i].name);
      if (holds[i] && count[k] > best) best = count[k], pick = k;
    }
    if (pick.empty()) {
      std::set<std::string> names;
      for (const TraceRange& r : t.ranges)
        if (names.size() < 12) names.insert(r.name);
      throw ConfigError(t.path, 0, 0, "user_annotation",
                        "no record_function range holds a range named after a stage (vision, prefix, action, "
                        "decode, head), so the trace has no inferences to compare; its ranges are: " +
                            (names.empty() ? std::string("none") : join_names({names.begin(), names.end()})));
    }
  }
  std::vector<TraceInference> out;
  sweep(pick, nullptr, &out);
  if (out.empty())
    throw ConfigError(t.path, 0, 0, "user_annotation", "no record_function range named '" + pick + "'");
  std::stable_sort(out.begin(), out.end(),
                   [](const TraceInference& a, const TraceInference& b) { return a.start_us < b.start_us; });
  if (chosen) *chosen = pick;
  return out;
}

namespace {
// The activation a trace op computes, as folded into a GEMM: "gelu", "silu", "relu"; "" else.
std::string trace_act(const TraceOp& o) {
  const std::string b = base_name(o.name);
  return b == "gelu" || b == "silu" || b == "relu" ? b : "";
}
// The activation fused into a graph GEMM's output, named as trace_act; "" when none (or when
// it applies to the gate half of a gate_up GEMM, whose output is not what it reads).
std::string graph_act(const Op& o) {
  if (o.kind != OpKind::Gemm || o.epi.gate_up) return "";
  switch (o.epi.act) {
    case Activation::GeluTanh:
    case Activation::GeluErf: return "gelu";
    case Activation::Silu: return "silu";
    case Activation::Relu: return "relu";
    default: return "";
  }
}
// The activation `a` reads the output of a GEMM of key `gemm`: its first input has m x n
// elements and last size n.
bool reads_gemm_output(const TraceOp& a, const std::string& gemm) {
  long long m = 0, n = 0, k = 0;
  if (std::sscanf(gemm.c_str(), "gemm m=%lld n=%lld k=%lld", &m, &n, &k) != 3) return false;
  if (a.dims.empty() || a.dims[0].empty() || a.dims[0].back() != n) return false;
  const int64_t e = prod(a.dims[0]);
  return e > 0 && e == mul(m, n);
}
}  // namespace

TraceMatch match_trace(const TorchTrace& t, const OpGraph& g, const std::vector<TraceInference>& inferences) {
  TraceMatch m;
  m.device = t.kernels + t.copies + t.sets > 0;
  std::map<std::string, std::vector<int>> graph_keys;
  std::map<std::string, std::set<std::string>> fused_acts;  // GEMM key -> activations fused in some op of it
  m.graph_ops = g.size();
  for (size_t i = 0; i < g.size(); ++i) {
    const std::string k = graph_op_key(g.op(int(i)));
    if (k.empty()) continue;
    graph_keys[k].push_back(int(i));
    const std::string act = graph_act(g.op(int(i)));
    if (!act.empty()) fused_acts[k].insert(act);
  }
  // the inferences' union as sorted disjoint intervals, searched per op
  std::vector<std::pair<double, double>> spans;
  for (const TraceInference& in : inferences) spans.push_back({in.start_us, in.end_us});
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<double, double>> merged;
  for (const auto& sp : spans)
    if (!merged.empty() && sp.first <= merged.back().second) merged.back().second = std::max(merged.back().second, sp.second);
    else merged.push_back(sp);
  auto in_inference = [&](const TraceOp& o) {
    if (inferences.empty()) return true;
    auto it = std::upper_bound(merged.begin(), merged.end(), std::make_pair(o.ts_us, 1e308));
    return it != merged.begin() && o.ts_us <= std::prev(it)->second;
  };
  // top-level ops, by thread then start (as t.ops)
  std::vector<size_t> top;
  for (size_t i = 0; i < t.ops.size(); ++i)
    if (t.ops[i].parent < 0) top.push_back(i);
  auto seconds = [&](const TraceOp& o) { return (m.device ? o.device_us : o.dur_us) * 1e-6; };
  // samples by key; a GEMM's with an activation folded in under "KEY +ACT"
  std::map<std::string, std::vector<double>> times;
  std::map<std::string, size_t> type_mismatch;
  std::vector<char> folded(top.size(), 0);
  for (size_t j = 0; j < top.size(); ++j) {
    const TraceOp& o = t.ops[top[j]];
    if (!in_inference(o)) continue;
    double s = seconds(o);
    m.total_s += s;
    if (folded[j]) continue;  // matched with the GEMM before it
    const std::string k = trace_op_key(o);
    if (!k.empty() && graph_keys.count(k)) {
      std::string sample = k;
      auto fa = fused_acts.find(k);
      if (fa != fused_acts.end() && j + 1 < top.size()) {
        const TraceOp& a = t.ops[top[j + 1]];
        const std::string act = trace_act(a);
        if (a.thread == o.thread && !act.empty() && fa->second.count(act) && in_inference(a) &&
            reads_gemm_output(a, k)) {
          folded[j + 1] = 1;
          const double as = seconds(a);
          const std::string ak = trace_op_key(a);
          TraceMatch::Unmatched& f = m.folded[(ak.empty() ? a.name : ak) + " into " + k];
          ++f.count;
          f.seconds += as;
          s += as;
          sample = k + " +" + act;
        }
      }
      times[sample].push_back(s);
      m.matched_s += s;
      for (const std::string& ty : o.types) {
        const bool f32 = ty == "float", bf16 = ty == "c10::BFloat16", f16 = ty == "c10::Half";
        if (!(f32 || bf16 || f16)) continue;
        const DType dt = f32 ? DType::F32 : bf16 ? DType::BF16 : DType::F16;
        if (dt != g.op(graph_keys[k].front()).dtype) ++type_mismatch[ty];
        break;
      }
    } else if (s > 0 || !k.empty()) {
      TraceMatch::Unmatched& u = m.unmatched[k.empty() ? o.name : k];
      ++u.count;
      u.seconds += s;
    }
  }
  // device time no op launched counts against coverage (wherever it ran)
  if (m.device) m.total_s += std::max(0.0, t.device_us() - t.launched_us) * 1e-6;
  m.op_seconds.assign(g.size(), 0);
  m.op_occurrences.assign(g.size(), 0);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  for (auto& [k, ids] : graph_keys) {
    // the key's samples: plain ones first, then those with each activation folded in
    std::vector<const std::vector<double>*> all;
    for (auto it = times.lower_bound(k); it != times.end() && it->first.compare(0, k.size(), k) == 0; ++it)
      if (it->first.size() == k.size() || it->first.compare(k.size(), 2, " +") == 0) all.push_back(&it->second);
    if (all.empty()) {
      m.unseen[k] += int(ids.size());
      continue;
    }
    for (int id : ids) {
      const std::string act = graph_act(g.op(id));
      auto own = times.find(act.empty() ? k : k + " +" + act);
      const std::vector<double>& v = own != times.end() ? own->second : *all.front();
      m.op_seconds[size_t(id)] = median(v);
      m.op_occurrences[size_t(id)] = int(v.size());
      ++m.graph_ops_matched;
    }
  }
  for (const auto& [ty, n] : type_mismatch)
    m.notes.push_back(std::to_string(n) + " matched trace ops read " + ty + " inputs, not the graph's " +
                      to_string(g.op(0).dtype));
  return m;
}

namespace {
// Words of a name: runs of letters and digits, upper-cased.
std::vector<std::string> upper_words(const std::string& s) {
  std::vector<std::string> w(1);
  for (char ch : s) {
    if (std::isalnum(static_cast<unsigned char>(ch))) w.back() += char(std::toupper(static_cast<unsigned char>(ch)));
    else if (!w.back().empty()) w.emplace_back();
  }
  if (w.back().empty()) w.pop_back();
  return w;
}
}  // namespace

std::string trace_device_mismatch(const TorchTrace& t, const std::string& key, const std::string& description) {
  if (t.device_name.empty()) return "";
  std::string model;
  for (const std::string& w : upper_words(description)) {
    const bool digit = std::any_of(w.begin(), w.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    const bool size = w.size() > 2 && w.compare(w.size() - 2, 2, "GB") == 0 &&
                      std::all_of(w.begin(), w.end() - 2, [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (digit && !size) {
      model = w;
      break;
    }
  }
  if (model.empty()) return "";
  for (const std::string& w : upper_words(t.device_name))
    if (w == model) return "";
  return "the trace ran on '" + t.device_name + "', not on the catalog's " + key + " (" + description +
         "): its times are that GPU's";
}

std::string trace_match_warning(const TorchTrace& t, const TraceMatch& m, const std::string& model) {
  if (m.total_s <= 0 || m.matched_s >= 0.5 * m.total_s) return "";
  char buf[200];
  std::snprintf(buf, sizeof buf, "only %.1f%% of the trace's %s time (%zu of %zu graph ops) matches the ops of ",
                100 * m.matched_s / m.total_s, m.device ? "device" : "op", m.graph_ops_matched, m.graph_ops);
  std::string w = std::string(buf) + model + ": a trace of another model, a model fused differently (--passes), or " +
                  "kernels launched outside the ops vlasim keys";
  std::vector<std::string> why;
  if (m.device && t.graph_us > 0) {
    std::snprintf(buf, sizeof buf, "%.1f%% of the device time is CUDA/HIP graph replays (cudaGraphLaunch)",
                  t.device_us() > 0 ? 100 * t.graph_us / t.device_us() : 0.0);
    why.push_back(buf);
  }
  double compiled = 0;
  for (const auto& [k, u] : m.unmatched)
    if (k.find("Compiled") != std::string::npos) compiled += u.seconds;
  if (compiled > 0) {
    std::snprintf(buf, sizeof buf, "%.1f%% of it is inside torch.compile regions (ops named *Compiled*)",
                  100 * compiled / m.total_s);
    why.push_back(buf);
  }
  if (!why.empty()) {
    w += "; here ";
    for (size_t i = 0; i < why.size(); ++i) w += (i ? " and " : "") + why[i];
  }
  return w;
}

}  // namespace vlasim
