// What the vlasim commands share: the global options, option groups several commands take
// (run, limit, progress, model and shape options), option checks, progress display, scenario
// preparation and report writing. Errors are ConfigErrors naming the option ("<command line>"),
// which main turns into exit status 2.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "executors/runtime/runtime.h"
#include "models/builder.h"
#include "reports/compare.h"
#include "reports/control.h"
#include "reports/drift.h"
#include "reports/leaderboard.h"
#include "reports/report.h"
#include "scenarios/config/config.h"
#include "scenarios/scenario.h"
#include "sim/engine/engine.h"
#include "sim/hardware/hardware.h"
#include "sim/engine/plan.h"
#include "sim/measured/profile.h"

namespace vlasim::cli {

namespace fs = std::filesystem;

// Most segment executions a trace may keep (--trace-limit).
constexpr long long kMaxTraceLimit = 10'000'000;

// Exit status of a real run some of whose requests failed in their executor (reports written).
constexpr int kExitExecutorFailed = 4;

// The options every command takes, given before the command's name.
struct Common {
  std::string catalog = default_catalog_dir();
  std::string cards = default_cards_dir();
  std::string profile;  // when set, replaces every scenario's cost model with "profiled"
  // Set by a program that runs a command in its own process (the Python module), never by an
  // option: asked between calibrate's measurements; a reason ("" to go on) ends the
  // calibration early (cli/calibrate.cc). Empty: none.
  std::function<std::string()> should_stop;
};

// Registers --catalog, --cards and --profile on the top-level `app`.
void add_common_options(CLI::App& app, Common& c);

// A check that an option's value is a whole number from lo to hi.
CLI::Validator whole_number(long long lo, long long hi);

// A check that an option's value is a finite number at most hi and above lo (at least lo when
// !above).
CLI::Validator number_in(double lo, double hi, bool above);

// Throws ConfigError naming `option` unless `dir` is a directory this process may write in or
// can be created (its nearest existing parent is such a directory).
void check_output_dir(const std::string& option, const std::string& dir);

// Throws ConfigError naming `option` unless `file` can be written: not a directory, in an
// existing directory this process may write in.
void check_output_file(const std::string& option, const std::string& file);

// Throws ConfigError naming `option` unless `path` passes check_input_file.
void check_option_file(const std::string& option, const std::string& path);

// A node for an error about command-line option `key` given `value`.
ConfigNode command_line(const std::string& key, const std::string& value);

// "%g" of v.
std::string fmt_g(double v);

// Whether a command draws its progress on stderr: always when --progress forced it, otherwise
// only when stderr is a terminal and the command is not --quiet (a log gets no bar frames).
bool show_progress(bool quiet, bool forced);

// Draws a one-line progress bar of fraction `f` on stderr (ends the line at 1).
void progress_bar(double f);

// progress_bar when show_progress(quiet, forced), else an empty function.
std::function<void(double)> progress_for(bool quiet, bool forced);

// A simulation's progress line on stderr: bar, the model's clock, requests ended, and model
// events per second of wall time since the line was made.
std::function<void(const SimProgress&)> sim_progress_line();

// Registers --progress, which sets `forced`. `detail` (may be empty) is the command's own words
// on what the progress shows, ending in "; ".
void add_progress_flag(CLI::App* cmd, bool& forced, const std::string& detail = "");

// What the commands that run a scenario (simulate, execute, compare) and sweep write and how
// much work they accept.
struct OutputOptions {
  std::string dir;
  size_t trace_limit = 20000;
  bool quiet = false, progress = false;
  // A simulation estimated past these is refused before it starts (check_work).
  double max_requests = SimOptions().max_requests;
  double max_memory_gb = SimOptions().max_memory_bytes / 1e9;
  double max_wall_s = 0;  // simulate: stop after this many wall-clock seconds (0: no limit)
  bool stream_records = false;  // simulate: constant memory (SimOptions::on_record)
  double max_run_s = ExecuteOptions().max_seconds;  // execute, compare: longest real run accepted
  SimOptions sim_options() const;
};

// The options of a command that runs one scenario file.
struct RunOptions {
  std::string scenario;
  long long seed = -1;  // -1: the scenario's own
  OutputOptions out;
};

// Registers the scenario argument, -o/--out, --seed, --trace-limit, -q/--quiet and --progress.
void add_run_options(CLI::App* cmd, RunOptions& r);
// Registers --max-requests and --max-memory-gb.
void add_limit_options(CLI::App* cmd, OutputOptions& out);
// Registers --max-run-s (the longest real run accepted).
void add_run_length(CLI::App* cmd, OutputOptions& out);

// A scenario ready to run: loaded, with its cost model and plan. Memory is checked with each
// model's pipeline window (its requests in flight hold KV caches and activations together).
struct Prepared {
  Scenario s;
  Plan plan;
};

// Says on stderr which dtype each `dtype: auto` model got on this machine.
void tell_auto_dtypes(const Scenario& s);

// "" when profile `p` was made on this machine (same CPU model, oneDNN ISA and CPU count), else
// which machine it was made on, for people.
std::string host_entry_elsewhere(const DeviceProfile& p);

// Where the simulator's CPU figures are chosen: every CPU device of `s` whose catalog entry
// the scenario's profile stands for takes the profile's host entry (sim/measured/profile.h
// apply_host_entry) when it has one, wherever it was measured (a profile describes the machine
// it was made on: its op times and its host entry together), else keeps the catalog entry; says
// on stderr which, and whether the entry is this machine's, unless quiet. Nothing happens
// without a profiled cost model.
void use_host_entry(Scenario& s, bool quiet);

// Loads a scenario, gives `dtype: auto` models this machine's dtype, uses the profile's host
// entry (use_host_entry), and with `on_this_host`
// (its prediction is compared with a run here) refuses a profile made on another CPU ISA.
Scenario load_for(const Common& c, const std::string& path, bool on_this_host, bool quiet);
// What load_for does to a scenario once it is read (for one read from elsewhere: a string, an
// edited document).
void ready_for(const Common& c, Scenario& s, bool on_this_host, bool quiet);

// load_for, then the seed (when >= 0), the plan and the streams' loads (told unless quiet).
Prepared prepare(const Common& c, const std::string& path, long long seed, bool on_this_host, bool quiet);
// prepare's steps after load_for: the seed (when >= 0), the plan and the streams' loads.
void plan_prepared(Prepared& pr, long long seed, bool quiet);

// Prints each warning on stderr and, unless quiet, the files written.
void print_written(const std::vector<std::string>& files, const std::vector<std::string>& warnings, bool quiet);

// Prints the summary and writes report.json, requests.csv and trace.json (and the streams'
// and control files where the scenario has them) into out.dir when given.
// `streamed`: the report of a run whose records went to a ReportBuilder and requests.csv as
// they finished (simulate --stream-records) instead of r.requests.
void write_outputs(const Prepared& pr, const SimResult& r, const std::string& mode,
                   const OutputOptions& out, const Report* streamed = nullptr);

// Runs the prepared scenario on the real executors, telling the user what it does.
// The caller holds a StopSignals (executors/stop_signal.h) until its outputs are written: a
// SIGINT or SIGTERM ends the run at once with a partial result (signal_stop() below).
ExecResult run_for_real(const Prepared& pr, const OutputOptions& out, const std::string& executor,
                        int warmup);

// After a real run's outputs are written: 0 when no signal ended it; else says on stderr that
// the run stopped early and that the report covers what ran, and returns 130 (SIGINT) or 143
// (SIGTERM).
int signal_stop(const SimResult& r);

// `vlasim compare --trace`: the prepared scenario's first model predicted (options `so`) beside
// a PyTorch profiler trace's inferences (record_function range `inference`; "": found), one
// finished request per inference arriving at its start, with the stages found in it and the
// per-op times where the trace has shapes. The Markdown begins with what the measured side is.
// Throws ConfigError for an unreadable trace or one without inferences.
struct TraceComparison {
  Comparison cmp;
  SimResult predicted;
  std::string markdown;
};
TraceComparison compare_with_trace(const Prepared& pr, const std::string& trace, const std::string& inference,
                                   double margin, const SimOptions& so);

// `vlasim compare`'s comparison of a prepared scenario with a real run here: predicted
// (options `so`), then measured by `measure` (run_for_real, or an execute() of the caller's)
// while the drift sentinel watches the machine, the two compared (reports/compare.h; margin:
// TOST's on the ratio of mean latencies), and compare.md's text: the comparison tables, then
// the control, streaming, drift and co-run sections the scenario has.
struct RealComparison {
  SimResult predicted;
  ExecResult measured;
  Comparison cmp;
  DriftInputs drift;
  ServiceSensitivity sens;
  std::vector<CorunRow> corun;
  bool control = false;  // a stream has control: (control comparison; control files per run)
  std::vector<StreamingRow> streams_predicted, streams_measured;  // empty: no streaming section
  std::string markdown;
};
RealComparison compare_for_real(const Prepared& pr, const SimOptions& so, double margin,
                                const std::function<ExecResult()>& measure);
// The text files `vlasim compare -o DIR` writes for `rc` (its plots and trace.json aside), by
// path under DIR: compare.json, compare.md, drift.json and, per run (simulate/, execute/),
// report.json, requests.csv and, where the scenario has them, streams.md and streams.csv
// (streaming), control.md and control.csv (control).
std::map<std::string, std::string> compare_files(const Prepared& pr, const RealComparison& rc);

// What `leaderboard`, `roofline` and `passes` run: a card at its defaults (with the shape
// options given), or a model of a scenario file (--model, default the first). A path ending in
// .yaml/.yml or naming a file is a scenario.
struct ModelChoice {
  std::string what;  // the argument
  std::string model;  // --model
  int views = 0, prompt = -1, chunk = 0, steps = 0, batch = 0;
  std::string dtype;
  std::string dp_cache;  // --dp-cache START:END[:INTERVAL[:KEEP]]
  std::optional<std::vector<std::string>> passes;  // --passes (graph passes; "none": no pass)
  std::string cost_model;  // --cost-model (default: the scenario's, roofline for a card)
  bool graph_capture = false;  // --graph-capture (a card on GPUs)
  std::string stack;  // --stack (leaderboard, roofline; "": the scenario's, none for a card)
};

// Registers the model argument and the shape options that fill `mc`.
void add_model_options(CLI::App* cmd, ModelChoice& mc);

// Registers --stack (the software stack GPUs are priced under) filling `stack`.
void add_stack_option(CLI::App* cmd, std::string& stack);

// --dp-cache TEXT for `card` at `steps` steps: parsed, then checked as a scenario's dp_cache:
// is. Throws ConfigError naming --dp-cache.
DpCache dp_cache_option(const std::string& text, const ModelCard& card, int steps);

// --passes a,b,... ("none": no pass) for `card` at `shape`: each name a pass that applies.
// Throws ConfigError naming --passes.
std::vector<std::string> passes_option(const std::vector<std::string>& given, const ModelCard& card,
                                       const RunShape& shape);

// The model `mc` names with its shape options applied. Throws ConfigError naming the option.
LeaderboardModel choose_model(const Common& c, const ModelChoice& mc);

// The scenario `roofline` and `passes` report on, and its model index: a scenario file as it is
// (shape options refused: its plan runs its models as the file gives them), or a card (or a
// scenario's model) alone on `device`; a CPU the profile stands for takes its host entry
// (use_host_entry, quietly), as simulate does.
Scenario chosen_scenario(const Common& c, const ModelChoice& mc, const std::string& device, int* model);

}  // namespace vlasim::cli
