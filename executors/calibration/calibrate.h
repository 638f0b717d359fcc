// Calibration: measures operator times on a real executor and writes them as a device
// profile (sim/measured/profile.h) for the "profiled" cost model. Each op runs alone in a minimal
// graph on a fresh executor bound to the first `threads` allowed CPUs; its time is the
// median of the executor's per-op timings over repeated runs after warm-up.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "executors/executor.h"
#include "models/graph.h"
#include "scenarios/scenario.h"
#include "sim/engine/plan.h"
#include "sim/measured/profile.h"

namespace vlasim {

// How many shapes beyond the given graphs' own ops are measured.
//   None:  only the graphs' ops.
//   Quick: ~60 small shapes per (threads, dtype); seconds (tests).
//   Full:  ~390 shapes per (threads, dtype) (GEMM m 1..4096, n, k 64..8192 up to 8.6 GFLOP;
//          attention, norms, elementwise, embedding); minutes on a 2-core machine.
enum class GridLevel { None, Quick, Full };
const char* to_string(GridLevel g);
// Parses "none", "quick", "full"; false if unknown.
bool parse_grid_level(const std::string& s, GridLevel* out);

struct CalibrateOptions {
  std::string executor = "onednn";           // executor registry name
  // Catalog entry the profile stands for: a CPU (an executor on this machine's cores), or a
  // GPU (the cuda executor on CUDA device 0).
  std::string catalog_device = "epyc-2vcpu";
  std::string catalog_dir = default_catalog_dir();
  std::vector<int> threads = {1};             // CPU: core groups {cpu0}, {cpu0, cpu1}, ...
  std::vector<int> sms;                       // GPU: SM limits (green contexts); empty: the whole GPU
  bool graph = false;                         // GPU: time each op as a CUDA Graph replay
  std::vector<DType> dtypes = {native_cpu_dtype()};  // executors/host.h
  GridLevel grid = GridLevel::Quick;
  // Every distinct op (by op_signature, at each profiled dtype) of these graphs is measured.
  std::vector<OpGraph> graphs;
  int warmup = 2;               // untimed runs per op (1 when the first run exceeds 0.25 s)
  int repetitions = 5;          // timed runs per op; the median is kept
  int min_repetitions = 3;      // slow ops run fewer timed runs, never fewer than this
  double max_seconds_per_op = 0.5;  // timed runs are cut to about this much time per op
  // Catalog link the memcpy figure stands for; "" skips the memcpy measurement.
  std::string memcpy_link = "shared-memory";
  // Called after each measurement with (done, total, label); may be empty.
  std::function<void(int, int, const std::string&)> progress;
  // Asked before each measurement (may be empty): a reason ("" to go on) ends the calibration
  // early, calibrate() then returning the sections measured so far (the one it was in fitted
  // to what it had; none not begun) and no memcpy figure unless every size was timed.
  std::function<std::string()> should_stop;
};

// The grid ops of `level` at `dtype`, in a fixed order, each with a unique name. Shapes are
// capped so that each op stays under about 8.6 GFLOP and 64 MiB of weights.
std::vector<Op> calibration_grid(GridLevel level, DType dtype);

// Adds the scenario's model graphs to `o.graphs`, and its settings for the devices whose
// catalog entry is o.catalog_device: CPU core-group sizes to `o.threads`, GPU streams' SMs to
// `o.sms` (sim/measured/profile.h profile_width), and the models' dtypes to `o.dtypes` (each once,
// keeping existing entries first). Throws ConfigError at the
// scenario's devices when no device uses o.catalog_device, and at a model's dtype when it is an
// unresolved auto or a dtype this CPU cannot run (naming the host's ISA).
void add_scenario(CalibrateOptions& o, const Scenario& s);

// The executor `name` from executor_registry() with dtype `dtype` on the first `threads`
// allowed CPUs, or, for an executor with an SM limit (cuda), on `threads` SMs of GPU 0 with
// CUDA Graph replay when `graph`. Throws ConfigError when the executor is unknown or threads
// is out of range, and what the executor throws when it cannot start.
std::unique_ptr<Executor> make_calibration_executor(const std::string& name, int threads, DType dtype,
                                                    bool graph = false);

// A graph that runs `op` alone: the op (renamed, weight_id unique), preceded by a stand-in
// K|V source when it reads a cache from kv_source. Sets *id to the op's id in the graph.
OpGraph single_op_graph(const Op& op, int* id);

struct OpTiming {
  double median_s = 0;
  double spread = 0;  // (75th - 25th percentile) / median
  int reps = 0;
};
// Prepares op `id` of `g` alone on `ex`, runs it `warmup` times untimed (1 when the first
// run exceeds 0.25 s) and then between min_reps and reps times (fewer when a run is long,
// to stay near max_seconds), and returns the median of the executor's time for the op.
// Throws what prepare() throws (unsupported op, memory short).
OpTiming time_op(Executor& ex, const OpGraph& g, int id, int warmup, int reps, int min_reps,
                 double max_seconds);

// How much work calibrate(o) has before it starts: the measurements it makes (ops per section
// times sections, plus the memcpy sizes) and a rough ceiling on their time. Timed runs are cut
// near o.max_seconds_per_op per op whatever o.repetitions asks, so the ceiling is
// measurements x (max_seconds_per_op + 0.5 s of warm-up); ops faster than that take far less.
// Catalog errors are left to calibrate(): an unknown device counts as a CPU.
struct CalibrationEstimate {
  long long measurements = 0;
  double max_seconds = 0;
};
CalibrationEstimate estimate_calibration(const CalibrateOptions& o);

// Measures the grid and the graphs' ops for every (threads, dtype) — for a GPU catalog
// device every (SMs, dtype), with the cuda executor — fits the predictors and (CPU) the
// memcpy figure, and returns the profile. Ops the executor refuses (unsupported, memory
// short) are recorded under `skipped` with the reason. Deterministic order of work; the
// figures are the machine's. Throws ConfigError for an unknown executor or catalog device,
// a catalog device that is neither a CPU nor a GPU, a GPU with an executor that has no SM
// limit, a thread count outside the allowed CPUs or an SM count outside the GPU's, and
// std::invalid_argument for a dtype this CPU cannot run. A CPU profile records the host's
// ISA; a GPU profile the executor's device and whether ops were graph replays.
DeviceProfile calibrate(const CalibrateOptions& o);

// In-context calibration. The grid and graph measurements above time every op alone, in a
// one-op graph run over and over: its weights and inputs stay in cache and nothing runs
// before it. In a real run ops follow one another (the previous op's output is this op's
// input, other weights have evicted this op's), and each segment is handed from the request
// flow to a unit thread and on to the executor's pinned worker and back, which no op timer
// sees. In-context calibration therefore runs each scenario through the real runtime
// (execute(), executors/runtime/runtime.h: one executor per unit and dtype on the unit's CPUs, the
// scenario's seed, every segment of every model prepared on it, the same thread hand-offs)
// with its workload replaced by one request at a time (serial pipeline, no background load;
// the models in the mix and order of the scenario's arrivals, idle time between requests: at
// least half the alone latency, and near the scenario's gaps between arrivals, since what ran
// before a request and the idle time decide how cold its first ops start;
// calib::timed_requests), and records
//   - per op signature, the mean over its occurrences of the runtime's per-op medians (so a
//     request's ops sum to what they took even where occurrences differ), into the (unit
//     cores, dtype) section's table with source "in-context", replacing a grid or graph
//     figure of the same signature; pooled over all scenarios given;
//   - per section, the dispatch overhead: median alone latency minus the sum of its ops'
//     figures above (thread hand-offs, the arrival's wake-up, the skew between a median of
//     sums and a sum of medians), per model and scenario, split among a request's sections
//     by op count. Its part spent outside the segments' intervals (the median alone request's
//     latency minus its segments' run times: the arrival's wake-up and the hand-offs between
//     segments), over the op runs it covers, is ProfileSection::op_outside_s, which the
//     simulator keeps out of every stage (Segment::outside), as a real run's stage figures
//     leave it out. The rest is fitted as a time per op plus a share of the op's own time
//     (calib::fit_dispatch: both terms only where the section's models differ in op size,
//     else the time per op alone), as ProfileSection::op_overhead_s (outside part included)
//     and op_overhead_share, which the profiled cost model adds to every op;
//   - per CPU segment that runs beside other core groups, its co-run slowdown, into the
//     profile's host entry (HostEntry::corun, keyed by corun_key, sim/engine/engine.h), only when
//     prof.host is measured: a co-run pass prepares every distinct segment of the scenario's
//     plan on an executor of its core group's CPUs and dtype (as the runtime does) and runs
//     rounds, for about corun_seconds: each segment once with nothing else running, then per
//     core group its segments once each while every other core group of the device runs its
//     own segments over and over on threads of its own; each timed run follows an untimed
//     run of the same segment. The median over rounds of each round's loaded run / its alone
//     run (at least 5 rounds; paired, so the machine's speed changes over seconds cancel;
//     clamped to [0.1, 10]), both equally warm and back to back, so the figure is the
//     interference, not a cold start after idle time or the runtime's hand-offs. On a 1-core
//     group the runs are timed in the running thread's CPU time (SegmentTiming::cpu), so time
//     the OS gave other processes (or the hypervisor other guests) on that CPU, which a
//     shared machine's co-tenants take more of while both groups are busy than while one
//     idles, is not counted as interference; on larger groups in wall time. The figure is
//     the slowdown at full overlap: the share of each timed run the other groups were
//     actually running a segment is measured (CorunSlowdown::overlap, the median; the
//     mean over groups weighted by their cores) and the slowdown scaled to it,
//     1 + (ratio - 1) / overlap (a figure whose overlap is under 1/2 is not stored). Entries of
//     the same key pool every scenario's runs; other keys of the entry are kept. A scenario
//     whose segments run on fewer than two core groups of one device gets none.
struct CorunDetail;     // below
struct DispatchDetail;  // below
struct InContextOptions {
  std::string executor = "onednn";
  int warmup = 3;               // untimed cycles of requests first (each model's first this many left out of its latency)
  int repetitions = 15;         // timed cycles of requests per scenario (fewer when slow; calib::timed_requests)
  int min_repetitions = 5;
  double max_seconds = 4;       // timed requests are cut to about this much time per scenario
  double corun_seconds = 3;     // the co-run pass's time per scenario (about); 0 skips it
  std::function<void(int, int, const std::string&)> progress;  // (done, total, scenario name)
  // When given, receives what lies behind each co-run figure stored (CorunDetail), in key order.
  std::vector<CorunDetail>* corun_details = nullptr;
  // When given, receives how each section's dispatch figures were fitted, in section order.
  std::vector<DispatchDetail>* dispatch_details = nullptr;
  // Asked before each scenario; a non-empty answer (the reason) ends the pass there: the
  // scenarios measured so far are folded into the profile as a finished pass's are.
  std::function<std::string()> should_stop;
};

// What the co-run pass saw behind one figure it stored (for calibrate's log: how much of the
// loaded runs' wall time was spent off their CPU, which the figure leaves out).
struct CorunDetail {
  std::string key, segment;
  bool cpu_time = false;        // the figure is a ratio of CPU times (a 1-core group), else of wall times
  double ratio = 0;             // median paired loaded / alone run as timed (cpu_time), before the overlap scaling
  double wall_ratio = 0;        // the same in wall time
  double overlap = 1;           // median share of a timed loaded run the other groups ran
  // Median share of a run's wall time spent off its CPU (wall - cpu), alone and loaded; < 0
  // when the executor does not measure CPU time.
  double off_cpu_alone = -1, off_cpu_loaded = -1;
  double alone_s = 0, loaded_s = 0;  // median alone and loaded run, wall time (seconds)
};

// A section's dispatch fit (calib::fit_dispatch) as stored: op_overhead_s = outside_per_op +
// per_op, op_overhead_share = share.
struct DispatchDetail {
  int threads = 0;
  DType dtype = DType::BF16;
  int samples = 0;            // model runs (of scenarios) it was fitted over
  bool two_terms = false;     // per_op and share told apart (the models differ in op size)
  double per_op = 0, share = 0, outside_per_op = 0;
  double pooled_per_op = 0;   // the one figure per op the same runs give without the share
};

struct InContextSummary {
  std::string scenario;
  int requests = 0;             // timed requests run
  int segments = 0;             // segment runs timed
  double op_seconds = 0;        // mean per request: sum of op timers
  double wall_seconds = 0;      // per request: median sum of segment wall times (unit threads)
  double latency_seconds = 0;   // per request: median latency (summed over models)
};

// Measures each scenario in context as above (about 0.5 s of probing plus up to
// o.max_seconds per scenario, in wall-clock time) and folds the samples of all of them into
// `prof` (signatures shared by several scenarios get the median over all). Every
// unit the scenarios' plans use must be a CPU core group of catalog device
// prof.catalog_device whose CPUs exist here; sections missing for a (cores, dtype) are added
// (with no fits when nothing else is measured for them). Throws ConfigError as execute() does.
std::vector<InContextSummary> calibrate_in_context(DeviceProfile& prof, const std::vector<Scenario>& scenarios,
                                                   const InContextOptions& o = {});

}  // namespace vlasim
