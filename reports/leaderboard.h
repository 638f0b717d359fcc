// The CET leaderboard (issue 14, SYSTEMS.md system 3): one model on each of a list of catalog
// devices, alone (one request at a time, no batching), predicted by the roofline cost model:
//   Time   the request's latency and the control rate it allows (1 / latency), gated by a
//          required rate (feasible or not);
//   Energy per inference, from a linear utilisation power model (below);
//   Cost   per million inferences: the device's price spread over its service life at a
//          utilisation, plus the energy at a price per kWh;
// with the model's tier (small < 1 B parameters <= large) and the device's tier (basic,
// standard, ultra by peak dense FLOPS and memory; thresholds below) and the Pareto front over
// (time, energy, cost) among feasible devices.
//
// Power model: P = P_idle + (P_tdp - P_idle) x u, with u the fraction of the request's time
// the unit's compute or memory is busy at its achievable rate (the cost model's max(compute,
// memory) time per operator over its total, launch gaps idle). This is the linear server
// power model of Fan, Weber and Barroso, "Power provisioning for a warehouse-sized computer"
// (ISCA 2007), with the board's TDP as busy power; P_idle is the catalog's idle_w, else a
// stated fraction of TDP. A device without tdp_w gets no energy figure. A CPU entry's tdp_w,
// idle_w and price_usd are per socket and count once per socket.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "models/builder.h"
#include "reports/roofline.h"

namespace vlasim {

// Tier thresholds (dense matrix peak at the model's dtype, and memory).
inline constexpr double kSmallModelParams = 1e9;         // below: small, else large
inline constexpr double kBasicPeakFlops = 100e12;        // below, or memory below kBasicMemory: basic
inline constexpr double kBasicMemoryBytes = 16e9;
inline constexpr double kUltraPeakFlops = 400e12;        // at or above, with kUltraMemory: ultra
inline constexpr double kUltraMemoryBytes = 64e9;

struct LeaderboardOptions {
  std::vector<std::string> devices;  // catalog entries; empty: every GPU-type entry
  double min_hz = 10;                // the feasibility gate: the control rate needed
  double lifetime_years = 3;         // service life over which the price is spread
  double utilisation = 0.5;          // fraction of that life spent running inferences
  double usd_per_kwh = 0.15;         // electricity price
  double idle_fraction = 0.3;        // P_idle / TDP for entries without idle_w
};

// What runs: a card at a run shape (a card's defaults, or a scenario's model).
struct LeaderboardModel {
  std::string name;  // shown in the report
  std::string card;  // card name, resolved in the cards folder
  RunShape shape;
  std::string cost_model = "roofline";  // registry name (default parameters)
  bool graph_capture = false;           // GPUs replay a captured CUDA Graph (else eager launches)
  // The software stack GPUs are priced under (sim/costs/stack_model.h: eager, graph, compiled;
  // the scenario's policies.stack, default parameters); "none": the cost model's own per-op
  // launch and host time.
  std::string stack = "none";
};

struct LeaderboardRow {
  std::string device, description, hw_tier;
  double peak_flops = 0, memory_bytes = 0;
  bool fits = false;           // false: the model cannot be placed on it (why says why)
  std::string why;
  double latency_s = 0, rate_hz = 0;
  bool feasible = false;       // fits and rate_hz >= min_hz
  double model_memory_bytes = 0;
  double utilisation = 0;      // u of the power model
  double power_w = -1, energy_j = -1;          // < 0: no tdp_w in the catalog
  bool idle_estimated = false;                 // P_idle from idle_fraction, not the catalog
  double price_usd = 0;                        // 0: not in the catalog
  double usd_per_million = -1;                 // < 0: price or power unknown
  bool pareto = false;                         // on the (time, energy, cost) front of feasible rows
  RooflineReport roofline;                     // where its time goes (empty when !fits)
};

struct Leaderboard {
  LeaderboardModel model;
  double params = 0;
  std::string model_tier;
  DType dtype = DType::BF16;
  LeaderboardOptions options;
  std::vector<LeaderboardRow> rows;  // feasible first, then by latency, then by name
};

// The GPU or CPU entry `name` of `catalog` (read from catalog_dir). Throws ConfigError at
// `where` (a command-line option) listing the valid names when there is none (or it is a link).
const DeviceSpec& compute_device(const Catalog& catalog, const std::string& name, const ConfigNode& where,
                                 const std::string& catalog_dir);

// The scenario a leaderboard row predicts: `model` alone on catalog entry `device` (every stage
// there, one stream of one request a second, the roofline cost model); the device instance is
// named like the entry. Throws ConfigError as load_scenario does.
Scenario one_device_scenario(const LeaderboardModel& model, const std::string& device,
                             const std::string& catalog_dir, const std::string& cards_dir);

// Predicts `model` on each device of `o.devices` (every GPU-type catalog entry when empty).
// Throws ConfigError (file "<command line>", key "--devices") for a name the catalog does not
// have (listing the valid names) or a link, (key "--stack") for a stack that is neither "none"
// nor in stack_registry(); a device the model does not fit on gives a row
// with fits false. `progress` (may be empty) is called with the fraction done after each device.
Leaderboard make_leaderboard(const LeaderboardModel& model, const std::string& catalog_dir,
                             const std::string& cards_dir, const LeaderboardOptions& o,
                             const std::function<void(double)>& progress);

// Markdown (the CET table, the assumptions, the tiers) and CSV (one row per device, header
// first, SI units). Under a stack (model.stack not "none") the Markdown says which and the CSV
// ends in a `stack` column; without one both are as before stacks existed.
std::string leaderboard_markdown(const Leaderboard& lb);
std::string leaderboard_csv(const Leaderboard& lb);

// Writes leaderboard.md, leaderboard.csv, roofline.md/.csv of every device that fits, and
// with gnuplot on PATH the Pareto plots leaderboard_energy.svg (time vs energy) and
// leaderboard_cost.svg (time vs cost) into `dir`. Returns the files written; a missing
// gnuplot or a failed plot adds a warning.
std::vector<std::string> write_leaderboard(const Leaderboard& lb, const std::string& dir,
                                           std::vector<std::string>* warnings);

}  // namespace vlasim
