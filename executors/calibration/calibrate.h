// Calibration: measures operator times on a real executor and writes them as a device
// profile (sim/profile.h) for the "profiled" cost model. Each op runs alone in a minimal
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
#include "sim/profile.h"

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
  std::string catalog_device = "epyc-2vcpu";  // catalog CPU entry the profile stands for
  std::string catalog_dir = default_catalog_dir();
  std::vector<int> threads = {1};             // core groups {cpu0}, {cpu0, cpu1}, ...
  std::vector<DType> dtypes = {DType::BF16};
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
};

// The grid ops of `level` at `dtype`, in a fixed order, each with a unique name. Shapes are
// capped so that each op stays under about 8.6 GFLOP and 64 MiB of weights.
std::vector<Op> calibration_grid(GridLevel level, DType dtype);

// Adds the scenario's model graphs to `o.graphs`, and its settings for the CPU devices whose
// catalog entry is o.catalog_device: their core-group sizes to `o.threads` and the models'
// dtypes to `o.dtypes` (each once, keeping existing entries first). Throws ConfigError at the
// scenario's devices when no device uses o.catalog_device.
void add_scenario(CalibrateOptions& o, const Scenario& s);

// The executor `name` from executor_registry() with dtype `dtype` on the first `threads`
// allowed CPUs. Throws ConfigError when the executor is unknown or threads is out of range.
std::unique_ptr<Executor> make_calibration_executor(const std::string& name, int threads, DType dtype);

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

// Measures the grid and the graphs' ops for every (threads, dtype), fits the predictors and
// the memcpy figure, and returns the profile. Ops the executor refuses (unsupported, memory
// short) are recorded under `skipped` with the reason. Deterministic order of work; the
// figures are the machine's. Throws ConfigError for an unknown executor or catalog device,
// a catalog device that is not a CPU, or a thread count outside the allowed CPUs.
DeviceProfile calibrate(const CalibrateOptions& o);

}  // namespace vlasim
