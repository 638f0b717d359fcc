// Measured GPU-to-GPU network costs: Vidur's network profiles (microsoft/vidur
// data/profiling/network/<node>/{send_recv,all_reduce}.csv, data/gpu_profiles/README.md) fitted
// as a latency plus bytes / bandwidth per link kind and GPU count, written as a small YAML file
// (a "network profile") that `vlasim import vidur-network` makes and a scenario's link can name
// (`hardware.links: - {catalog: nvlink4, between: [a, b], profile: FILE, entry: NAME}`).
//
// What a Vidur row holds (read from vidur/profiling/collectives/ at 7d47513):
//   - size: bytes of one rank's fp16 buffer (elements x 2; collectives_wrapper.py "size * 2").
//     send_recv: rank 0 sends it to rank 1; all_reduce: every rank reduces a buffer of it.
//   - time_stats.<collective>.{min,max,mean,median,std}: milliseconds. One sample is the median
//     of the durations of the NCCL kernels (Kineto CUDA activity, names starting "nccl") of 11
//     back-to-back calls on rank 0 (the sender); three samples per row (ACTIVE_STEPS = 3), after
//     a barrier each. Kernel time: no launch or host time. Kineto's 1 us resolution.
//   - num_workers: GPUs in the collective (>= devices_per_node); devices_per_node: of them per
//     node, packed from GPU 0 (devices_per_node < num_workers: several nodes);
//     max_devices_per_node: GPUs in the node;
//     rank: always 0 (only GPU 0's results are kept); collective: send_recv or all_reduce.
//   - send_recv with devices_per_node 2 is the intra-node link (Vidur's pipeline stages on one
//     node), devices_per_node 1 the inter-node network (sklearn_execution_time_predictor.py).
// Errors (ConfigError, exit 2 at the command line) name the file, line and column.
#pragma once

#include <string>
#include <vector>

namespace vlasim {

// One row: a size and its measured time.
struct NetworkPoint {
  double bytes = 0;    // per rank, > 0
  double seconds = 0;  // the row's median, > 0
  double min_s = 0, max_s = 0;
  int line = 0;        // line of the row in its file
};

// Every row of one configuration of one file: a collective over `gpus` GPUs, `gpus_per_node`
// per node, on Vidur's network device `node` (the file's folder name, e.g. "h100_dgx").
struct NetworkGroup {
  std::string node, collective, file;
  int gpus = 2, gpus_per_node = 2, node_gpus = 0;
  std::vector<NetworkPoint> points;  // sorted by bytes (stable: equal sizes keep file order)
  int nodes() const { return gpus_per_node >= gpus ? 1 : gpus / gpus_per_node; }
  // "h100_dgx.send_recv.intra_node" / ".inter_node"; "h100_dgx.all_reduce.8gpu" (one node),
  // "a100_dgx.all_reduce.16gpu_2node".
  std::string name() const;
};

// Reads one Vidur send_recv.csv or all_reduce.csv (`node`: the network device it stands for),
// or every one of them under a folder (sorted by path; node = each file's folder name). Groups
// in order of first row.
std::vector<NetworkGroup> import_vidur_network(const std::string& path);
// The same for a file's text; `name` stands in for the file in errors.
std::vector<NetworkGroup> parse_vidur_network(const std::string& text, const std::string& name,
                                              const std::string& node);

// Bytes each rank moves on its busiest link per byte of buffer: 1 for send_recv, 2 (n - 1) / n
// for a ring all_reduce over n GPUs (nccl-tests' bus bandwidth convention).
double bus_factor(const std::string& collective, int gpus);

// A fitted cost: seconds = latency_s + bytes x bus_factor / bytes_per_s.
struct NetworkFit {
  std::string name, node, collective;
  int gpus = 2, nodes = 1;
  double latency_s = 0;    // >= 0
  double bytes_per_s = 0;  // > 0: send_recv bandwidth per direction; all_reduce bus bandwidth
  int points = 0;          // rows fitted
  double min_bytes = 0, max_bytes = 0;
  double median_error = 0, p90_error = 0, max_error = 0;  // |fit / measured - 1| over the rows
  std::string source;      // "vidur:<file>:<first line>-<last line>"
};

// What a fitted or read link may be: bandwidth (send_recv per direction, all_reduce bus) in GB/s
// and latency in microseconds.
inline constexpr double kMinNetworkGbs = 1e-3, kMaxNetworkGbs = 1e6, kMaxNetworkLatencyUs = 1e6;

// The latency and bandwidth minimising the squared relative error over the group's points with
// bytes <= max_bytes (all when 0), latency held >= 0; errors over those same points. Throws
// ConfigError naming the file when fewer than two sizes are fitted, the time does not grow with
// size, or the fit lies outside kMinNetworkGbs..kMaxNetworkGbs / kMaxNetworkLatencyUs (what a
// network profile may hold). `max_bytes` must be finite and >= 0 (std::invalid_argument).
NetworkFit fit_network(const NetworkGroup& g, double max_bytes = 0);
// |fit / measured - 1| of each of `g`'s points with bytes > min_bytes.
std::vector<double> fit_errors(const NetworkFit& f, const NetworkGroup& g, double min_bytes = 0);

// Seconds for the fit's collective on a buffer of `bytes` per rank (>= 0): latency_s + bytes x
// bus_factor(collective, gpus) / bytes_per_s. Non-decreasing in bytes; send_recv: a transfer of
// `bytes` over the link.
double collective_seconds(const NetworkFit& f, double bytes);

// The fits as YAML (a comment `note` first; then `links:` name -> {collective, gpus, nodes,
// latency_us, gbs (send_recv) or bus_gbs (all_reduce), points, bytes, error_median_pct,
// error_p90_pct, error_max_pct, source}), and back. Reading checks every key, its range, and
// that collective and the bandwidth key agree; errors name the file, line and key.
std::string network_profile_yaml(const std::vector<NetworkFit>& fits, const std::string& note);
std::vector<NetworkFit> load_network_profile(const std::string& path);
std::vector<NetworkFit> parse_network_profile(const std::string& text, const std::string& name);

}  // namespace vlasim
