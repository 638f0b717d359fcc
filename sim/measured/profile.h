// Device profiles: operator times measured on one machine by `vlasim calibrate`
// (executors/calibration), stored as JSON, and the "profiled" cost model that predicts from
// them.
//
// A profile names what it was made with (machine, executor and its device string, library
// versions, date, grid level) and the catalog device it stands for ("epyc-2vcpu"). It holds
// one section per (thread count, dtype) profiled; a section has
//   - table: op signature -> median seconds over the timed runs, a spread figure and the
//     op's work features (flops, bytes), for every op of the calibration grid and every
//     distinct op of the graphs calibration was given;
//   - fits: one predictor per op kind/fn ("gemm/linear") and one pooled per kind
//     ("gemm/*"), for shapes that are not in the table.
//
// Predictor choice. Exact-shape table hits come first: calibration profiles every op of the
// scenarios it is given, so a calibrated scenario is predicted from its own measurements.
// For other shapes a small parametric model of the two work features is fitted, not an
// interpolation table: op shapes have up to ten dimensions (m, n, k, epilogue; heads,
// kv_heads, head_dim, q_len, kv_len, ...) and a grid dense enough to interpolate in all of
// them cannot be measured in minutes, while time is well explained by flops and bytes.
// Two forms with non-negative coefficients are fitted by least squares on relative error,
//   roofline: t = overhead + max(flops * s_per_flop, bytes * s_per_byte)
//   linear:   t = overhead + flops * s_per_flop + bytes * s_per_byte
// and the one with the lower 5-fold cross-validated mean relative error is kept; both
// errors are stored with the fit. Non-negative coefficients make predictions monotone in
// flops and bytes.
//
// All look-ups are pure functions of the op: the cost model reads the profile when it is
// made and times nothing.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "models/graph.h"
#include "scenarios/config/config.h"
#include "sim/hardware/hardware.h"

namespace vlasim {

// The shape fields that decide an op's time, as text: kind, fn, dtype and, by kind,
//   gemm:        m, n, k, batch, bias, act, gate_up, residual, gate (and a rope epilogue's
//                columns/head_dim when it has one)
//   attention:   batch, heads, kv_heads, head_dim, q_len, kv_len, kv_cached, window, causal
//   norm:        rows, width (and scale_folded when rmsnorm_fold took its scale)
//   elementwise: rows, width (rope also batch, heads, kv_heads, head_dim)
//   embedding:   rows, width, vocab
// e.g. "gemm/linear/bf16/m=16,n=1024,k=256,batch=1,bias=0,act=none,gate_up=0,residual=0,gate=0".
// Equal signatures mean the executors run the same computation on the same sizes.
std::string op_signature(const Op& op);

// Work features of an op computed from its shape alone (the builder's own flops/bytes are
// not used, so measured and predicted ops are described alike): flops (gemm 2 batch m n k,
// attention 4 batch heads q_len kv_eff head_dim; rows*width for row-wise ops) and bytes the
// oneDNN executor reads and writes (inputs, weights, outputs; attention also its score
// matrix). Both are >= 0.
struct OpWork {
  double flops = 0;
  double bytes = 0;
  bool operator==(const OpWork&) const = default;
};
OpWork op_work(const Op& op);

struct Measurement {
  OpKind kind = OpKind::Gemm;
  OpFn fn = OpFn::None;
  OpWork work;
  double median_s = 0;  // median over the timed runs, > 0
  double spread = 0;    // (75th - 25th percentile) / median over the timed runs
  int reps = 0;         // timed runs
  // "grid", "graph" (an op of a graph calibration was given, timed alone) or "in-context"
  // (timed inside its scenario's segments by calibrate_in_context, executors/calibration), or
  // where `vlasim import` read it: "vidur:<file>:<line>", "apxinf:<file>:<line> (<cache>)"
  // (sim/measured/gpu_import.h), or "trace:<file>:<op key>" from a PyTorch profiler trace
  // (sim/measured/torch_trace.h)
  std::string source;
  bool operator==(const Measurement&) const = default;
};

enum class FitForm { Roofline, Linear };
const char* to_string(FitForm f);

// t = overhead + max(flops * s_per_flop, bytes * s_per_byte)   (Roofline)
// t = overhead + flops * s_per_flop + bytes * s_per_byte       (Linear)
struct FitModel {
  FitForm form = FitForm::Roofline;
  double overhead_s = 0, s_per_flop = 0, s_per_byte = 0;  // all >= 0
  int points = 0;              // measurements fitted
  double cv_roofline = -1;     // 5-fold CV mean |pred / t - 1| of each form; -1: < 2 points
  double cv_linear = -1;
  double fit_error = 0;        // mean |pred / t - 1| of the kept form over all points
  // Predicted seconds for `w`, > 0.
  double predict(const OpWork& w) const;
  bool operator==(const FitModel&) const = default;
};

// Fits both forms to `points` (non-empty) and keeps the better one in cross-validation
// (Roofline on ties). Deterministic for a given order of points.
FitModel fit_times(const std::vector<const Measurement*>& points);

struct ProfileSection {
  // CPU: the core group's cores; GPU: the stream's SMs (profile_width()).
  int threads = 1;
  DType dtype = DType::BF16;
  std::string executor_device;                 // Executor::device() of the runs
  std::map<std::string, Measurement> table;    // by op_signature
  std::map<std::string, FitModel> fits;        // "kind/fn" and "kind/*"
  std::map<std::string, std::string> skipped;  // signature -> why it was not measured
  // Seconds of dispatch the real runtime spends per op outside the op timers (hand-offs of
  // segments between the request flow, unit threads and the executor's worker), measured in
  // context; added to every op's time. 0 when not measured
  // (written to JSON only when > 0).
  double op_overhead_s = 0;
  // The part of op_overhead_s the runtime spends outside segment intervals (a request's
  // latency beyond the sum of its segments' run times, spread over its ops likewise): in the
  // simulator it belongs to no stage. 0 <= op_outside_s <= op_overhead_s; 0 when not measured.
  double op_outside_s = 0;
  // Dispatch time that grows with the op: seconds per second of the op's own time, added to
  // every op's time beside op_overhead_s (the runtime's time per op then a + share x t). In
  // [0, 1]; 0 when not measured or not told apart from op_overhead_s (written only when > 0).
  double op_overhead_share = 0;
  // Run-to-run variation of a segment's time: quantiles, at probabilities 0, 1/(n-1), ...,
  // 1, of (a segment run's time / the median time of that segment) over the segments run
  // in context one request at a time; non-decreasing, > 0. Empty when not measured
  // (written to JSON only when present). The profiled cost model hands it to the simulator,
  // which draws each segment run's time factor from it.
  std::vector<double> service_quantiles;
  bool operator==(const ProfileSection&) const = default;

  // Recomputes `fits` from `table`: a fit per kind/fn present and one pooled per kind.
  void refit();
  // The measured median of `op`'s signature, or nullptr.
  const Measurement* exact(const Op& op) const;
  // The fit for op's kind/fn when it has >= 3 points (as many as a fit has parameters),
  // else its kind's pooled fit, else nullptr.
  const FitModel* fit_for(const Op& op) const;
};

// Host memcpy between core groups of one machine, measured at a few sizes (the executor's
// transfer copy on one core). Copies that fit in cache run several times faster than
// streaming ones, which one latency + per-byte line cannot follow, so the measured points
// are interpolated.
struct MemcpyFit {
  std::string link;      // catalog link the figure stands for ("shared-memory"); "" = none
  double latency_s = 0;  // median time of the smallest copy measured
  double bytes_per_s = 0;  // streaming rate between the two largest sizes measured
  std::vector<std::pair<double, double>> points;  // (bytes, median seconds), bytes increasing
  bool operator==(const MemcpyFit&) const = default;
  // Seconds to copy `bytes`: latency_s up to the smallest size measured, linear between
  // measured sizes, and + (bytes - largest) / bytes_per_s beyond the largest; with no
  // points, latency_s + bytes / bytes_per_s. Non-decreasing in bytes.
  double seconds(double bytes) const;
};

// One core group's memory bandwidth on the measured host: a STREAM-like triad
// (a[i] = b[i] + s c[i] over arrays well beyond the last-level cache) on the group's cores.
struct HostGroupBandwidth {
  int cores = 1;         // the group: the first `cores` allowed CPUs, one triad thread on each
  double alone_bw = 0;   // bytes/s the group moves alone, > 0
  double loaded_bw = 0;  // bytes/s it moves while every other allowed CPU runs the triad too,
                         // > 0; equal to alone_bw when the group holds every CPU
  bool operator==(const HostGroupBandwidth&) const = default;
};

// One CPU segment's measured slowdown while the other core groups of its node run their own
// segments (calibrate's in-context co-run pass, executors/calibration/calibrate.h): its time
// with every other core of the node busy over its alone time, extrapolated from runs the other
// cores overlapped for most of their time. Keyed by corun_key (sim/engine/engine.h): a hash of the
// segment's ops, its cores and the segments the other groups run in its scenario, so another
// split, model, dtype or co-runner has another key and never picks this figure up.
struct CorunSlowdown {
  std::string key;      // corun_key, non-empty
  std::string segment;  // for people: "<scenario> <model> <label> (<unit>)"
  int runs = 0;         // overlapped runs it rests on, >= 1
  double overlap = 0;   // median share of their time the other cores were busy, in (0, 1]
  // At full overlap (the measured ratio scaled to overlap 1), > 0 (noise can put it below 1;
  // the engine uses max(1, it)). The whole slowdown: the engine adds no bandwidth sharing to it.
  double slowdown = 1;
  bool operator==(const CorunSlowdown&) const = default;
};

// The machine `vlasim calibrate` ran on, measured (executors/calibration/host_measure.h):
// what the simulator uses instead of the catalog CPU's bandwidth and cache figures wherever
// the profile is used, as it uses the profile's op times (apply_host_entry; the choice is made
// where the command loads its scenario, cli/common.cc). Written to JSON (key "host") only when measured.
// How steady the machine's own speed is (calibrate --steadiness): one core times, interleaved,
// a triad pass over arrays beyond its last-level cache (memory speed) and the sentinel kernel
// (core speed, in cache) for `seconds`, and takes each one's median per window of window_s.
// A spread is the largest window median over the smallest, - 1: how far the same work moved
// with nothing changed but the machine, so a validation target below the memory spread cannot
// be judged by a calibration and a measurement seconds apart. windows == 0: not measured
// (not written to JSON).
struct HostSteadiness {
  double seconds = 0;        // > 0 when measured
  double window_s = 0;       // > 0, at most seconds
  int windows = 0;           // >= 2 when measured
  double memory_spread = 0;  // >= 0
  double core_spread = 0;    // >= 0
  bool operator==(const HostSteadiness&) const = default;
  bool measured() const { return windows > 0; }
};

struct HostEntry {
  std::vector<HostGroupBandwidth> groups;  // cores increasing, each size once
  double node_bw = 0;    // bytes/s every allowed CPU moves together (a triad thread on each), > 0
  double llc_bytes = 0;  // last-level cache one CPU sees (sysfs), >= 0; 0 unknown
  int llc_shared_cpus = 0;  // allowed CPUs sharing that cache, >= 0; 0 unknown
  double freq_hz = 0;    // mean clock read while every CPU ran the triad (cpufreq or
                         // /proc/cpuinfo), >= 0; 0 when it cannot be read
  // One core's triad bandwidth by working-set size (the three arrays' bytes): (bytes, bytes/s),
  // sizes doubling from twice its L2 up to the triad's own working set or twice the LLC
  // sysfs reports (at most 1 GiB); where the
  // bandwidth falls to memory's says how much cache the core really gets. Empty when not
  // measured (written to JSON only when present).
  std::vector<std::pair<double, double>> curve;
  // Measured co-run slowdowns of segments (calibrate --in-context), keys increasing, each
  // once; empty when none was measured (written to JSON only when present).
  std::vector<CorunSlowdown> corun;
  HostSteadiness steadiness;  // written to JSON only when measured
  bool operator==(const HostEntry&) const = default;
  bool empty() const { return groups.empty(); }
  // The measured group of `cores` cores, or nullptr.
  const HostGroupBandwidth* group(int cores) const;
  // Per core: alone_bw / cores of the smallest group, and node_bw / (cores of the node) when
  // every core streams (`cpus`: the allowed CPUs the triad ran on, = made_with logical_cpus).
  double core_bw() const;
  double core_bw_loaded(int cpus) const;
  // The measured co-run slowdown under `key`, or nullptr.
  const CorunSlowdown* corun_for(const std::string& key) const;
  // Adds or replaces (same key) the entries of `more`, keeping keys increasing.
  void merge_corun(const std::vector<CorunSlowdown>& more);
};

// The largest last-level cache per CPU sharing it that a real x86 server CPU has, with
// margin: AMD's 3D V-Cache parts have 96 MiB per 8-core CCD, 12 MiB per core, and the few-core
// frequency parts up to 48 MiB per core (EPYC 9184X: 768 MiB over 16 cores); Intel's largest L3
// (Xeon 6980P, 504 MB) is shared by 128 cores, under 4 MiB each. A guest whose sysfs shows its
// physical host's whole L3 shared by its own few vCPUs (480 MiB over 2 here) is far past it.
inline constexpr double kMaxLlcPerCpu = 64.0 * 1024 * 1024;

// The cache one core gets by the host entry's bandwidth curve: the largest working set whose
// bandwidth is at least 1.3x memory's (the curve's last point, when its last two points agree
// within 15%: a plateau), when the curve falls to that plateau within the sizes measured; 0
// when it cannot say (no curve, fewer than 3 points, no plateau, or no fall: the whole range
// fits in cache, or none of it does).
double curve_llc_bytes(const HostEntry& h);

// "" when the host entry's last-level cache is plausible (unknown counts as plausible: there
// is nothing to use); otherwise why it is not: more than kMaxLlcPerCpu per CPU sharing it,
// which a VM reports when it shows the physical host's cache, not the share the guest gets;
// or the bandwidth curve falls to memory's at a working set under half of it
// (curve_llc_bytes).
std::string llc_problem(const HostEntry& h);

// The drift sentinel: a short fixed kernel (executors/calibration/sentinel.h) timed before,
// during (every few seconds) and after a calibration or a measurement, so that a change in
// the machine's own speed is seen beside the errors it causes.
struct SentinelRecord {
  std::vector<std::pair<double, double>> samples;  // (seconds since the start, kernel seconds > 0)
  bool operator==(const SentinelRecord&) const = default;
  bool empty() const { return samples.empty(); }
  // Kernel time at the end over kernel time at the start, - 1 (> 0: the machine got slower);
  // 0 with fewer than 2 samples.
  double drift() const;
  // The largest |sample / first sample - 1| over all samples; 0 when empty.
  double max_deviation() const;
  // Median kernel seconds over all samples; 0 when empty.
  double median_s() const;
  // Mean kernel seconds of the first and the last sample, the two a watch takes while the work
  // it watches is not running (before it starts, after it ends); 0 when empty. The samples in
  // between share the CPUs with that work, which on a machine whose every core it uses makes
  // them time how busy the work keeps the cores, not the machine's own speed.
  double idle_s() const;
  // Over the watch, the share of the machine's CPU time (every CPU, wall time x CPUs) that
  // other processes used (others_cpu) and that the hypervisor took (steal), from /proc/stat
  // and this process's own CPU time; -1 where not read (no /proc, or a record read back from a
  // profile, which does not store them). A share beyond kLoadTarget means the measured work
  // shared its CPUs with something vlasim did not run.
  double others_cpu = -1, steal = -1;
  // Whether others_cpu or steal is beyond kLoadTarget.
  bool disturbed() const;
};

// The machine's speed drift targets: a run whose sentinel moved by more than this is marked.
inline constexpr double kDriftTarget = 0.03;
// Other processes' (or the hypervisor's) share of the machine's CPU time beyond which a watched
// run is marked: on a 2-CPU machine, a tenth of one CPU.
inline constexpr double kLoadTarget = 0.05;

// Replaces the figures of CPU spec `spec` that the cost models and the engine read with the
// measured host's: core_bw (one core alone), core_bw_loaded (one core with every core
// streaming), mem_bw (node_bw over the spec's NUMA nodes), the LLC (l2_bytes) when measured
// and plausible (llc_problem; when it is not, the bandwidth curve's estimate where it has one,
// else the catalog's stays), and the measured co-run slowdowns
// (corun_slowdown, by key). `cpus` is the number of CPUs the host entry measured (made_with
// logical_cpus).
// REQUIRES: spec is a CPU and !h.empty().
void apply_host_entry(DeviceSpec& spec, const HostEntry& h, int cpus);

// A few lines describing host entry `h` measured on `cpus` CPUs (for `vlasim list host` and
// calibrate); says "not measured" when empty.
std::string host_entry_text(const HostEntry& h, int cpus);

struct DeviceProfile {
  static constexpr int kVersion = 1;
  std::string catalog_device;   // catalog entry this profile stands for, e.g. "epyc-2vcpu"
  std::string machine;          // CPU model name (/proc/cpuinfo)
  // The CPU ISA oneDNN ran here ("avx2", "avx512_core_bf16", ...; executors/host.h); ""
  // in profiles made before it was recorded (written to JSON only when known).
  std::string isa;
  int logical_cpus = 0;
  // 1-minute load average when calibration started (/proc/loadavg): other work on the
  // machine inflates times, multi-threaded ones most.
  double load_average = 0;
  std::string executor;         // executor registry name, e.g. "onednn"
  std::map<std::string, std::string> libraries;  // e.g. {"onednn": "2.6.3"}
  std::string date;             // UTC, ISO 8601
  std::string grid;             // "none", "quick" or "full"
  // GPU: ops were timed as CUDA Graph replays (a device with graph_capture); written to JSON
  // only when true.
  bool graph = false;
  int repetitions = 0;          // timed runs asked for per op (fewer for slow ops, >= 3)
  int warmup = 0;
  std::vector<int> threads;     // thread counts profiled, in calibration order
  std::vector<DType> dtypes;
  MemcpyFit memcpy;
  // The machine measured (CPU profiles from calibrate); empty in GPU profiles and in
  // profiles made before it was measured.
  HostEntry host;
  // The drift sentinel over the calibration that made this profile; empty when not taken.
  SentinelRecord sentinel;
  std::vector<ProfileSection> sections;
  bool operator==(const DeviceProfile&) const = default;

  // The section for (threads, dtype), or nullptr.
  const ProfileSection* section(int threads, DType dtype) const;
};

// The profile as JSON text: keys sorted, numbers in shortest round-trip form, so equal
// profiles give byte-identical text and save(load(f)) reproduces f.
std::string profile_to_json(const DeviceProfile& p);
// Writes profile_to_json(p) to `path` (write_output_file: whole or not at all). Throws
// std::runtime_error if it cannot be written.
void save_profile(const DeviceProfile& p, const std::string& path);
// Reads a profile (read_input_file: a regular file of at most 16 MiB). Throws ConfigError
// naming `path` (line 0) and the key path of the first missing, mistyped or impossible value
// (a host entry's figures outside physical bounds, see parse_host_entry), or the format version
// when it differs.
DeviceProfile load_profile(const std::string& path);
// Throws ConfigError naming `name` and the key when a JSON object of `text` holds a key twice
// (nlohmann keeps the last silently), or naming `name` when `text` is not JSON.
void check_json_unique_keys(const std::string& text, const std::string& name);
// As load_profile, from text; `name` stands in for the file name in errors.
DeviceProfile parse_profile(const std::string& text, const std::string& name);


// "" when profile `p` (read from `path`) was made on a CPU on which oneDNN ran `host_isa`;
// otherwise why it cannot predict this machine (made on another ISA, or recording none),
// naming both ISAs and how to calibrate here.
std::string profile_isa_problem(const DeviceProfile& p, const std::string& path, const std::string& host_isa);


}  // namespace vlasim
