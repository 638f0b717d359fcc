#include "executors/calibration/calibrate.h"

#include <oneapi/dnnl/dnnl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <atomic>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "executors/runtime/runtime.h"
#include "sim/engine/engine.h"
#include "scheduler/policy.h"
#include "sim/costs/cost_models.h"
#include "sim/costs/profiled_cost_model.h"
#include "executors/executor_registry.h"
#include "sim/engine/planner.h"

namespace vlasim {

const char* to_string(GridLevel g) {
  switch (g) {
    case GridLevel::None: return "none";
    case GridLevel::Quick: return "quick";
    case GridLevel::Full: return "full";
  }
  return "?";
}

bool parse_grid_level(const std::string& s, GridLevel* out) {
  for (GridLevel g : {GridLevel::None, GridLevel::Quick, GridLevel::Full})
    if (s == to_string(g)) {
      *out = g;
      return true;
    }
  return false;
}

namespace {

constexpr double kMaxGridFlops = 8.6e9;      // per op
constexpr double kMaxGridWeights = 1 << 25;  // elements (64 MiB at bf16)

Op base(OpKind kind, OpFn fn, DType dtype) {
  Op o;
  o.kind = kind;
  o.fn = fn;
  o.dtype = dtype;
  return o;
}

Op gemm(int64_t m, int64_t n, int64_t k, DType dtype) {
  Op o = base(OpKind::Gemm, OpFn::Linear, dtype);
  o.m = m;
  o.n = n;
  o.k = k;
  return o;
}

Op attention(int64_t heads, int64_t kv_heads, int64_t hd, int64_t q, int64_t kv, bool causal, DType dtype) {
  Op o = base(OpKind::Attention, OpFn::SelfAttention, dtype);
  o.heads = heads;
  o.kv_heads = kv_heads;
  o.head_dim = hd;
  o.q_len = q;
  o.kv_len = kv;
  o.causal = causal;
  return o;
}

Op rowwise(OpKind kind, OpFn fn, int64_t rows, int64_t width, DType dtype) {
  Op o = base(kind, fn, dtype);
  o.rows = rows;
  o.width = width;
  if (fn == OpFn::RoPE) {
    o.head_dim = std::min<int64_t>(64, width);
    o.heads = width / o.head_dim;
  }
  if (kind == OpKind::Embedding) o.vocab = 8192;
  return o;
}

struct GridSpec {
  std::vector<int64_t> m, nk;                       // gemm
  std::vector<int64_t> heads_kv, hd, q, kv;         // attention (heads 8, kv_heads in heads_kv)
  std::vector<int64_t> rows, width;                 // norms and elementwise
  std::vector<int64_t> emb_rows, emb_width;         // embedding
};

GridSpec grid_spec(GridLevel level) {
  GridSpec g;
  if (level == GridLevel::Quick) {
    g.m = {1, 16, 128};
    g.nk = {64, 256, 1024};
    g.heads_kv = {1, 4};
    g.hd = {64};
    g.q = {1, 64};
    g.kv = {64, 256};
    g.rows = {16, 256};
    g.width = {1024};
    g.emb_rows = {16, 256};
    g.emb_width = {1024};
  } else if (level == GridLevel::Full) {
    g.m = {1, 4, 16, 64, 256, 1024, 4096};
    g.nk = {64, 256, 1024, 4096, 8192};
    g.heads_kv = {1, 8};
    g.hd = {64, 128};
    g.q = {1, 16, 64, 256, 1024};
    g.kv = {64, 256, 1024, 4096};
    g.rows = {1, 16, 256, 1024, 4096};
    g.width = {256, 1024, 4096};
    g.emb_rows = {1, 16, 256, 1024};
    g.emb_width = {1024, 2048};
  }
  return g;
}

double load_average() {
  std::ifstream f("/proc/loadavg");
  double v = 0;
  return f >> v ? v : 0;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

[[noreturn]] void option_error(const std::string& key, const std::string& msg) {
  throw ConfigError("<calibrate options>", 0, 0, key, msg);
}

double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * double(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - double(lo)) * (sorted[hi] - sorted[lo]);
}

// One op to measure in a section.
struct Work {
  Op op;
  std::string sig;
  std::string source;  // "grid" or "graph"
};

}  // namespace

std::vector<Op> calibration_grid(GridLevel level, DType dtype) {
  const GridSpec g = grid_spec(level);
  std::vector<Op> out;
  for (int64_t m : g.m)
    for (int64_t n : g.nk)
      for (int64_t k : g.nk)
        if (2.0 * m * n * k <= kMaxGridFlops && double(n) * k <= kMaxGridWeights)
          out.push_back(gemm(m, n, k, dtype));
  for (int64_t kvh : g.heads_kv)
    for (int64_t hd : g.hd)
      for (int64_t q : g.q)
        for (int64_t kv : g.kv) {
          if (kv < q) continue;
          for (bool causal : {false, true}) {
            if (causal && q != kv) continue;
            const int64_t heads = level == GridLevel::Full ? 8 : 4;
            Op o = attention(heads, std::min(kvh, heads), hd, q, kv, causal, dtype);
            if (op_work(o).flops <= kMaxGridFlops) out.push_back(o);
          }
        }
  for (OpFn fn : {OpFn::RMSNorm, OpFn::LayerNorm})
    for (int64_t r : g.rows)
      for (int64_t w : g.width) out.push_back(rowwise(OpKind::Norm, fn, r, w, dtype));
  for (OpFn fn : {OpFn::Add, OpFn::Mul, OpFn::Gelu, OpFn::Silu, OpFn::Softmax, OpFn::Copy,
                  OpFn::EulerUpdate, OpFn::RoPE})
    for (int64_t r : g.rows)
      for (int64_t w : g.width) out.push_back(rowwise(OpKind::Elementwise, fn, r, w, dtype));
  for (int64_t r : g.emb_rows)
    for (int64_t w : g.emb_width) out.push_back(rowwise(OpKind::Embedding, OpFn::Lookup, r, w, dtype));
  for (size_t i = 0; i < out.size(); ++i) out[i].name = "grid" + std::to_string(i);
  return out;
}

void add_scenario(CalibrateOptions& o, const Scenario& s) {
  bool found = false;
  for (const DeviceInstance& d : s.devices) {
    if (d.spec.name != o.catalog_device) continue;
    found = true;
    std::vector<int>& widths = d.spec.type == DeviceType::Gpu ? o.sms : o.threads;
    for (const UnitDecl& u : d.units)
      if (const int w = profile_width(d, u); std::find(widths.begin(), widths.end(), w) == widths.end())
        widths.push_back(w);
  }
  if (!found) {
    std::vector<std::string> names;
    for (const DeviceInstance& d : s.devices) names.push_back(d.name + " (" + d.spec.name + ")");
    throw ConfigError(s.file, 0, 0, "hardware.devices",
                      "no device uses catalog entry '" + o.catalog_device +
                          "' to calibrate; devices: " + join_names(names));
  }
  for (const ModelInstance& mi : s.models)
    if (mi.dtype_pending)
      mi.dtype_where.fail("model '" + mi.name + "': dtype auto is not resolved (resolve_auto_dtypes)");
  check_cpu_dtypes(s);
  for (const ModelInstance& mi : s.models) {
    OpGraph g;
    try {
      g = build_graph(mi.card, mi.shape);
    } catch (const GraphTooLarge& e) {
      mi.where.fail("model '" + mi.name + "' (" + std::to_string(mi.shape.steps) + " steps): " + e.what());
    }
    if (g.size() > 0 && std::find(o.dtypes.begin(), o.dtypes.end(), g.op(0).dtype) == o.dtypes.end())
      o.dtypes.push_back(g.op(0).dtype);
    o.graphs.push_back(std::move(g));
  }
}

std::unique_ptr<Executor> make_calibration_executor(const std::string& name, int threads, DType dtype,
                                                    bool graph) {
  const auto* e = executor_registry().find(name);
  if (!e)
    option_error("executor", "unknown executor '" + name + "'; valid names are: " +
                                 join_names(executor_registry().names()));
  const bool has_threads = e->has_param("threads"), has_sms = e->has_param("sms");
  std::string yaml = std::string("{dtype: ") + to_string(dtype);
  if (has_sms) yaml += ", sms: " + std::to_string(threads) + ", graph: " + (graph ? "true" : "false");
  else if (has_threads) yaml += ", threads: " + std::to_string(threads);
  else if (threads != 1) option_error("threads", "executor '" + name + "' runs on one thread only");
  yaml += "}";
  ConfigNode node = ConfigNode::load_string(yaml, "<calibrate options>");
  return executor_registry().make(name, Params(node), node);
}

OpGraph single_op_graph(const Op& op, int* id) {
  OpGraph g;
  Op o = op;
  o.id = -1;
  o.name = "calib.op";
  o.weight_id = "calib.op";
  o.kv_source = -1;
  if (o.kind == OpKind::Attention && o.kv_cached > 0 && op.kv_source >= 0) {
    // Stand-in for the op that holds the cache: its output is [batch*kv_cached, K|V].
    Op src = base(OpKind::Gemm, OpFn::Linear, o.dtype);
    src.name = "calib.kv_source";
    src.weight_id = src.name;
    src.m = o.batch * o.kv_cached;
    src.n = 2 * o.kv_heads * o.head_dim;
    src.k = 64;
    o.kv_source = g.add(src);
  }
  *id = g.add(o);
  return g;
}

OpTiming time_op(Executor& ex, const OpGraph& g, int id, int warmup, int reps, int min_reps,
                 double max_seconds) {
  const int seg = ex.prepare(g, {id});
  auto once = [&] {
    const SegmentTiming& t = ex.run(seg);
    for (size_t i = 0; i < t.ops.size(); ++i)
      if (t.ops[i] == id) return t.seconds[i];
    throw std::logic_error("executor timing lacks op " + std::to_string(id));
  };
  double first = 0;
  for (int w = 0; w < std::max(warmup, 1); ++w) {
    double t = once();
    if (w == 0) first = t;
    if (first > 0.25) break;
  }
  int n = std::max(reps, 1);
  if (first > 0 && first * n > max_seconds)
    n = std::max(std::min(min_reps, n), static_cast<int>(max_seconds / first));
  std::vector<double> ts;
  for (int r = 0; r < n; ++r) ts.push_back(once());
  std::sort(ts.begin(), ts.end());
  OpTiming out;
  out.reps = n;
  out.median_s = quantile(ts, 0.5);
  out.spread = out.median_s > 0 ? (quantile(ts, 0.75) - quantile(ts, 0.25)) / out.median_s : 0;
  return out;
}

namespace {
// The work of a section at each dtype of `o`, in order: grid ops, then the graphs' ops by first
// appearance, each signature once.
std::vector<std::vector<Work>> section_work(const CalibrateOptions& o) {
  std::vector<std::vector<Work>> plans;
  for (DType d : o.dtypes) {
    std::vector<Work> list;
    std::set<std::string> seen;
    for (const Op& op : calibration_grid(o.grid, d)) {
      std::string sig = op_signature(op);
      if (seen.insert(sig).second) list.push_back({op, sig, "grid"});
    }
    for (const OpGraph& g : o.graphs)
      for (size_t i = 0; i < g.size(); ++i) {
        Op op = g.op(static_cast<int>(i));
        if (op.kind == OpKind::Transfer) continue;
        op.dtype = d;
        std::string sig = op_signature(op);
        if (seen.insert(sig).second) list.push_back({op, sig, "graph"});
      }
    plans.push_back(std::move(list));
  }
  return plans;
}

// The host memcpy sizes timed (none on a GPU or without a link to stand for).
std::vector<double> memcpy_sizes_of(const CalibrateOptions& o, bool gpu) {
  if (o.memcpy_link.empty() || gpu) return {};
  if (o.grid == GridLevel::Full) return {4096, 65536, 1 << 20, 1 << 24, 1 << 26};
  return {4096, 65536, 1 << 20, 1 << 23};
}
}  // namespace

CalibrationEstimate estimate_calibration(const CalibrateOptions& o) {
  CalibrationEstimate e;
  const Catalog cat = Catalog::load_dir(o.catalog_dir);
  const DeviceSpec* spec = cat.find(o.catalog_device);
  const bool gpu = spec && spec->type == DeviceType::Gpu;
  const size_t widths = !gpu ? o.threads.size() : o.sms.empty() ? 1 : o.sms.size();
  e.measurements = static_cast<long long>(memcpy_sizes_of(o, gpu).size());
  for (const auto& l : section_work(o)) e.measurements += static_cast<long long>(widths * l.size());
  // Each op: its warm-up (at most 2 runs, 1 past 0.25 s) and timed runs cut near
  // max_seconds_per_op, but never fewer than min_repetitions.
  e.max_seconds = static_cast<double>(e.measurements) * (o.max_seconds_per_op + 0.5);
  return e;
}

DeviceProfile calibrate(const CalibrateOptions& o) {
  Catalog cat = Catalog::load_dir(o.catalog_dir);
  const DeviceSpec* spec = cat.find(o.catalog_device);
  if (!spec)
    option_error("catalog_device", "unknown catalog device '" + o.catalog_device +
                                       "'; valid names are: " + join_names(cat.names()));
  const bool gpu = spec->type == DeviceType::Gpu;
  if (spec->type != DeviceType::Cpu && !gpu)
    option_error("catalog_device", "catalog device '" + o.catalog_device +
                                       "' is neither a CPU nor a GPU; calibration runs ops on one of those");
  const auto* entry = executor_registry().find(o.executor);
  if (!entry)
    option_error("executor", "unknown executor '" + o.executor + "'; valid names are: " +
                                 join_names(executor_registry().names()));
  const bool has_sms = entry->has_param("sms");  // an executor that runs on a GPU
  if (gpu && !has_sms)
    option_error("executor", "catalog device '" + o.catalog_device + "' is a GPU; executor '" + o.executor +
                                 "' does not run on one (use --executor cuda)");
  if (!gpu && has_sms)
    option_error("executor", "executor '" + o.executor + "' runs on a GPU, but catalog device '" +
                                 o.catalog_device + "' is not one");
  // The widths profiled: core-group sizes on a CPU, SM limits on a GPU.
  const std::vector<int> widths = !gpu ? o.threads : o.sms.empty() ? std::vector<int>{spec->sms} : o.sms;
  if (widths.empty()) option_error("threads", "no thread counts to profile");
  if (o.dtypes.empty()) option_error("dtypes", "no dtypes to profile");
  const int allowed = static_cast<int>(allowed_cpus().size());
  for (int t : widths)
    if (gpu && (t < 1 || t > spec->sms))
      option_error("sms", "SM count " + std::to_string(t) + " outside [1, " + std::to_string(spec->sms) + "] (" +
                              o.catalog_device + ")");
    else if (!gpu && (t < 1 || t > allowed))
      option_error("threads", "thread count " + std::to_string(t) + " outside [1, " +
                                  std::to_string(allowed) + "] (CPUs this process may use)");
  if (o.repetitions < 1 || o.min_repetitions < 1 || o.warmup < 0)
    option_error("repetitions", "repetitions and min_repetitions must be >= 1, warmup >= 0");

  DeviceProfile p;
  p.catalog_device = o.catalog_device;
  if (!gpu)
    for (DType d : o.dtypes)
      if (std::string why = cpu_dtype_problem(d); !why.empty())
        throw std::invalid_argument(std::string("calibrate: dtype ") + to_string(d) + ": " + why);
  p.machine = gpu ? make_calibration_executor(o.executor, widths.front(), o.dtypes.front(), o.graph)->device()
                  : host_info().cpu_model;
  if (!gpu) p.isa = host_info().isa;
  p.graph = gpu && o.graph;
  p.logical_cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  p.load_average = load_average();
  p.executor = o.executor;
  if (!gpu) p.libraries["onednn"] = onednn_version();
  p.date = utc_now();
  p.grid = to_string(o.grid);
  p.repetitions = o.repetitions;
  p.warmup = o.warmup;
  p.threads = widths;
  p.dtypes = o.dtypes;

  const std::vector<std::vector<Work>> plans = section_work(o);
  const std::vector<double> memcpy_sizes = memcpy_sizes_of(o, gpu);
  int total = static_cast<int>(memcpy_sizes.size()), done = 0;
  for (const auto& l : plans) total += static_cast<int>(widths.size() * l.size());
  auto report = [&](const std::string& label) {
    ++done;
    if (o.progress) o.progress(done, total, label);
  };

  for (int t : widths)
    for (size_t di = 0; di < o.dtypes.size(); ++di) {
      const DType d = o.dtypes[di];
      ProfileSection s;
      s.threads = t;
      s.dtype = d;
      s.executor_device = make_calibration_executor(o.executor, t, d, o.graph)->device();
      for (const Work& w : plans[di]) {
        const std::string label = std::to_string(t) + "t " + to_string(d) + " " + w.sig;
        try {
          int id = 0;
          OpGraph g = single_op_graph(w.op, &id);
          auto ex = make_calibration_executor(o.executor, t, d, o.graph);
          OpTiming tm = time_op(*ex, g, id, o.warmup, o.repetitions, o.min_repetitions,
                                o.max_seconds_per_op);
          Measurement m;
          m.kind = w.op.kind;
          m.fn = w.op.fn;
          m.work = op_work(w.op);
          m.median_s = std::max(tm.median_s, 1e-9);
          m.spread = tm.spread;
          m.reps = tm.reps;
          m.source = w.source;
          s.table[w.sig] = m;
        } catch (const ConfigError&) {
          throw;
        } catch (const std::exception& e) {
          s.skipped[w.sig] = e.what();
        }
        report(label);
      }
      s.refit();
      p.sections.push_back(std::move(s));
    }

  if (!memcpy_sizes.empty()) {
    p.memcpy.link = o.memcpy_link;
    for (double bytes : memcpy_sizes) {
      Op op = base(OpKind::Transfer, OpFn::DeviceToDevice, DType::F32);
      op.out_bytes = bytes;
      int id = 0;
      OpGraph g = single_op_graph(op, &id);
      auto ex = make_calibration_executor(o.executor, 1, DType::F32);
      OpTiming tm = time_op(*ex, g, id, o.warmup, o.repetitions, o.min_repetitions, o.max_seconds_per_op);
      double t = std::max(tm.median_s, 1e-9);
      // Timer noise must not make a larger copy look faster than a smaller one.
      if (!p.memcpy.points.empty()) t = std::max(t, p.memcpy.points.back().second);
      p.memcpy.points.push_back({bytes, t});
      report("memcpy " + std::to_string(static_cast<long long>(bytes)) + " B");
    }
    const auto& pts = p.memcpy.points;
    p.memcpy.latency_s = pts.front().second;
    const size_t n = pts.size();
    const double dt = n > 1 ? pts[n - 1].second - pts[n - 2].second : 0;
    p.memcpy.bytes_per_s = dt > 0 ? (pts[n - 1].first - pts[n - 2].first) / dt : pts.back().first / pts.back().second;
  }
  return p;
}


namespace {

// Quantiles kept of the run-to-run variation (every percentile), and the segment runs a
// section needs before they are kept.
constexpr int kServiceQuantiles = 101;
constexpr size_t kMinVariabilitySamples = 20;

// One (cores, dtype) section's in-context samples over every scenario.
struct SectionSamples {
  std::map<std::string, std::vector<double>> op;  // signature -> per-op-instance medians
  std::map<std::string, Op> example;              // signature -> an op with it
  double overhead_s = 0;                          // dispatch time attributed to the section
  double ops = 0;                                 // op runs it is spread over
  std::vector<double> ratios;  // segment run time / that segment's median (alone requests)
};

// One model of one scenario run alone: its median latency and its ops by section.
struct ModelRun {
  double latency_s = 0;
  std::vector<std::pair<std::pair<int, DType>, std::string>> ops;  // (section, signature)
};

// `s` made to run one request at a time: serial pipeline, no background load, one periodic
// stream per model with no jitter, model m's first arrival at offset[m], a new request of
// every model each `period` seconds, `count` of them.
Scenario alone_runs(const Scenario& s, const std::vector<double>& offset, double period, int count) {
  Scenario c = s;
  c.pipeline = PolicyDecl{"serial", Params(), ConfigNode()};
  c.queue = PolicyDecl{"fifo", Params(), ConfigNode()};
  c.background.clear();
  c.streams.clear();
  for (size_t m = 0; m < s.models.size(); ++m) {
    StreamDecl sd;
    sd.name = "calib." + s.models[m].name;
    sd.model = static_cast<int>(m);
    sd.rate_hz = 1 / period;
    sd.start_s = offset[m];
    sd.duration_s = period * (count - 0.5);
    c.streams.push_back(sd);
  }
  // The run ends as soon as every request has; the drain only bounds one that does not, and
  // is wide because a real run cuts off what is still running at its end (a large model's
  // request on a few cores can take seconds), which would leave the probe with no latency.
  c.drain_s = 600 + 4 * period;
  return c;
}

// One segment's co-run samples (by corun_key) pooled over scenarios: its runs with the other
// core groups of its device idle, and with every one of them running its own segments.
struct CorunSamples {
  std::string label;                  // the first scenario's "<scenario> <model> <label> (<unit>)"
  int cores = 0;                      // its core group's (part of the key)
  std::vector<double> alone, loaded;  // seconds per run (the executor's wall time)
  std::vector<double> alone_cpu, loaded_cpu;  // the same runs' CPU time (SegmentTiming::cpu; < 0 unknown)
  std::vector<double> overlap;        // per loaded run: the share of it the other groups ran
};

// A figure needs at least this many runs of each kind.
constexpr int kCorunMinRuns = 5;
constexpr double kMaxCorunSlowdown = 10;  // figures are clamped to [1/10, 10]

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return quantile(v, 0.5);
}

// A loaded run the other groups overlapped less than this (median) gives no figure.
constexpr double kCorunMinOverlap = 0.5;

// The median over rounds of loaded run i / alone run i (the pass takes one of each per round,
// a fraction of a second apart, so the machine's own speed changes over seconds cancel in
// each pair); 0 when a run is not positive or the two differ in length.
double paired_ratio(const std::vector<double>& loaded, const std::vector<double>& alone) {
  if (loaded.size() != alone.size() || loaded.empty()) return 0;
  std::vector<double> r;
  for (size_t i = 0; i < loaded.size(); ++i) {
    if (!(loaded[i] > 0) || !(alone[i] > 0)) return 0;
    r.push_back(loaded[i] / alone[i]);
  }
  return median_of(r);
}

// The co-run slowdown of `cs` at full overlap: the median over rounds of the loaded run over
// the same round's alone run (paired_ratio), in the running thread's CPU time where every
// run has one and the group has 1 core (else in wall time), scaled to full overlap by the
// median share of the loaded runs the other groups ran, 1 + (ratio - 1) / overlap, clamped to
// [1/10, 10]. None with fewer than kCorunMinRuns pairs, a run not positive, or an overlap
// under kCorunMinOverlap. Fills *d.
std::optional<CorunSlowdown> corun_figure(const std::string& key, const CorunSamples& cs, CorunDetail* d) {
  if (cs.loaded.size() < static_cast<size_t>(kCorunMinRuns) || cs.alone.size() != cs.loaded.size())
    return std::nullopt;
  auto known = [](const std::vector<double>& cpu, const std::vector<double>& wall) {
    return cpu.size() == wall.size() && std::all_of(cpu.begin(), cpu.end(), [](double x) { return x > 0; });
  };
  const bool cpu_time = cs.cores == 1 && known(cs.alone_cpu, cs.alone) && known(cs.loaded_cpu, cs.loaded);
  const double ratio = cpu_time ? paired_ratio(cs.loaded_cpu, cs.alone_cpu) : paired_ratio(cs.loaded, cs.alone);
  const double wall_ratio = paired_ratio(cs.loaded, cs.alone);
  if (!(ratio > 0) || !(wall_ratio > 0)) return std::nullopt;
  const double overlap = cs.overlap.empty() ? 1.0 : std::min(1.0, median_of(cs.overlap));
  if (!(overlap >= kCorunMinOverlap)) return std::nullopt;
  // Share of each run's wall time off its CPU.
  auto off_cpu = [](const std::vector<double>& cpu, const std::vector<double>& wall) {
    std::vector<double> v;
    for (size_t i = 0; i < wall.size() && i < cpu.size(); ++i)
      if (cpu[i] >= 0 && wall[i] > 0) v.push_back(std::max(0.0, 1 - cpu[i] / wall[i]));
    return v.size() == wall.size() && !v.empty() ? median_of(v) : -1.0;
  };
  CorunSlowdown c;
  c.key = key;
  c.segment = cs.label;
  c.runs = static_cast<int>(cs.loaded.size());
  c.overlap = overlap;
  c.slowdown = std::clamp(1 + (ratio - 1) / overlap, 1 / kMaxCorunSlowdown, kMaxCorunSlowdown);
  d->key = key;
  d->segment = cs.label;
  d->cpu_time = cpu_time;
  d->ratio = ratio;
  d->wall_ratio = wall_ratio;
  d->overlap = overlap;
  d->off_cpu_alone = off_cpu(cs.alone_cpu, cs.alone);
  d->off_cpu_loaded = off_cpu(cs.loaded_cpu, cs.loaded);
  d->alone_s = median_of(cs.alone);
  d->loaded_s = median_of(cs.loaded);
  return c;
}

// The co-run pass for scenario `s` planned as `p` (its own plans, batch 1): every distinct CPU
// segment (by corun_key) is prepared on an executor of its unit's CPUs and dtype, as the real
// runtime makes them. Rounds then alternate: each segment run once in turn with nothing else
// running (alone), and, per core group, its segments run once each while every other core group
// of its device runs its own segments over and over on threads of its own (loaded; timing starts
// once each of them has run one). Every timed run follows an untimed run of the same segment,
// so alone and loaded runs start equally warm, and the ratio is the interference alone, not a
// cold start after idle time or the runtime's hand-offs. About `seconds` in all (at least
// kCorunMinRuns rounds, after a warm-up run of each). Nothing when fewer than two core groups
// of one device run segments.
void corun_pass(const Scenario& s, const Plan& p, double seconds, const std::string& executor,
                std::map<std::string, CorunSamples>& out) {
  struct Run {
    size_t model = 0, segment = 0;  // in p's own plans
    int unit = 0, cores = 0;
    std::string key, label;
    Executor* ex = nullptr;
    int handle = 0;
    std::vector<double> alone, loaded, alone_cpu, loaded_cpu, overlap;
  };
  using clock = std::chrono::steady_clock;
  const clock::time_point t_base = clock::now();
  auto since = [&] { return std::chrono::duration<double>(clock::now() - t_base).count(); };
  auto unit_cores = [&](int unit) {
    const UnitInfo& ui = p.units[static_cast<size_t>(unit)];
    return s.devices[static_cast<size_t>(ui.device)].units[static_cast<size_t>(ui.unit)].cores;
  };
  std::vector<Run> runs;
  const size_t nm = std::min(p.models.size(), s.models.size());
  std::set<std::string> keys;
  for (size_t m = 0; m < nm; ++m)
    for (size_t k = 0; k < p.models[m].segments.size(); ++k) {
      const std::string key = corun_key(s, p, static_cast<int>(m), static_cast<int>(k));
      if (key.empty() || !keys.insert(key).second) continue;  // the same work twice is measured once
      const Segment& seg = p.models[m].segments[k];
      Run r;
      r.model = m;
      r.segment = k;
      r.unit = seg.unit;
      r.key = key;
      r.label = s.name + " " + s.models[m].name + " " + seg.label + " (" + p.units[static_cast<size_t>(seg.unit)].name + ")";
      r.cores = unit_cores(seg.unit);
      runs.push_back(r);
    }
  std::map<int, std::set<int>> units_of;  // device -> its core groups that run segments
  for (const Run& r : runs) units_of[p.units[static_cast<size_t>(r.unit)].device].insert(r.unit);
  std::erase_if(runs, [&](const Run& r) { return units_of[p.units[static_cast<size_t>(r.unit)].device].size() < 2; });
  if (runs.empty()) return;
  // Executors: one per (core group, dtype), on the group's CPUs.
  std::map<std::pair<int, DType>, std::unique_ptr<Executor>> exs;
  for (Run& r : runs) {
    const Segment& seg = p.models[r.model].segments[r.segment];
    const DType dtype = s.models[r.model].shape.dtype;
    auto& ex = exs[{seg.unit, dtype}];
    if (!ex) {
      const UnitInfo& ui = p.units[static_cast<size_t>(seg.unit)];
      const UnitDecl& ud = s.devices[static_cast<size_t>(ui.device)].units[static_cast<size_t>(ui.unit)];
      std::string cpus;
      for (int c = 0; c < ud.cores; ++c) cpus += (c ? ", " : "") + std::to_string(ud.first_core + c);
      const std::string yaml = "{dtype: " + std::string(to_string(dtype)) + ", cpus: [" + cpus + "], seed: " +
                               std::to_string(s.seed) + "}";
      ConfigNode n = ConfigNode::load_string(yaml, "<calibrate co-run>");
      ex = executor_registry().make(executor, Params(n), n);
    }
    r.ex = ex.get();
    r.handle = ex->prepare(p.models[r.model].graph, seg.ops);
  }
  double round = 0;  // one run of every segment, after a warm-up run each
  for (Run& r : runs) r.ex->run(r.handle);
  for (Run& r : runs) round += r.ex->run(r.handle).total;
  const int rounds = std::clamp(static_cast<int>(seconds / std::max(4 * round, 1e-6)), kCorunMinRuns, 1000);
  std::set<int> units;
  for (const Run& r : runs) units.insert(r.unit);
  for (int round_i = 0; round_i < rounds; ++round_i) {
    // Each timed run follows an untimed run of the same segment, alone and loaded alike, so
    // both start equally warm whatever ran before them.
    for (Run& r : runs) {
      r.ex->run(r.handle);
      const SegmentTiming& t = r.ex->run(r.handle);
      r.alone.push_back(t.total);
      r.alone_cpu.push_back(t.cpu);
    }
    for (int u : units) {
      // Every other core group of u's device runs its segments until told to stop.
      const int device = p.units[static_cast<size_t>(u)].device;
      std::atomic<bool> stop{false};
      std::vector<std::unique_ptr<std::atomic<int>>> done;
      std::vector<std::thread> loaders;
      // Per loader: its group's cores and the [start, end) of each of its runs (seconds since
      // t_base), read once it has joined.
      std::vector<int> loader_cores;
      std::vector<std::vector<std::pair<double, double>>> busy;
      for (int o : units)
        if (o != u && p.units[static_cast<size_t>(o)].device == device) loader_cores.push_back(unit_cores(o));
      busy.resize(loader_cores.size());
      std::mutex error_mu;
      std::string error;
      for (int o : units) {
        if (o == u || p.units[static_cast<size_t>(o)].device != device) continue;
        done.push_back(std::make_unique<std::atomic<int>>(0));
        loaders.emplace_back([&, o, d = done.back().get(), b = &busy[loaders.size()]] {
          try {
            while (!stop.load())
              for (Run& r : runs)
                if (r.unit == o && !stop.load()) {
                  const double t0 = since();
                  r.ex->run(r.handle);
                  b->emplace_back(t0, since());
                  d->fetch_add(1);
                }
          } catch (const std::exception& e) {
            std::lock_guard<std::mutex> lock(error_mu);
            error = e.what();
            d->store(1 << 30);
          }
        });
      }
      for (auto& d : done)
        while (d->load() == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
      std::vector<std::pair<Run*, std::pair<double, double>>> timed;  // each timed run's [start, end)
      for (Run& r : runs)
        if (r.unit == u) {
          r.ex->run(r.handle);
          const double t0 = since();
          const SegmentTiming& t = r.ex->run(r.handle);
          timed.push_back({&r, {t0, since()}});
          r.loaded.push_back(t.total);
          r.loaded_cpu.push_back(t.cpu);
        }
      stop.store(true);
      for (std::thread& t : loaders) t.join();
      if (!error.empty()) throw std::runtime_error("co-run pass: a co-running segment failed: " + error);
      // The share of each timed run the other groups were running a segment (weighted by
      // their cores, as the engine's busy fraction is).
      for (auto& [r, span] : timed) {
        const double len = span.second - span.first;
        double covered = 0, weight = 0;
        for (size_t l = 0; l < busy.size(); ++l) {
          double on = 0;
          for (const auto& [b0, b1] : busy[l]) on += std::max(0.0, std::min(b1, span.second) - std::max(b0, span.first));
          covered += loader_cores[l] * (len > 0 ? std::min(1.0, on / len) : 1.0);
          weight += loader_cores[l];
        }
        r->overlap.push_back(weight > 0 ? covered / weight : 0);
      }
    }
  }
  for (Run& r : runs) {
    CorunSamples& cs = out[r.key];
    if (cs.label.empty()) cs.label = r.label;
    cs.cores = r.cores;
    cs.alone.insert(cs.alone.end(), r.alone.begin(), r.alone.end());
    cs.loaded.insert(cs.loaded.end(), r.loaded.begin(), r.loaded.end());
    cs.alone_cpu.insert(cs.alone_cpu.end(), r.alone_cpu.begin(), r.alone_cpu.end());
    cs.loaded_cpu.insert(cs.loaded_cpu.end(), r.loaded_cpu.begin(), r.loaded_cpu.end());
    cs.overlap.insert(cs.overlap.end(), r.overlap.begin(), r.overlap.end());
  }
}

}  // namespace

std::vector<InContextSummary> calibrate_in_context(DeviceProfile& prof, const std::vector<Scenario>& scenarios,
                                                   const InContextOptions& o) {
  auto roofline = cost_models().make("roofline", Params(), ConfigNode());
  std::map<std::pair<int, DType>, SectionSamples> samples;
  std::vector<ModelRun> runs;
  std::vector<InContextSummary> out;
  std::map<std::string, CorunSamples> corun;  // by corun_key, over every scenario
  int done = 0;
  for (const Scenario& s : scenarios) {
    for (const DeviceInstance& d : s.devices)
      if (d.spec.name != prof.catalog_device)
        throw ConfigError(s.file, d.line, 0, "hardware.devices",
                          "device '" + d.name + "' is catalog device '" + d.spec.name +
                              "' but the profile stands for '" + prof.catalog_device + "'");
    Scenario base = s;
    base.pipeline = PolicyDecl{"serial", Params(), ConfigNode()};
    const Plan plan = make_plan(base, *roofline, std::vector<int>(s.models.size(), 1));
    const size_t nm = s.models.size();  // each model's own plan (not dynamic-zone variants)
    ExecuteOptions eo;
    eo.executor = o.executor;
    eo.warmup = 2;
    eo.trace_limit = 1 << 20;

    // Probe: one request per model, far apart, for their alone latencies.
    std::vector<double> offset(nm), alone(nm, 0.05);
    for (size_t m = 0; m < nm; ++m) offset[m] = 0.25 * static_cast<double>(m);
    {
      ExecResult r = execute(alone_runs(base, offset, 0.25 * static_cast<double>(nm), 2), plan, eo);
      for (size_t m = 0; m < nm; ++m) {
        std::vector<double> lat;
        for (const auto& q : r.result.requests)
          if (q.model == static_cast<int>(m) && q.finished()) lat.push_back(q.latency());
        if (!lat.empty()) alone[m] = *std::min_element(lat.begin(), lat.end());
      }
    }
    // Timed: models in turn, each with room for 1.5x its alone latency (+2 ms), and no
    // faster than the scenario's own arrivals: the idle time before a request decides how
    // cold its first ops start (caches, sleeping OpenMP threads), so it should be alike.
    double period = 0, rate = 0;
    for (size_t m = 0; m < nm; ++m) {
      offset[m] = period;
      period += 1.5 * alone[m] + 0.002;
    }
    for (const StreamDecl& sd : s.streams)  // a load: its share of the alone throughput just probed
      rate += sd.rate_pending ? sd.load / alone[static_cast<size_t>(sd.model)] : sd.rate_hz;
    if (rate > 0) period = std::max(period, static_cast<double>(nm) / rate);
    int count = o.repetitions;
    if (period * count > o.max_seconds)
      count = std::max(o.min_repetitions, static_cast<int>(o.max_seconds / period));
    ExecResult r = execute(alone_runs(base, offset, period, count + o.warmup), plan, eo);
    // The first o.warmup requests of each model are left out of the latency figures; the
    // runtime's op medians include them (it ran every segment eo.warmup times before its
    // clock started, and medians shrug off a few slow first runs).
    InContextSummary sum;
    sum.scenario = s.name;
    for (size_t m = 0; m < nm; ++m) {
      const ModelPlan& mp = plan.models[m];
      const DType dtype = s.models[m].shape.dtype;
      // Sum of op medians per section, and the request's op total.
      double op_total = 0;
      ModelRun run;
      for (const Segment& seg : mp.segments) {
        if (seg.transfer) continue;
        const UnitInfo& ui = plan.units[seg.unit];
        const int cores = s.devices[ui.device].units[ui.unit].cores;
        SectionSamples& ss = samples[{cores, dtype}];
        for (int id : seg.ops) {
          const double t = r.op_seconds[m][id];
          if (!std::isfinite(t)) continue;
          Op op = mp.graph.op(id);
          op.dtype = dtype;
          const std::string sig = op_signature(op);
          ss.op[sig].push_back(t);
          ss.example.emplace(sig, op);
          op_total += t;
          run.ops.push_back({{cores, dtype}, sig});
        }
      }
      // A request's latency counts only when nothing of another request ran between its
      // arrival and its end (no queueing behind a slow neighbour when the machine is busy).
      std::vector<double> lat, wall;
      std::map<uint64_t, double> seg_wall;
      for (const auto& e : r.result.trace)
        if (e.model == static_cast<int>(m)) seg_wall[e.request] += e.end - e.start;
      int k = 0;
      std::set<uint64_t> alone_ids;
      for (const auto& q : r.result.requests) {
        if (q.model != static_cast<int>(m) || !q.finished()) continue;
        if (k++ < o.warmup) continue;
        bool alone_run = true;
        for (const auto& e : r.result.trace)
          if (e.request != q.id && e.start < q.end && e.end > q.arrival) alone_run = false;
        if (!alone_run) continue;
        lat.push_back(q.latency());
        wall.push_back(seg_wall[q.id]);
        alone_ids.insert(q.id);
      }
      if (lat.empty()) continue;
      // Run-to-run variation: each compute segment's runs over its median run.
      std::map<int, std::vector<double>> runs_of;  // segment index -> run seconds
      for (const auto& e : r.result.trace)
        if (e.plan == static_cast<int>(m) && alone_ids.count(e.request))
          runs_of[e.segment].push_back(e.end - e.start);
      for (auto& [si, d] : runs_of) {
        const Segment& seg = mp.segments[si];
        for (double& x : d) x -= seg.overhead;  // the engine's host time is the plan's, not the ops'
        if (seg.transfer) continue;
        std::sort(d.begin(), d.end());
        const double med = quantile(d, 0.5);

        if (!(med > 0)) continue;
        const UnitInfo& ui = plan.units[seg.unit];
        SectionSamples& ss = samples[{s.devices[ui.device].units[ui.unit].cores, dtype}];
        for (double x : d) ss.ratios.push_back(std::max(x, 1e-12) / med);
      }

      std::sort(lat.begin(), lat.end());
      std::sort(wall.begin(), wall.end());
      const double med_lat = quantile(lat, 0.5);
      // The engine's per-step host time (Segment::overhead) is the plan's own; what is left
      // beyond the ops is dispatch.
      double engine_s = 0;
      for (const Segment& seg : mp.segments) engine_s += seg.overhead;
      run.latency_s = med_lat - engine_s;
      runs.push_back(std::move(run));
      sum.requests += static_cast<int>(lat.size());
      sum.segments += static_cast<int>(lat.size() * mp.segments.size());
      sum.op_seconds += op_total;
      sum.wall_seconds += quantile(wall, 0.5);
      sum.latency_seconds += med_lat;
    }
    // Batched segments (units with a batch size): the runs above are one request at a time,
    // so each segment also runs at every batch size its unit may run, on an executor of the
    // unit's cores: a warm-up run each, then rounds that run every batched segment once in
    // turn (as in the scenario, where one segment's weights have left the caches by the time
    // it runs again), `repetitions` rounds or about max_seconds; each op's median joins the
    // section under its batched shape.
    {
      struct BatchedRun {
        Executor* ex;
        int handle, cores;
        DType dtype;
        const OpGraph* graph;
        std::map<int, std::vector<double>> times;
      };
      std::map<std::pair<int, DType>, std::unique_ptr<Executor>> executors;
      std::vector<BatchedRun> jobs;
      for (size_t m = 0; m < nm; ++m) {
        const ModelPlan& mp = plan.models[m];
        const DType dtype = s.models[m].shape.dtype;
        for (const BatchVariant& v : mp.batched)
          for (const Segment& seg : v.segments) {
            if (seg.transfer) continue;
            const UnitInfo& ui = plan.units[static_cast<size_t>(seg.unit)];
            if (ui.batch < v.size) continue;  // a size of another unit the model visits
            const int cores = s.devices[static_cast<size_t>(ui.device)].units[static_cast<size_t>(ui.unit)].cores;
            auto& ex = executors[{cores, dtype}];
            if (!ex) ex = make_calibration_executor(o.executor, cores, dtype);
            jobs.push_back({ex.get(), ex->prepare(v.graph, seg.ops), cores, dtype, &v.graph, {}});
          }
      }
      double round = 0;
      for (BatchedRun& j : jobs) {
        const auto t0 = std::chrono::steady_clock::now();
        j.ex->run(j.handle);
        round += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      const int rounds = jobs.empty() ? 0 : std::max(1, std::min(o.repetitions, static_cast<int>(o.max_seconds / std::max(round, 1e-6))));
      for (int r = 0; r < rounds; ++r)
        for (BatchedRun& j : jobs) {
          const SegmentTiming& st = j.ex->run(j.handle);
          for (size_t i = 0; i < st.ops.size(); ++i) j.times[st.ops[i]].push_back(st.seconds[i]);
        }
      for (BatchedRun& j : jobs) {
        SectionSamples& ss = samples[{j.cores, j.dtype}];
        for (auto& [id, xs] : j.times) {
          std::sort(xs.begin(), xs.end());
          Op op = j.graph->op(id);
          op.dtype = j.dtype;
          const std::string sig = op_signature(op);
          ss.op[sig].push_back(quantile(xs, 0.5));
          ss.example.emplace(sig, op);
        }
      }
    }
    if (o.corun_seconds > 0 && !prof.host.empty()) corun_pass(s, plan, o.corun_seconds, o.executor, corun);
    out.push_back(sum);
    if (o.progress) o.progress(++done, static_cast<int>(scenarios.size()), s.name);
  }

  // Per signature: the mean over its occurrences (and scenarios) of the runtime's per-op
  // medians, so that a request's predicted op total is the sum of its ops' medians even when
  // occurrences differ (the first block after another stage runs colder than the rest).
  std::map<std::pair<int, DType>, std::map<std::string, double>> pooled;
  for (auto& [key, ss] : samples)
    for (auto& [sig, v] : ss.op) {
      double sum = 0;
      for (double x : v) sum += x;
      pooled[key][sig] = std::max(sum / static_cast<double>(v.size()), 1e-9);
    }
  // Dispatch overhead: what a median alone request takes beyond its ops' predicted times,
  // split among its sections by op count.
  for (const ModelRun& run : runs) {
    double predicted = 0;
    std::map<std::pair<int, DType>, double> n_by_section;
    for (const auto& [key, sig] : run.ops) {
      predicted += pooled[key][sig];
      n_by_section[key] += 1;
    }
    const double gap = run.latency_s - predicted;
    for (const auto& [key, n] : n_by_section) {
      samples[key].overhead_s += gap * n / static_cast<double>(run.ops.size());
      samples[key].ops += n;
    }
  }
  for (auto& [key, ss] : samples) {
    const auto [cores, dtype] = key;
    ProfileSection* sec = nullptr;
    for (ProfileSection& x : prof.sections)
      if (x.threads == cores && x.dtype == dtype) sec = &x;
    if (!sec) {
      ProfileSection x;
      x.threads = cores;
      x.dtype = dtype;
      x.executor_device = make_calibration_executor(o.executor, cores, dtype)->device();
      prof.sections.push_back(std::move(x));
      sec = &prof.sections.back();
      if (std::find(prof.threads.begin(), prof.threads.end(), cores) == prof.threads.end())
        prof.threads.push_back(cores);
      if (std::find(prof.dtypes.begin(), prof.dtypes.end(), dtype) == prof.dtypes.end())
        prof.dtypes.push_back(dtype);
    }
    for (auto& [sig, v] : ss.op) {
      std::sort(v.begin(), v.end());
      const Op& op = ss.example.at(sig);
      Measurement m;
      m.kind = op.kind;
      m.fn = op.fn;
      m.work = op_work(op);
      m.median_s = pooled[key][sig];
      m.spread = (quantile(v, 0.75) - quantile(v, 0.25)) / m.median_s;
      m.reps = static_cast<int>(v.size());
      m.source = "in-context";
      sec->table[sig] = m;
      sec->skipped.erase(sig);
    }
    sec->op_overhead_s = ss.ops > 0 ? std::max(0.0, ss.overhead_s / ss.ops) : 0;
    if (ss.ratios.size() >= kMinVariabilitySamples) {
      std::sort(ss.ratios.begin(), ss.ratios.end());
      sec->service_quantiles.clear();
      for (int i = 0; i < kServiceQuantiles; ++i)
        sec->service_quantiles.push_back(quantile(ss.ratios, i / double(kServiceQuantiles - 1)));
    }
    sec->refit();
  }
  // Co-run slowdowns (corun_figure): at full overlap, in CPU time on 1-core groups.
  std::vector<CorunSlowdown> measured;
  for (auto& [key, cs] : corun) {
    CorunDetail d;
    if (auto c = corun_figure(key, cs, &d)) {
      measured.push_back(*c);
      if (o.corun_details) o.corun_details->push_back(d);
    }
  }
  if (!prof.host.empty()) prof.host.merge_corun(measured);
  return out;
}

}  // namespace vlasim
