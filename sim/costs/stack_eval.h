// The software stack model (sim/costs/stack_model.h) fitted on real Kineto traces and judged on
// traces it was not fitted on (`vlasim gpu-eval --traces DIR`, reports/gpu_stack.md).
//
// DIR/traces.yaml lists the traces: each with its file (relative to DIR), the card its model
// follows (in DIR/cards, else the cards folder), the catalog GPU it ran on, its stack (eager,
// graph, compiled), and the record_function range of a step (default "ProfilerStep#*"). A
// graph or compiled trace may have no card: it is not predicted, only read for the figures no
// eager trace shows (compiled_dispatch: host span / kernels of a compiled step; graph_node_launch:
// graph launch calls' host time / the nodes they ran; node_gap):
//   traces:
//     - {file: tracelens/h100_bert.json.gz, card: bert_small, gpu: h100-sxm, stack: eager}
//   refused:
//     - {file: tracelens/b200_eager_trace.json.gz, why: "vLLM fp8 MoE over tensor parallelism: no card"}
// A trace is predicted from its card's graph (unfused for eager, the card's passes otherwise) at
// the card's default shape: each op's kernel priced by the kernel model (fitted on every GPU's
// measured kernels but the trace's own; attention and ops the kernel model does not price: the
// shaped model, replayed), then run through the stack fitted on every other GPU's traces.
//
// Attention: the kernel model's attention class is fitted on the traces' attention kernels (the
// graph's attention ops matched to the trace's by shape), each GPU left out as for the others.
// The fit, over a set of traces (their median step each):
//   dispatch_<class> = host time the traces' launching ops of that class own / those ops
//                      (sim/measured/trace_step.h), summed over the set: the host time per
//                      launched ATen op, apart from how many a model launches (the eager
//                      lowering's business); a class the set has no op of takes the set's
//                      total owned time over its total launching ops;
//   step   = median of the steps' own host time;
//   launch = median of launch-to-start delays on an idle stream;
//   node_gap = median gap inside graph replays, where the set has any; else the prior's.
// The eager figures come from the set's eager traces with cards only. Figures no trace of the
// set shows (graph_launch always; compiled_dispatch, graph_node_launch, node_gap without such a
// trace) keep the prior's (StackParams' defaults), and the report says so.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "models/graph.h"
#include "scenarios/config/config.h"
#include "sim/costs/gpu_kernel_model.h"
#include "sim/costs/stack_model.h"
#include "sim/hardware/hardware.h"
#include "sim/measured/trace_step.h"

namespace vlasim {

struct TraceCase {
  std::string file;   // as the manifest gives it (relative to its folder)
  std::string path;   // resolved
  std::string card, gpu, stack = "eager", inference = "ProfilerStep#*";
  ConfigNode where;
};

struct TraceManifest {
  std::string dir, cards_dir;
  std::vector<TraceCase> cases;
  std::vector<std::pair<std::string, std::string>> refused;  // file, why
};

// Reads DIR/traces.yaml. Throws ConfigError (file, line, key) on a missing manifest, an unknown
// key, a missing file, card or catalog GPU, an unknown stack, an empty list.
TraceManifest load_trace_manifest(const std::string& dir, const std::string& cards_dir, const Catalog& cat);

// One trace read: its steps (the median step by wall time stands for it) and its graph.
struct TraceFitData {
  const TraceCase* c = nullptr;
  std::vector<TraceStep> steps;
  TraceStep step;                   // the median step
  OpGraph graph;
  // The graph's attention ops matched to the trace's (match_trace: the median device time of
  // the trace's ops of each one's key): measured attention kernels the kernel model's attention
  // class is fitted on, leaving this trace's GPU out.
  std::vector<KernelSample> attention;
  double attention_meas_s = 0;  // their sum
};

// Fits a stack on `fit` (see the top), starting from `prior`.
StackParams fit_stack(const std::vector<const TraceFitData*>& fit, const StackParams& prior);

// The stack's operators of `g` on GPU `d` (eager: eager_lowering's ATen kernels; else the
// graph's ops): each op's class and its kernel time alone on the whole GPU (the kernel model
// with `kp` where it prices the op, else the shaped model replayed, less its inter-kernel gap).
std::vector<StackOp> stack_ops(const OpGraph& g, const DeviceSpec& d, const GpuKernelParams& kp, bool eager);

struct StackEvalRow {
  std::string trace, card, gpu, stack, device_name;
  int steps = 0, graph_ops = 0, launching_ops = 0;
  double meas_wall = 0, meas_busy = 0, meas_host_share = 0, meas_waited = 0;
  double pred_wall = 0, pred_busy = 0, pred_host_share = 0;  // held out by GPU
  double pred_wall_model_out = 0;                            // stack fitted leaving the model out
  double pred_wall_in = 0;                                   // stack fitted on every trace (in sample)
  double meas_attention = 0, pred_attention = 0;             // the graph's attention ops, seconds
  double pred_wall_per_op = 0;  // no stack: sum over the graph's ops of max(kernel + gap, host floor)
  std::string kernel_fit;  // which kernel fit priced it
  StackParams fold;        // the stack that predicted it (held out by GPU)
  double err_wall() const { return pred_wall / meas_wall - 1; }
  double err_busy() const { return meas_busy > 0 ? pred_busy / meas_busy - 1 : 0; }
};

struct StackEvaluation {
  std::vector<StackEvalRow> rows;
  struct FitOnly {
    std::string trace, gpu, stack;
    TraceStep step;
  };
  std::vector<FitOnly> fit_only;  // traces without a card: read for their launch figures
  std::vector<std::pair<std::string, std::string>> refused;
  StackParams all_fit;  // fitted on every trace: the shipped figures
  double median_wall = 0, worst_wall = 0, median_model_out = 0, worst_model_out = 0, median_busy = 0;
  double median_no_stack = 0, worst_no_stack = 0;
};

// Evaluates every trace of `m` (leave one GPU out for the stack and the kernel model; also
// leave one model out for the stack). `kernel_data`: the measured kernels the kernel model is
// fitted on. Progress lines go to `progress` when given.
StackEvaluation evaluate_stacks(const TraceManifest& m, const std::vector<GpuSamples>& kernel_data, const Catalog& cat,
                                const std::function<void(const std::string&)>& progress);

std::string stack_evaluation_markdown(const StackEvaluation& e, const std::string& command);
std::string stack_evaluation_csv(const StackEvaluation& e);

}  // namespace vlasim
