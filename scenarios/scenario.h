// Scenarios: what to run (models, placement, workload, policies) on what hardware, read from
// YAML and validated up front so that every later stage can trust it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/builder.h"
#include "scenarios/config/config.h"
#include "scenarios/robot_decl.h"
#include "scenarios/stream.h"
#include "sim/hardware/hardware.h"

namespace vlasim {

// An execution unit of a device: a GPU stream (optionally limited to a share of the SMs) or
// a CPU core group (disjoint cores on one NUMA node).
struct UnitDecl {
  std::string name;
  double sm_fraction = 1.0;  // GPU: share of SMs this stream may use (green context / mask)
  int cores = 0;             // CPU: cores in the group
  int first_core = 0;        // CPU: first core index (groups are contiguous and disjoint)
  int node = 0;              // CPU: NUMA node
  // Most items of one model and stage the unit runs as one batch (`batch:`, else the batching
  // policy's size); 1: no batching.
  int batch = 1;
  bool batch_given = false;  // `batch:` was given on the unit
  ConfigNode batch_where;    // the unit's entry (or its `batch:`), for errors
  // GPU: the process whose CUDA context the stream belongs to (`process:`; "" when not given:
  // the device's one process, or a process of its own for a stream a `handoff: host` model
  // runs a stage on; sim/engine/plan.h UnitInfo::process). Processes time-slice a GPU unless it
  // declares `mps: true` (sim/costs/gpu_sharing.h).
  std::string process;
  // GPU: the stream's priority (`priority:`; lower runs first, as CUDA's; 0 by default).
  int priority = 0;
};

// Robion's locksteps on one GPU (SYSTEMS.md system 2): its two streams start their batches
// together, each lockstep runs at most one batch per stream, and the next starts when both
// have ended. The first stream's SM count for a lockstep comes from a lookup table over the
// two batches (models and batch sizes); the second stream gets the rest.
struct LockstepDecl {
  int first = -1, second = -1;  // unit indices within the device: the SM-limited stream first
  // "auto": the table is made from the cost model when the scenario is planned
  // (sim/engine/lockstep.h); else the path of a table file (`vlasim profile-lut` writes one), as
  // written in the scenario.
  std::string lut = "auto";
  // Keep the previous lockstep's split when the table's would make the batch with the
  // tighter deadline miss it and the previous one would not.
  bool guard = true;
  ConfigNode where, lut_where;
  bool on() const { return first >= 0; }
};

struct DeviceInstance {
  std::string name;
  DeviceSpec spec;
  std::string isa;            // CPU instruction-set stack in use
  bool graph_capture = false; // GPU: kernels replayed from a CUDA Graph
  double reserved_bytes = 0;  // memory taken by co-running software (not ours)
  std::vector<UnitDecl> units;
  LockstepDecl lockstep;      // GPU: off unless `lockstep:` is given
  // GPU: how running segments share it (`gpu_sharing:`, a name from gpu_sharing_models(),
  // sim/costs/gpu_sharing.h; "blocks" by default) and its parameters; checked when planned.
  std::string sharing = "blocks";
  Params sharing_params;
  ConfigNode sharing_where;
  bool mps = false;           // GPU: `mps: true`: processes share SMs (no time slicing)
  int line = 0;
};

// The SMs a GPU stream runs on: its sm_fraction of the GPU's, rounded, at least 1.
int stream_sms(const DeviceInstance& dev, const UnitDecl& unit);

struct LinkInstance {
  std::string name;
  DeviceSpec spec;
  std::string a, b;  // the two devices it joins; a -> b is "h2d" when a is a CPU
  bool pinned = true;
  int line = 0;
};

// Which device unit runs a stage, or a range of its blocks.
struct PlacementRule {
  Stage stage = Stage::Prefix;
  int first_block = -1, last_block = -1;  // inclusive; -1: the whole stage
  std::string device;
  std::string unit;  // "" = the device's first unit
  ConfigNode where;
};

class PartitionPolicy;

struct ModelInstance {
  std::string name;
  ModelCard card;
  RunShape shape;
  // `dtype: auto` in the file: the dtype is this machine's (resolve_auto_dtypes); until it is
  // resolved dtype_pending is true and shape.dtype holds the card's default.
  bool dtype_auto = false, dtype_pending = false;
  ConfigNode dtype_where;  // the dtype key, or the model when it has none
  std::vector<PlacementRule> placement;  // later rules override earlier ones
  // When set, the placement comes from this policy once the graph's blocks are known
  // (see placement_rules()); partition_where locates it in the file.
  std::shared_ptr<const PartitionPolicy> partition;
  ConfigNode partition_where;
  // Dynamic zone (needs a partition): per request, a cut within +-zone_width of the
  // partition's is chosen by the zone policy named here (empty name: no zone).
  std::string zone_name;
  Params zone_params;
  ConfigNode zone_where;
  int zone_width = 0;
  // V-AEFusion (SYSTEMS.md system 3): the action expert's first v_aefusion denoising steps
  // run on the previous request's VLM features, beside this request's VLM (its action stage
  // on a stream or core group of its own on the same device); 0: off.
  int v_aefusion = 0;
  ConfigNode v_aefusion_where;
  // `handoff: host`: the model's stages run as separate processes, so what one stage hands
  // the next on another stream of the same GPU goes to host memory and back over the GPU's
  // link to a CPU (an inter-process hand-off); `device` (default): it stays on the GPU.
  bool handoff_host = false;
  ConfigNode handoff_where;
  ConfigNode where;
};

// The name of model `model`'s instance on device `device` in a fleet (`vlasim place`): the
// instance a controller routes a group's robots to.
inline std::string instance_name(const std::string& model, const std::string& device) { return model + "-" + device; }

// `controller: {problem: FILE, interval_s: 1, strategy: ilp}`: Robion's traffic controller
// run live (scheduler/fleet/placement.h LiveController): it routes the requests of workloads that
// name a group, and every interval re-solves the placement for the demand it observed. The
// problem gives the GPUs and capacities; its robots and changes are not told to it.
struct ControllerDecl {
  std::string problem;  // the placement problem's path, resolved beside the scenario; "" = none
  double interval_s = 1;
  std::string strategy = "ilp";
  ConfigNode where;
  bool on() const { return !problem.empty(); }
};

// Load from software outside the scenario (another stack sharing the device): it takes
// `compute` of the compute resource and `memory` of the memory bandwidth of a device (or of
// one unit's resources) between start_s and end_s.
struct BackgroundLoad {
  std::string device, unit;  // unit "" = the whole device
  double compute = 0, memory = 0;
  double start_s = 0, end_s = 1e300;
  ConfigNode where;
};

struct PolicyDecl {
  std::string name;
  Params params;
  ConfigNode where;
};

// The longest simulated time a scenario may span (arrivals plus drain_s), in seconds (about
// three years). Times are kept as doubles in seconds, so up to it an instant is resolved to
// 15 ns or better (to a picosecond up to ~9000 s).
constexpr double kMaxSimulatedSeconds = 1e8;
// The tick of the simulator's clock (SystemC's time resolution) for a run spanning `span`
// seconds: a picosecond while SystemC's signed 64-bit count of ticks holds the span (up to
// 9e6 s), a nanosecond beyond (up to 9e9 s, past kMaxSimulatedSeconds); 0 if neither does.
// Events less than a tick apart run at the same tick.
constexpr double clock_tick_s(double span) {
  return span * 1e12 < 9e18 ? 1e-12 : span * 1e9 < 9e18 ? 1e-9 : 0;
}
// The most workload streams a scenario may have (entries times their count).
constexpr long long kMaxStreams = 100000;

struct Scenario {
  std::string name, description, file;
  uint64_t seed = 1;
  std::vector<DeviceInstance> devices;
  std::vector<LinkInstance> links;
  std::vector<ModelInstance> models;
  std::vector<StreamDecl> streams;
  std::vector<BackgroundLoad> background;
  ControllerDecl controller;
  // `robot:` (scenarios/robot_decl.h): the robot its control streams drive, if any.
  RobotDecl robot;
  PolicyDecl queue, pipeline, cost_model, batching;
  // The software stack around GPU kernels (sim/costs/stack_model.h: eager, graph, compiled;
  // auto: graph on GPUs with graph_capture, eager on the others); "none" (the default): the cost
  // model's own per-op launch and host time.
  PolicyDecl stack;
  double drain_s = 60;  // simulated time allowed after the last arrival for queues to empty
  // `queue_limit: N`: the most requests that may wait (arrived, not yet started) at once over
  // the whole scenario; an arrival that finds N waiting is dropped (RequestRecord::dropped)
  // and counted in the report. 0: no bound (an overload keeps every request waiting).
  long long queue_limit = 0;
  ConfigNode queue_limit_where;

  // Index of the device called `name`, or -1.
  int device_index(const std::string& name) const;
  // Link joining devices a and b (either order), or nullptr.
  const LinkInstance* link_between(const std::string& a, const std::string& b) const;
  // Time of the last arrival of any stream.
  double arrivals_end() const;
};

// Splits "dev" or "dev.unit" and checks both exist in `s`. Throws ConfigError at `where`
// listing the valid names otherwise.
void resolve_device_ref(const Scenario& s, const std::string& ref, const ConfigNode& where,
                        std::string* device, std::string* unit);

// The placement rules of model `m` for a graph whose partitioned stage has `blocks` blocks:
// the partition policy's rules when it has one, else the scenario's placement. Throws
// ConfigError at the partition when it does not fit the model.
// A cut >= 0 overrides the partition's own (dynamic-zone candidates).
std::vector<PlacementRule> placement_rules(const Scenario& s, int m, const OpGraph& g, int cut = -1);

// Whether any of model `mi`'s placement rules or partition devices is a CPU device.
bool model_uses_cpu(const Scenario& s, const ModelInstance& mi);

// Gives every model with `dtype: auto` its dtype: `cpu_native` (the dtype this machine's CPU
// runs natively; executors/host.h native_cpu_dtype()) when any part of it is placed on a CPU
// device, else bf16 (what GPUs run natively). Planning a scenario with an unresolved auto
// dtype is refused (sim/engine/plan.h).
void resolve_auto_dtypes(Scenario& s, DType cpu_native);

// Replaces the scenario's cost model with the "profiled" one reading `profile_path`
// (made absolute here, so it does not depend on the scenario's folder).
void use_profiled_cost_model(Scenario& s, const std::string& profile_path);

// Reads and validates a scenario. Catalog and cards come from the given directories.
// Throws ConfigError (file, line, key; valid names when a name is unknown) on any problem.
Scenario load_scenario(const std::string& path, const std::string& catalog_dir,
                       const std::string& cards_dir);
// Parses an already-loaded document (e.g. one a sweep has edited in place).
Scenario load_scenario_node(const ConfigNode& root, const std::string& catalog_dir,
                            const std::string& cards_dir);
Scenario load_scenario_text(const std::string& text, const std::string& name,
                            const std::string& catalog_dir, const std::string& cards_dir);

}  // namespace vlasim
