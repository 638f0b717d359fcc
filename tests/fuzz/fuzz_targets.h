// Fuzz targets (issue 15): each hands bytes to one of vlasim's readers the way a user's file
// reaches it. A reader either accepts the input or refuses it with a ConfigError that names the
// input; anything else (another exception, a crash, a sanitizer report, a hang) is a finding.
// Shared by the libFuzzer programs (fuzz_main.cc, built with clang by scripts/fuzz.sh) and by
// FuzzRegressions in the normal build, which replays the seeds and every kept finding.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vlasim::fuzz {

enum class Outcome { Accepted, Refused };

// Thrown by a target when a reader fails in a way a user could not act on: an exception other
// than ConfigError, or a ConfigError without the input's name or a message.
struct Finding : std::exception {
  explicit Finding(std::string what) : what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }
  std::string what_;
};

// A scenario: loaded, planned and, when its estimated work is small (at most kMaxRequests
// requests), simulated, as `vlasim simulate` would. Cards and catalog: the source tree's.
Outcome scenario(std::string_view bytes);
// A model card named fuzz.yaml (its name must be `fuzz`), built at its defaults.
Outcome card(std::string_view bytes);
// A hardware catalog file.
Outcome catalog(std::string_view bytes);
// A device profile (JSON), as `--profile` reads it.
Outcome profile(std::string_view bytes);
// A PyTorch profiler trace (plain JSON), as `vlasim import trace` and `compare --trace` read it:
// parsed, its inferences found and, with shapes, matched to pi0_tiny's graph.
Outcome trace(std::string_view bytes);

// Public measured GPU kernel times as `vlasim import` reads them (sim/measured/gpu_import.h), the
// format chosen by the text: one starting with '{' (after blanks) is an ApxInf tactics JSON,
// anything else a Vidur mlp.csv. Every sample accepted has a positive, finite time.
Outcome gpu_import(std::string_view bytes);

// Vidur network profiles and vlasim network profiles as `vlasim import vidur-network` and a
// scenario link's `profile:` read them (sim/measured/gpu_network.h), the format chosen by the text: one
// starting with '#' or "links" (after blanks) is a network profile, anything else a Vidur
// send_recv.csv / all_reduce.csv whose groups are then fitted. Every fit accepted has a finite
// latency >= 0 and a finite bandwidth > 0, and its collective_seconds grow with the bytes.
Outcome gpu_network(std::string_view bytes);

// The kernel cost model's fit file (sim/costs/gpu_kernel_model.h parse_kernel_params), as a scenario's
// `fit:` or $VLASIM_KERNEL_FIT names it. Every fit accepted prices small and large GEMMs, norms
// and elementwise ops on the H100 to a finite time above 0 and at most 1000 s.
Outcome kernel_fit(std::string_view bytes);

// A device profile's `host` entry (the input is the entry's JSON object, set into a trimmed
// validation profile as `--profile` reads it). Every entry accepted gives the catalog CPU a
// finite DRAM and per-core bandwidth within physical bounds and a finite cache size.
Outcome host_entry(std::string_view bytes);

inline constexpr double kMaxRequests = 2000;  // bigger scenarios are refused, not simulated

struct Target {
  const char* name;
  Outcome (*run)(std::string_view);
  std::vector<std::string> seed_dirs;  // relative to the source tree: inputs to start from
  bool nested = false;  // seed folders hold inputs in sub-folders too (a Vidur case is DIR/mlp.csv)
};
// The nine targets above, with the folders of tests/data and the shipped files they start from.
const std::vector<Target>& targets();

}  // namespace vlasim::fuzz
