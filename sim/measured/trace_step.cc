#include "sim/measured/trace_step.h"

#include <algorithm>

#include "scenarios/config/config.h"

namespace vlasim {

std::string trace_stack_class(const TraceOp& op) {
  const std::string key = trace_op_key(op);
  const std::string kind = key.substr(0, key.find(' '));
  if (kind == "gemm" || kind == "attention" || kind == "norm") return kind;
  if (kind == "eltwise") return "elementwise";
  return "";
}

namespace {

// Seconds of synchronise calls on `thread` inside [a, b).
double sync_within(const TorchTrace& t, int thread, double a, double b) {
  double s = 0;
  for (const TraceSync& y : t.syncs) {
    if (y.thread != thread) continue;
    const double lo = std::max(a, y.ts_us), hi = std::min(b, y.ts_us + y.dur_us);
    if (hi > lo) s += hi - lo;
  }
  return s * 1e-6;
}

// Whether `o`, starting inside a step from `a`, is outermost within it: no enclosing op, or one
// that started before the step (a torch.compile region around a compiled graph's call).
bool outermost(const TorchTrace& t, const TraceOp& o, double a) {
  return o.parent < 0 || t.ops[size_t(o.parent)].ts_us < a;
}

// The thread with the most outermost launching ops inside [a, b]; -1 when none.
int step_thread(const TorchTrace& t, double a, double b) {
  std::map<int, int> n;
  for (const TraceOp& o : t.ops)
    if (o.ts_us >= a && o.ts_us <= b && o.device_end_us >= 0 && outermost(t, o, a)) ++n[o.thread];
  int best = -1, most = 0;
  for (auto [th, c] : n)
    if (c > most) best = th, most = c;
  return best;
}

// Device events launched inside [a, b] on `thread`: busy time, launch latencies on an idle
// stream, gaps inside graph replays.
void device_figures(const TorchTrace& t, int thread, double a, double b, TraceStep& s) {
  const TraceDeviceEvent* prev = nullptr;
  for (const TraceDeviceEvent& d : t.device) {
    if (prev && prev->stream != d.stream) prev = nullptr;
    const bool mine = d.launch_us >= a && d.launch_us <= b && d.thread == thread;
    if (mine) {
      s.gpu_busy_s += d.dur_us * 1e-6;
      ++s.device_events;
      s.graph_nodes += d.graph;
      const double prev_end = prev ? prev->ts_us + prev->dur_us : -1;
      if (!d.graph && prev_end <= d.launch_us && d.ts_us >= d.launch_us)
        s.launch_latency_s.push_back((d.ts_us - d.launch_us) * 1e-6);
      if (d.graph && prev && prev->graph && prev->corr == d.corr && d.ts_us >= prev_end)
        s.node_gap_s.push_back((d.ts_us - prev_end) * 1e-6);
    }
    prev = &d;
  }
}

}  // namespace

std::vector<TraceStep> trace_steps(const TorchTrace& t, const std::vector<TraceInference>& inferences) {
  std::vector<TraceStep> out;
  for (const TraceInference& inf : inferences) {
    // Host figures within the range's own span [a, hb]; the wall to its last kernel's end b.
    const double a = inf.start_us, b = inf.end_us, hb = std::min(inf.host_end_us > a ? inf.host_end_us : b, b);
    const int th = step_thread(t, a, hb);
    if (th < 0)
      throw ConfigError(t.path, 0, 0, "",
                        "the step starting at " + std::to_string(a) +
                            " us has no top-level op that launched device work: nothing for a stack model to read "
                            "(a CPU-only trace, or the kernels missing)");
    TraceStep s;
    s.start_us = a;
    std::vector<const TraceOp*> launching;
    for (const TraceOp& o : t.ops)
      if (o.thread == th && o.ts_us >= a && o.ts_us <= hb && o.device_end_us >= 0 && outermost(t, o, a))
        launching.push_back(&o);
    // Waiting for work launched before the step: synchronise calls ending before its first launch.
    const double first = launching.front()->ts_us;
    for (const TraceSync& y : t.syncs)
      if (y.thread == th && y.ts_us >= a && y.ts_us + y.dur_us <= first) s.waited_s += y.dur_us * 1e-6;
    s.wall_s = (b - a) * 1e-6 - s.waited_s;
    device_figures(t, th, a, hb, s);
    for (const TraceSync& g : t.graph_launches)
      if (g.thread == th && g.ts_us >= a && g.ts_us <= hb) s.graph_launch_s += g.dur_us * 1e-6;
    double host_end = a;
    for (const TraceOp& o : t.ops)
      if (o.thread == th && o.ts_us >= a && o.ts_us <= hb && outermost(t, o, a))
        host_end = std::max(host_end, o.ts_us + o.dur_us);
    s.host_span_s = (host_end - a) * 1e-6 - sync_within(t, th, a, host_end);
    // Ownership of host time by launching ops (an unkeyed one as "other").
    for (size_t i = 0; i < launching.size(); ++i) {
      const TraceOp& o = *launching[i];
      const double from = o.ts_us, to = i + 1 < launching.size() ? launching[i + 1]->ts_us : o.ts_us + o.dur_us;
      std::string c = trace_stack_class(o);
      if (c.empty()) c = "other", ++s.unkeyed_ops;
      s.class_host_s[c] += (to - from) * 1e-6 - sync_within(t, th, from, to);
      ++s.class_ops[c];
    }
    const double last_end = launching.back()->ts_us + launching.back()->dur_us;
    s.step_host_s = (first - a) * 1e-6 - sync_within(t, th, a, first) +
                    std::max(0.0, (hb - last_end) * 1e-6 - sync_within(t, th, last_end, hb));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace vlasim
