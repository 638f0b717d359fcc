// oneDNN executor speed: the matmul ceiling, the pi0_small GEMM mix and a whole pi0_small
// inference through OneDnnExecutor on every allowed CPU; the same GEMM shapes as bare oneDNN
// matmuls (no executor); the machine's read bandwidth. Counters:
//   GFLOP/s        useful FLOPs (the graph's op flops) per wall second
//   ceiling_ratio  GFLOP/s over the best matmul rate of the same dtype (BM_Ceiling: max over
//                  the BM_GemmShape shapes through the executor, measured once per process)
//   ms, <kind>_ms  mean wall milliseconds per run, and per op kind (gemm, attention, ...)
//   <stage>_stage_ms  mean milliseconds per stage (vision, prefix, action)
//   best_*, med_*  the same from the fastest / median run (the machine is shared and noisy)
// BM_GemmEpilogue: one GEMM with each fused epilogue kind (none, bias, gelu_tanh, residual).
// BM_Pi0SmallGemmMix alternates, in one benchmark, `rounds` runs of: the executor's GEMM-only
// segment (exec_*); the same shapes as bare matmuls (bare_*: one primitive per GEMM op,
// batch*m x n x k, created once, weights pre-packed and shared per weight_id as the executor
// shares them, arguments bound once, run back to back on a pinned worker); and the bare
// matmuls with each op's fused epilogue (bare_epi_*: bias, activation, gate and residual
// post-ops). They alternate in blocks of 5 back-to-back runs after one untimed run.
// exec_over_bare = executor rate / bare rate. *_best from the fastest run, *_med the median.
// It prints the mix's GEMM classes (per stage: count, rows, GFLOP, weights read, FLOP per
// byte) to stderr.
// Variants (third argument): pi0_small at its card shape (batch 1, chunk 10), batch 4,
// batch 8, chunk 50, batch 16 (RunShape batch / chunk); the GEMM mix also has pi0 at its
// real widths with every 9th block (exec_<stage>_ceiling_ratio: per stage, fastest run).
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "executors/core_worker.h"
#include "executors/onednn_executor.h"
#include "models/builder.h"
#include "tests/executors/graphs.h"

namespace vlasim {
namespace {

const DType kDtypes[] = {DType::BF16, DType::F32};
struct Shape {
  int64_t m, n, k;
};
const Shape kShapes[] = {{512, 512, 512},   {1024, 1024, 1024}, {2048, 2048, 2048},
                         {128, 4096, 1024}, {512, 4096, 1024},  {512, 1024, 4096}};

double seconds(Executor& ex, int seg, int runs) {
  double best = 1e30;
  for (int i = 0; i < runs; ++i) best = std::min(best, ex.run(seg).total);
  return best;
}

// Best GFLOP/s over kShapes (cached per dtype).
double ceiling_gflops(DType dt) {
  static std::map<DType, double> cache;
  auto it = cache.find(dt);
  if (it != cache.end()) return it->second;
  double best = 0;
  for (const Shape& s : kShapes) {
    OpGraph g;
    g.add(testing::gemm("g", s.m, s.n, s.k));
    ExecOptions o;
    o.dtype = dt;
    OneDnnExecutor ex(o);
    int seg = ex.prepare(g, {0});
    seconds(ex, seg, 2);
    best = std::max(best, g.flops() / seconds(ex, seg, 20) / 1e9);
  }
  return cache[dt] = best;
}

// Run-time shapes measured (0 = the card's default). `card` pi0_small, or pi0 at its real
// widths with only every `stride`-th block of each component kept in the GEMM mix (pi0's 27
// vision and 18 decoder/expert blocks: stride 9 keeps 3 and 2, the same block shapes in the
// same proportions, with a ninth of the weights and FLOPs; the GEMMs outside blocks stay).
struct Variant {
  const char* name;
  int batch, chunk;
  const char* card = "pi0_small";
  int stride = 1;
};
const Variant kVariants[] = {{"b1_c10", 1, 0},  {"b4_c10", 4, 0}, {"b8_c10", 8, 0},
                             {"b1_c50", 1, 50}, {"b16_c10", 16, 0},
                             {"pi0_blocks_div9", 1, 0, "pi0", 9}};

OpGraph variant_graph(DType dt, const Variant& v, std::string* source) {
  std::string card = default_cards_dir() + "/" + v.card + ".yaml";
  try {
    RunShape shape;
    shape.dtype = dt;
    shape.batch = v.batch;
    shape.chunk = v.chunk;
    *source = card.substr(card.rfind('/') + 1) + " " + v.name;
    return build_graph(load_card(card), shape);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_executor: %s unavailable (%s); using the hand-built graph\n",
                 card.c_str(), e.what());
    *source = "hand-built (batch 1)";
    testing::Pi0Dims d = testing::pi0_small_dims();
    if (v.chunk > 0) d.chunk = v.chunk;
    return testing::pi0_graph(d);
  }
}

// Whether op `o` is in the GEMM mix that keeps every `stride`-th block.
bool in_mix(const Op& o, int stride) {
  return o.kind == OpKind::Gemm && (o.block < 0 || o.block % stride == 0);
}

// Prints, once per label, the GEMM classes of `ops` (GEMMs of g): per stage the count, rows (batch*m),
// GFLOP, weight bytes read and arithmetic intensity (FLOP per byte read or written).
void print_gemm_classes(const OpGraph& g, const std::vector<int>& ops, const std::string& label) {
  static std::set<std::string> done;
  if (!done.insert(label).second) return;
  struct Class {
    int n = 0;
    int64_t mmin = INT64_MAX, mmax = 0;
    double flops = 0, wbytes = 0, bytes = 0;
  };
  std::map<std::string, Class> cls;
  for (int id : ops) {
    const Op& o = g.op(id);
    if (o.kind != OpKind::Gemm) continue;
    Class& c = cls[to_string(o.stage)];
    ++c.n;
    c.mmin = std::min(c.mmin, o.batch * o.m);
    c.mmax = std::max(c.mmax, o.batch * o.m);
    c.flops += o.flops;
    c.wbytes += o.weight_bytes;
    c.bytes += o.bytes_read + o.bytes_written;
  }
  std::fprintf(stderr, "gemm classes of %s:\n", label.c_str());
  for (auto& [stage, c] : cls)
    std::fprintf(stderr,
                 "  %-7s %4d gemms  M %4lld-%-5lld %7.3f GFLOP  weights read %7.1f MiB  "
                 "%6.1f FLOP/B\n",
                 stage.c_str(), c.n, static_cast<long long>(c.mmin),
                 static_cast<long long>(c.mmax), c.flops / 1e9, c.wbytes / 1048576.0,
                 c.flops / c.bytes);
}

// The GEMM ops of a graph in the mix (in_mix) as bare oneDNN matmuls: one primitive per op (batch*m x n x k),
// created once, weights reordered once into the primitive's packed layout and shared per
// weight_id (as the executor's weight cache shares them), arguments bound once, run back to
// back on a pinned worker whose OpenMP team has one thread per CPU (as the executor runs).
// With `epilogue`, each matmul carries the op's bias, activation, gate and residual
// post-ops (gate_up as one n-wide matmul).
class BareMix {
 public:
  BareMix(const OpGraph& g, DType dt, bool epilogue, int stride)
      : worker_(allowed_cpus()) {
    auto f = [&] { build(g, dt, epilogue, stride); };
    worker_.call(f);
  }
  ~BareMix() {
    auto f = [this] {
      prims_.clear();
      mems_.clear();
      weights_.clear();
    };
    worker_.call(f);
  }
  // Seconds of one pass over every matmul.
  double run() {
    double t = 0;
    auto f = [&] {
      const auto t0 = std::chrono::steady_clock::now();
      for (size_t i = 0; i < prims_.size(); ++i)
        dnnl::error::wrap_c_api(dnnl_primitive_execute(prims_[i].get(), strm_.get(),
                                                       static_cast<int>(args_[i].size()),
                                                       args_[i].data()),
                                "bare matmul");
      t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    worker_.call(f);
    return t;
  }

 private:
  using md = dnnl::memory::desc;

  void build(const OpGraph& g, DType dt, bool epilogue, int stride) {
    eng_ = dnnl::engine(dnnl::engine::kind::cpu, 0);
    strm_ = dnnl::stream(eng_);
    const auto t = dt == DType::BF16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
    using tag = dnnl::memory::format_tag;
    size_t scratch = 0;
    std::vector<md> scratch_mds;
    for (int id : all_ops(g)) {
      const Op& o = g.op(id);
      if (!in_mix(o, stride)) continue;
      const int64_t M = o.batch * o.m, N = o.n, K = o.k;
      md src({M, K}, t, tag::ab), dst({M, N}, t, tag::ab);
      md wany({K, N}, t, tag::any), bias({1, N}, t, tag::ab);
      dnnl::post_ops po;
      std::vector<dnnl::algorithm> bins;
      const bool with_bias = epilogue && o.epi.bias;
      if (epilogue) {
        dnnl::algorithm alg = dnnl::algorithm::undef;
        switch (o.epi.act) {
          case Activation::GeluTanh: alg = dnnl::algorithm::eltwise_gelu_tanh; break;
          case Activation::GeluErf: alg = dnnl::algorithm::eltwise_gelu_erf; break;
          case Activation::Silu: alg = dnnl::algorithm::eltwise_swish; break;
          case Activation::Relu: alg = dnnl::algorithm::eltwise_relu; break;
          case Activation::None: break;
        }
        if (alg != dnnl::algorithm::undef)
          po.append_eltwise(1.f, alg, o.epi.act == Activation::Silu ? 1.f : 0.f, 0.f);
        if (o.epi.gate) bins.push_back(dnnl::algorithm::binary_mul);
        if (o.epi.residual) bins.push_back(dnnl::algorithm::binary_add);
        for (dnnl::algorithm b : bins) po.append_binary(b, dst);
      }
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      attr.set_post_ops(po);
      dnnl::matmul::primitive_desc pd =
          with_bias ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wany, bias, dst), attr, eng_)
                    : dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wany, dst), attr, eng_);
      std::vector<dnnl_exec_arg_t> a;
      auto bind = [&](int arg, const dnnl::memory& m) {
        mems_.push_back(m);
        a.push_back(dnnl_exec_arg_t{arg, m.get()});
      };
      bind(DNNL_ARG_SRC, filled(src, 0.5f));
      bind(DNNL_ARG_WEIGHTS, weight(o.weight_id + "/w", pd.weights_desc()));
      if (with_bias) bind(DNNL_ARG_BIAS, weight(o.weight_id + "/b", pd.bias_desc()));
      bind(DNNL_ARG_DST, dnnl::memory(dst, eng_));
      const int first = po.len() - static_cast<int>(bins.size());
      for (size_t i = 0; i < bins.size(); ++i)
        bind(DNNL_ARG_ATTR_MULTIPLE_POST_OP(first + static_cast<int>(i)) | DNNL_ARG_SRC_1,
             filled(dst, 0.25f));
      scratch = std::max(scratch, pd.scratchpad_desc().get_size());
      scratch_mds.push_back(pd.scratchpad_desc());
      prims_.push_back(dnnl::matmul(pd));
      args_.push_back(std::move(a));
    }
    scratch_.assign(scratch + 64, 0);
    char* sp = scratch_.data() + (64 - reinterpret_cast<uintptr_t>(scratch_.data()) % 64) % 64;
    for (size_t i = 0; i < prims_.size(); ++i)
      if (scratch_mds[i].get_size() > 0) {
        dnnl::memory m(scratch_mds[i], eng_, sp);
        mems_.push_back(m);
        args_[i].push_back(dnnl_exec_arg_t{DNNL_ARG_SCRATCHPAD, m.get()});
      }
  }
  // A new buffer of layout `d` holding small values (reordered from plain f32).
  dnnl::memory filled(const md& d, float v) {
    const dnnl::memory::dims dims = d.dims();
    md plain(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
    std::vector<float> x(static_cast<size_t>(dims[0] * dims[1]));
    for (size_t i = 0; i < x.size(); ++i) x[i] = v * static_cast<float>((i * 7919) % 17) / 17.f;
    dnnl::memory src(plain, eng_, x.data()), dst(d, eng_);
    dnnl::reorder(src, dst).execute(strm_, src, dst);
    strm_.wait();
    return dst;
  }
  // A parameter shared per key and packed layout.
  dnnl::memory weight(const std::string& key, const md& packed) {
    for (auto& [k, m] : weights_)
      if (k == key && m.get_desc() == packed) return m;
    weights_.push_back({key, filled(packed, 0.05f)});
    return weights_.back().second;
  }

  CoreWorker worker_;
  dnnl::engine eng_;
  dnnl::stream strm_;
  std::vector<dnnl::primitive> prims_;
  std::vector<std::vector<dnnl_exec_arg_t>> args_;
  std::vector<dnnl::memory> mems_;
  std::vector<std::pair<std::string, dnnl::memory>> weights_;
  std::vector<char> scratch_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void BM_GemmShape(benchmark::State& state) {
  const DType dt = kDtypes[state.range(0)];
  if (std::string why = cpu_dtype_problem(dt); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  const Shape s = kShapes[state.range(1)];
  OpGraph g;
  g.add(testing::gemm("g", s.m, s.n, s.k));
  ExecOptions o;
  o.dtype = dt;
  OneDnnExecutor ex(o);
  int seg = ex.prepare(g, {0});
  ex.run(seg);
  for (auto _ : state) ex.run(seg);
  state.counters["GFLOP/s"] =
      benchmark::Counter(g.flops() * static_cast<double>(state.iterations()) / 1e9,
                         benchmark::Counter::kIsRate);
  state.SetLabel(std::string(to_string(dt)) + " " + std::to_string(s.m) + "x" +
                 std::to_string(s.n) + "x" + std::to_string(s.k));
}

// One GEMM through the executor with each kind of fused epilogue, to show what the epilogue
// costs against the GEMM's own work (small K: pi0_small's MLP up-projection; large K: a
// square 2048 GEMM). Args: dtype, shape, epilogue (none, bias, gelu_tanh, residual add).
void BM_GemmEpilogue(benchmark::State& state) {
  const DType dt = kDtypes[state.range(0)];
  if (std::string why = cpu_dtype_problem(dt); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  const Shape s = state.range(1) == 0 ? Shape{2048, 1536, 384} : Shape{2048, 2048, 2048};
  const char* names[] = {"none", "bias", "gelu_tanh", "residual"};
  Epilogue e;
  e.bias = state.range(2) == 1;
  e.act = state.range(2) == 2 ? Activation::GeluTanh : Activation::None;
  e.residual = state.range(2) == 3;
  OpGraph g;
  const int res = e.residual ? g.add(testing::gemm("res", s.m, s.n, 16)) : -1;  // an input
  const int o = g.add(testing::gemm("g", s.m, s.n, s.k, e));
  if (res >= 0) g.depend(res, o, 0);
  ExecOptions opts;
  opts.dtype = dt;
  OneDnnExecutor ex(opts);
  const int seg = ex.prepare(g, {o});
  ex.run(seg);
  for (auto _ : state) ex.run(seg);
  state.counters["GFLOP/s"] = benchmark::Counter(g.op(o).flops * static_cast<double>(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
  state.SetLabel(std::string(to_string(dt)) + " " + std::to_string(s.m) + "x" + std::to_string(s.n) +
                 "x" + std::to_string(s.k) + " epilogue " + names[state.range(2)]);
}

void BM_Ceiling(benchmark::State& state) {
  const DType dt = kDtypes[state.range(0)];
  if (std::string why = cpu_dtype_problem(dt); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  double c = 0;
  for (auto _ : state) c = ceiling_gflops(dt);
  state.counters["ceiling_GFLOP/s"] = c;
  state.SetLabel(std::string(to_string(dt)) + " max over BM_GemmShape shapes");
}

// Runs `ops` of the pi0_small graph; reports rate, ratio and per-kind milliseconds.
void BM_Pi0SmallInference(benchmark::State& state) {
  const DType dt = kDtypes[state.range(0)];
  if (std::string why = cpu_dtype_problem(dt); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  const GateUpMode mode = static_cast<GateUpMode>(state.range(1));
  std::string source;
  OpGraph g = variant_graph(dt, kVariants[state.range(2)], &source);
  std::vector<int> ops = all_ops(g);
  const double flops = g.flops();
  ExecOptions o;
  o.dtype = dt;
  OneDnnExecutor ex(o, mode);
  int seg = ex.prepare(g, ops);
  ex.run(seg);
  std::map<std::string, double> kinds, stages;
  std::vector<double> runs;
  for (auto _ : state) {
    const SegmentTiming& t = ex.run(seg);
    runs.push_back(t.total);
    for (auto& [k, v] : time_by_kind(g, t)) kinds[k] += v;
    for (auto& [k, v] : time_by_stage(g, t)) stages[k] += v;
  }
  const double n = static_cast<double>(state.iterations());
  double total = 0;
  for (double r : runs) total += r;
  const double best = *std::min_element(runs.begin(), runs.end()), med = median(runs);
  const double ceiling = ceiling_gflops(dt);
  state.counters["ceiling_GFLOP/s"] = ceiling;
  state.counters["GFLOP/s"] = flops / (total / n) / 1e9;
  state.counters["ceiling_ratio"] = flops / (total / n) / 1e9 / ceiling;
  state.counters["ms"] = total / n * 1e3;
  state.counters["best_ms"] = best * 1e3;
  state.counters["med_ms"] = med * 1e3;
  state.counters["best_GFLOP/s"] = flops / best / 1e9;
  state.counters["best_ceiling_ratio"] = flops / best / 1e9 / ceiling;
  state.counters["GFLOP"] = flops / 1e9;
  state.counters["ops"] = static_cast<double>(ops.size());
  for (auto& [k, v] : kinds)
    if (k != "total") state.counters[k + "_ms"] = v / n * 1e3;
  for (auto& [k, v] : stages) state.counters[k + "_stage_ms"] = v / n * 1e3;
  state.SetLabel(std::string(to_string(dt)) + " " + source +
                 (mode == GateUpMode::OneMatmul ? " gate_up=one_matmul" : " gate_up=two_matmuls"));
}

// The GEMM mix: executor, bare matmuls and bare matmuls with epilogues, alternated.
void BM_Pi0SmallGemmMix(benchmark::State& state) {
  const DType dt = kDtypes[state.range(0)];
  if (std::string why = cpu_dtype_problem(dt); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  const GateUpMode mode = static_cast<GateUpMode>(state.range(1));
  std::string source;
  OpGraph g = variant_graph(dt, kVariants[state.range(2)], &source);
  std::vector<int> ops;
  double flops = 0;
  const Variant& variant = kVariants[state.range(2)];
  for (int id : all_ops(g))
    if (in_mix(g.op(id), variant.stride)) {
      ops.push_back(id);
      flops += g.op(id).flops;
    }
  print_gemm_classes(g, ops, source);
  const double ceiling = ceiling_gflops(dt);
  ExecOptions o;
  o.dtype = dt;
  OneDnnExecutor ex(o, mode);
  int seg = ex.prepare(g, ops);
  BareMix bare(g, dt, false, variant.stride), bare_epi(g, dt, true, variant.stride);
  const int rounds = static_cast<int>(state.range(3));
  std::vector<double> te, tb, tp;
  // Each of the three has its own pinned worker and OpenMP team. They alternate in blocks:
  // a pause (libgomp's idle threads spin some milliseconds before sleeping; they must not
  // steal the CPUs from the next team), one untimed run (brings the weights back into the
  // caches, as in back-to-back inference), then `kPerBlock` timed back-to-back runs.
  constexpr int kPerBlock = 5;
  auto block = [&](std::vector<double>& out, auto&& run) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    run();
    for (int i = 0; i < kPerBlock; ++i) out.push_back(run());
  };
  SegmentTiming best_exec;  // the executor's fastest run, per op
  best_exec.total = 1e30;
  auto exec_run = [&] {
    const SegmentTiming& t = ex.run(seg);
    if (t.total < best_exec.total) best_exec = t;
    return t.total;
  };
  for (auto _ : state)
    for (int r = 0; r < rounds; r += kPerBlock) {
      block(te, exec_run);
      block(tb, [&] { return bare.run(); });
      block(tp, [&] { return bare_epi.run(); });
    }
  auto rate = [&](double s) { return flops / s / 1e9; };
  const double eb = *std::min_element(te.begin(), te.end()), em = median(te);
  const double bb = *std::min_element(tb.begin(), tb.end()), bm = median(tb);
  const double pb = *std::min_element(tp.begin(), tp.end()), pm = median(tp);
  state.counters["ceiling_GFLOP/s"] = ceiling;
  state.counters["GFLOP"] = flops / 1e9;
  state.counters["gemms"] = static_cast<double>(ops.size());
  state.counters["exec_best_GFLOP/s"] = rate(eb);
  state.counters["exec_med_GFLOP/s"] = rate(em);
  state.counters["exec_best_ceiling_ratio"] = rate(eb) / ceiling;
  state.counters["exec_med_ceiling_ratio"] = rate(em) / ceiling;
  state.counters["bare_best_GFLOP/s"] = rate(bb);
  state.counters["bare_med_GFLOP/s"] = rate(bm);
  state.counters["bare_best_ceiling_ratio"] = rate(bb) / ceiling;
  state.counters["bare_med_ceiling_ratio"] = rate(bm) / ceiling;
  state.counters["bare_epi_best_GFLOP/s"] = rate(pb);
  state.counters["bare_epi_med_GFLOP/s"] = rate(pm);
  state.counters["exec_over_bare_best"] = bb / eb;
  state.counters["exec_over_bare_med"] = bm / em;
  state.counters["exec_over_bare_epi_med"] = pm / em;
  state.counters["exec_best_ms"] = eb * 1e3;
  state.counters["bare_best_ms"] = bb * 1e3;
  // Per stage in the executor's fastest run: GFLOP/s over the stage's summed op times.
  std::map<std::string, double> stage_flops;
  for (int id : ops) stage_flops[to_string(g.op(id).stage)] += g.op(id).flops;
  for (auto& [stage, sec] : time_by_stage(g, best_exec))
    if (stage_flops.count(stage) && sec > 0)
      state.counters["exec_" + stage + "_ceiling_ratio"] = stage_flops[stage] / sec / 1e9 / ceiling;
  state.counters["us_per_gemm_overhead_med"] = (em - pm) / static_cast<double>(ops.size()) * 1e6;
  state.SetLabel(std::string(to_string(dt)) + " " + source +
                 (mode == GateUpMode::OneMatmul ? " gate_up=one_matmul" : " gate_up=two_matmuls"));
}

// Read bandwidth of `bytes` (L2, L3, DRAM sized), all CPUs, summing 64-bit words.
void BM_ReadBandwidth(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0)) << 20;
  std::vector<uint64_t> buf(bytes / 8, 1);
  uint64_t sink = 0;
  const int64_t n = static_cast<int64_t>(buf.size());
  const uint64_t* p = buf.data();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let other teams park
  for (auto _ : state) {
    uint64_t s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
    for (int64_t i = 0; i < n; ++i) s += p[i];
    sink += s;
  }
  benchmark::DoNotOptimize(sink);
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) * static_cast<double>(state.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
}

BENCHMARK(BM_GemmShape)
    ->ArgsProduct({{0, 1}, {0, 1, 2, 3, 4, 5}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.3);
// dtype, shape (0: 2048x1536x384, 1: 2048^3), epilogue.
BENCHMARK(BM_GemmEpilogue)
    ->ArgsProduct({{0, 1}, {0, 1}, {0, 1, 2, 3}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.3);
BENCHMARK(BM_Ceiling)->Arg(0)->Arg(1)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);
// dtype, gate_up mode, variant, rounds.
BENCHMARK(BM_Pi0SmallGemmMix)
    ->ArgsProduct({{0, 1}, {0, 1}, {0, 1, 2, 3, 4, 5}, {25}})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
// dtype, gate_up mode, variant.
BENCHMARK(BM_Pi0SmallInference)
    ->ArgsProduct({{0, 1}, {0, 1}, {0, 1, 2, 3}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);
BENCHMARK(BM_ReadBandwidth)->Arg(1)->Arg(16)->Arg(512)->UseRealTime()->MinTime(0.3);

}  // namespace
}  // namespace vlasim

BENCHMARK_MAIN();
