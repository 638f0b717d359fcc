#include "executors/calibration/calibrate.h"

#include <oneapi/dnnl/dnnl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <set>
#include <stdexcept>

#include "executors/calibration/calibrate_internal.h"
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

using calib::quantile;

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

namespace {

// Checks `o` against its catalog device `spec` (found in `cat`) and its executor, and returns
// the widths profiled: core-group sizes on a CPU, SM limits on a GPU. Throws ConfigError as
// calibrate() says.
std::vector<int> profiled_widths(const CalibrateOptions& o, const Catalog& cat, const DeviceSpec* spec) {
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
  return widths;
}

// A profile with no measurements: the machine, host, executor and settings it is measured
// with. Throws std::invalid_argument for a dtype this CPU cannot run.
DeviceProfile empty_profile(const CalibrateOptions& o, bool gpu, const std::vector<int>& widths) {
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
  return p;
}

// Called after each measurement with its label.
using ReportFn = std::function<void(const std::string&)>;

// Whether o.should_stop asks the calibration to end now.
bool stop_asked(const CalibrateOptions& o) { return o.should_stop && !o.should_stop().empty(); }

// For each (width, dtype), a section of `p` with every op of plans[dtype index] timed on a
// fresh executor (or the reason it was skipped), fitted. False when o.should_stop ended it
// early (the section it was in kept with what it had, when it had anything).
bool measure_sections(const CalibrateOptions& o, const std::vector<int>& widths,
                      const std::vector<std::vector<Work>>& plans, DeviceProfile& p, const ReportFn& report) {
  for (int t : widths)
    for (size_t di = 0; di < o.dtypes.size(); ++di) {
      const DType d = o.dtypes[di];
      ProfileSection s;
      s.threads = t;
      s.dtype = d;
      s.executor_device = make_calibration_executor(o.executor, t, d, o.graph)->device();
      bool stopped = false;
      for (const Work& w : plans[di]) {
        if ((stopped = stop_asked(o))) break;
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
      if (stopped && s.table.empty() && s.skipped.empty()) return false;
      s.refit();
      p.sections.push_back(std::move(s));
      if (stopped) return false;
    }
  return true;
}

// The host memcpy figure of `p` for link o.memcpy_link: a copy of each size timed, and the
// latency and bandwidth fitted to them (none when o.should_stop ends it first).
void measure_memcpy(const CalibrateOptions& o, const std::vector<double>& memcpy_sizes, DeviceProfile& p,
                    const ReportFn& report) {
  MemcpyFit m;  // `p` takes it only when every size was timed
  m.link = o.memcpy_link;
  for (double bytes : memcpy_sizes) {
    if (stop_asked(o)) return;
    Op op = base(OpKind::Transfer, OpFn::DeviceToDevice, DType::F32);
    op.out_bytes = bytes;
    int id = 0;
    OpGraph g = single_op_graph(op, &id);
    auto ex = make_calibration_executor(o.executor, 1, DType::F32);
    OpTiming tm = time_op(*ex, g, id, o.warmup, o.repetitions, o.min_repetitions, o.max_seconds_per_op);
    double t = std::max(tm.median_s, 1e-9);
    // Timer noise must not make a larger copy look faster than a smaller one.
    if (!m.points.empty()) t = std::max(t, m.points.back().second);
    m.points.push_back({bytes, t});
    report("memcpy " + std::to_string(static_cast<long long>(bytes)) + " B");
  }
  const auto& pts = m.points;
  m.latency_s = pts.front().second;
  const size_t n = pts.size();
  const double dt = n > 1 ? pts[n - 1].second - pts[n - 2].second : 0;
  m.bytes_per_s = dt > 0 ? (pts[n - 1].first - pts[n - 2].first) / dt : pts.back().first / pts.back().second;
  p.memcpy = std::move(m);
}

}  // namespace

DeviceProfile calibrate(const CalibrateOptions& o) {
  Catalog cat = Catalog::load_dir(o.catalog_dir);
  const DeviceSpec* spec = cat.find(o.catalog_device);
  const std::vector<int> widths = profiled_widths(o, cat, spec);
  const bool gpu = spec->type == DeviceType::Gpu;
  DeviceProfile p = empty_profile(o, gpu, widths);

  const std::vector<std::vector<Work>> plans = section_work(o);
  const std::vector<double> memcpy_sizes = memcpy_sizes_of(o, gpu);
  int total = static_cast<int>(memcpy_sizes.size()), done = 0;
  for (const auto& l : plans) total += static_cast<int>(widths.size() * l.size());
  auto report = [&](const std::string& label) {
    ++done;
    if (o.progress) o.progress(done, total, label);
  };
  if (measure_sections(o, widths, plans, p, report) && !memcpy_sizes.empty()) measure_memcpy(o, memcpy_sizes, p, report);
  return p;
}

}  // namespace vlasim
