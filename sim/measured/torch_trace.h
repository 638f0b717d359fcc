// PyTorch profiler traces (Chrome trace JSON, optionally gzip-compressed) as measured data:
// read, tie each GPU kernel to the op that launched it, find the stages and inferences the
// user marked with record_function, and match the trace's ops to a vlasim graph's ops.
//
// Two forms are read:
//   - Kineto (torch.profiler, PyTorch >= 1.8 built with Kineto): {"traceEvents": [...]} with
//     complete events ("ph": "X") by category: cpu_op (args "Input Dims" / "Input type" when
//     record_shapes=True), user_annotation (record_function ranges), kernel, gpu_memcpy and
//     gpu_memset on CUDA streams (args "stream", "correlation"), and cuda_runtime /
//     cuda_driver launch calls carrying the same "correlation". Other categories are skipped.
//   - legacy (torch.autograd.profiler with use_kineto=False, and Kineto-less builds such as
//     Debian's python3-torch 1.13): a top-level array of "X" events without "cat": names
//     "aten::..." (and other "ns::op" names) are ops, any other name a record_function range.
//     No shapes, no kernels: stage-level figures only.
// A kernel's launching op is the outermost op (cpu_op) around the launch call of equal
// correlation on the call's thread; its "device time" is the kernel's duration.
// A device event whose correlation no launch call has is read as in flight when the profiler
// started (launched by the step before the trace, e.g. running during the cudaDeviceSynchronize
// a step starts with, or queued deep while the CPU ran ahead) when both: it starts before the
// first device event on its own stream that a launch call of the trace launched (a stream runs
// in order; on a stream with no such event: before the trace's first launch call that launched
// a recorded device event), and its correlation is below every launch call's (CUPTI numbers the
// calls in order). It counts in the device time, tied to no op ("launched before the trace");
// any other such event (or any, in a trace where no launch call launched a recorded device
// event) is a broken trace and refused.
//
// Launch calls: categories cuda_runtime, cuda_driver (HIP's on ROCm), xpu_runtime, xpu_driver,
// mtia_runtime, privateuse1_runtime, privateuse1_driver, and PyTorch 1.8/1.9's "Runtime".
// PyTorch 1.8/1.9 wrote record_function ranges with category "Operator", as ops: such an event
// is read as a range when named "ProfilerStep#N", or when its name has no "::" and it recorded
// no input dims (record_shapes=False makes autograd nodes such as "ReluBackward1" ranges too).
// 1.8.0's "Input dims" is read as "Input Dims".
//
// Bounds: at most kMaxTraceBytes of JSON are read (after gzip), parsed as a stream (events are
// kept in a compact form, only those of the categories above), so memory stays bounded
// whatever the file. Errors are ConfigError naming the file, line 0 and the key: the event as
// "traceEvents[i]" (legacy: "[i]") and its field, e.g. "traceEvents[12].dur".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/graph.h"

namespace vlasim {

// Largest trace read, in bytes of JSON after decompression.
inline constexpr uint64_t kMaxTraceBytes = uint64_t{128} << 20;
// Sanity bounds on an X event, in us: its start (year ~5100 in Unix time, far past any
// profiler's clock) and its duration (one day).
inline constexpr double kMaxTraceTimeUs = 1e17;
inline constexpr double kMaxTraceEventUs = 86400e6;

// A CPU op (cpu_op, or a legacy "ns::op" event).
struct TraceOp {
  std::string name;
  double ts_us = 0, dur_us = 0;
  int thread = 0;                          // index into TorchTrace::threads
  std::vector<std::vector<int64_t>> dims;  // Input Dims; an input that is no tensor: {}
  std::vector<std::string> types;          // Input type
  int parent = -1;                         // enclosing op on its thread, -1 at the top
  double device_us = 0;                    // kernels, copies and sets it launched (its children's included)
  double device_end_us = -1;               // end of the last of them, -1 when none
  size_t event = 0;                        // index of the event in the file
};

// A record_function / user_annotation range on a CPU thread.
struct TraceRange {
  std::string name;
  double ts_us = 0, dur_us = 0;
  int thread = 0;
  double device_end_us = -1;  // end of the last kernel launched inside it, -1 when none
};

// One kernel, copy or set as the device ran it, with the launch call that launched it.
struct TraceDeviceEvent {
  double ts_us = 0, dur_us = 0;
  int64_t stream = -1;
  double launch_us = -1;  // start of its launch call; -1: launched before the trace
  int thread = -1;        // the launch call's thread (TorchTrace::threads); -1 as above
  bool graph = false;     // launched by a graph replay (cudaGraphLaunch, hipGraphLaunch)
  int64_t corr = 0;       // its correlation (one graph replay launches many events of one)
};

// A host call that waits for the device (cudaDeviceSynchronize, cudaStreamSynchronize,
// cudaEventSynchronize and HIP's): its span on its thread.
struct TraceSync {
  double ts_us = 0, dur_us = 0;
  int thread = 0;
};

struct TorchTrace {
  std::string path;
  bool kineto = false;   // the Kineto form (else legacy)
  bool shapes = false;   // some op has Input Dims
  std::string device_name;  // deviceProperties[0].name, "" when absent
  std::vector<std::string> threads;  // "pid/tid"
  std::vector<TraceOp> ops;          // by thread, then start time
  std::vector<TraceRange> ranges;    // by thread, then start time
  size_t kernels = 0, copies = 0, sets = 0;
  double kernel_us = 0, copy_us = 0, set_us = 0;  // device time by kind
  double device_us() const { return kernel_us + copy_us + set_us; }
  double launched_us = 0;  // device time with a launching op
  // Device events in flight when the profiler started (see above): count and time, part of
  // the counts and device time above, never of launched_us.
  size_t inflight = 0;
  double inflight_us = 0;
  // Device time launched by graph replays (cudaGraphLaunch, hipGraphLaunch): one call launches a
  // whole captured graph, usually outside any op, so it is tied to the op around the call if any.
  double graph_us = 0;
  std::map<int64_t, size_t> streams;  // CUDA stream -> kernels, copies and sets on it
  std::vector<TraceDeviceEvent> device;  // every kernel, copy and set, by stream, then start
  std::vector<TraceSync> syncs;          // by thread, then start
  std::vector<TraceSync> graph_launches; // graph replay launch calls' host spans, by thread, then start
  size_t events = 0;                  // events in the file
};

// Reads a trace (plain or gzip JSON). Throws ConfigError naming `path` on a missing, truncated
// or malformed file, a file past kMaxTraceBytes, an element of the event list that is no
// object, a trace with no op, range, device event or launch call, an event missing a field it
// needs (X events: name, ts, dur; kernels, copies and sets: args.correlation), a negative or
// non-finite duration or time, a start past kMaxTraceTimeUs or duration past kMaxTraceEventUs,
// a device event recorded twice (same kind, stream, correlation, start and duration), launch
// calls without any device event (the GPU's events missing: the ops' times would be dispatch
// times), or a device event with no launch call of its correlation that was not in flight when
// the profiler started (as above).
TorchTrace read_torch_trace(const std::string& path);
// As read_torch_trace on `text` (plain JSON); `name` stands in for the path in errors.
TorchTrace parse_torch_trace(const std::string& text, const std::string& name);

// Whether the trace ran on the catalog GPU `key` (its `description`, e.g. "NVIDIA H100 SXM
// 80GB"): "" when it did, when the trace names no device (deviceProperties), or when the
// description has no model word; else a sentence naming both GPUs. The model word is the
// description's first word holding a digit that is no memory size ("H100", "4090", "A770");
// the trace's GPU is it when its name holds that word whole, ignoring case ("A100" in
// "NVIDIA A100-SXM4-80GB"; "A10" is not in it).
std::string trace_device_mismatch(const TorchTrace& t, const std::string& key, const std::string& description);

// One inference (a repeated top-level range) and the stages in it.
struct TraceInference {
  double start_us = 0, end_us = 0;  // the range's start; its end, or its last kernel's when later
  double host_end_us = 0;           // the range's own end on its thread
  // Per Stage (index): first start and last end of the ranges named after it inside, with
  // their kernels' ends; -1 when absent.
  double stage_start_us[5] = {-1, -1, -1, -1, -1}, stage_end_us[5] = {-1, -1, -1, -1, -1};
};

// The inferences of a trace: ranges named `name`, or (name "") the most frequent range name
// that holds a range named after a stage (vision, prefix, action, decode, head) and is not one
// itself; torch.profiler's numbered steps ("ProfilerStep#12") count as one name,
// "ProfilerStep#*". A stage range belongs to the innermost inference range open at its start. Throws ConfigError naming the trace when there is none (saying which ranges exist).
std::vector<TraceInference> trace_inferences(const TorchTrace& t, const std::string& name, std::string* chosen);

// What an op computes, as matched between a trace and a graph: kind and sizes, e.g.
// "gemm m=32 n=768 k=256", "attention bh=8 q=32 kv=32 d=64", "norm layernorm 8192",
// "eltwise gelu 65536". "" when the op is not one vlasim matches (views, copies, ...).
std::string trace_op_key(const TraceOp& op);
std::string graph_op_key(const Op& op);

// A trace matched to a graph.
struct TraceMatch {
  // Per graph op id: the median time of the trace's top-level ops of its key (device time when
  // the trace has kernels, else the op's own CPU time), and how many trace ops that is; 0 when
  // none matched. A GEMM with a fused activation takes the samples of its key that had that
  // activation folded in (see folded) and one without takes those that had none; each falls
  // back to the key's other samples when its own kind has none.
  std::vector<double> op_seconds;
  std::vector<int> op_occurrences;
  size_t graph_ops = 0, graph_ops_matched = 0;
  // Keys of graph ops never seen, with their op count; trace top-level op keys (or names, when
  // they have no key) matched by no graph op, with occurrences and time in seconds.
  std::map<std::string, int> unseen;
  struct Unmatched {
    int count = 0;
    double seconds = 0;
  };
  std::map<std::string, Unmatched> unmatched;
  // Activations folded into the GEMM before them, as vlasim's graph fuses them (Op::epi.act):
  // a top-level gelu / silu / relu whose first input has the GEMM's output shape (m x n
  // elements, last size n), the next top-level op after a top-level GEMM on its thread, when
  // a graph op of that GEMM's key has that activation fused (not gate_up). Its time is
  // added to that GEMM's sample and to matched_s. By "ACT_KEY into GEMM_KEY" (ACT_KEY its
  // trace_op_key, or its name when it has none): occurrences and time in seconds.
  std::map<std::string, Unmatched> folded;
  double matched_s = 0, total_s = 0;  // time of matched top-level ops; of all (device time or CPU)
  bool device = false;                // times are device times
  std::vector<std::string> notes;     // e.g. input types that differ from the graph's dtype
};

// Matches the top-level ops of `t` (inside inference ranges when `inferences` is not empty) to
// the ops of `g` by key. REQUIRES: t.shapes.
TraceMatch match_trace(const TorchTrace& t, const OpGraph& g, const std::vector<TraceInference>& inferences);

// A warning when the match covers less than half of the trace's time (m.total_s): the trace is
// of another model than `model`, the graph is fused differently, or the trace's kernels ran
// outside ops vlasim keys; it names what the trace shows of the last: device time launched by
// graph replays (t.graph_us) and unmatched ops of torch.compile (names holding "Compiled").
// "" when half or more is matched, or the trace has no time.
std::string trace_match_warning(const TorchTrace& t, const TraceMatch& m, const std::string& model);

}  // namespace vlasim
