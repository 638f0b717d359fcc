// The software stack's own time around a GPU's kernels (registry family "stack"): what turns
// a sequence of kernel times into an inference's wall time. An inference is not the sum of its
// kernels: an eager framework spends host time on every operator (dispatch, Python between
// operators, the launch call), and the GPU runs ahead of the host only as far as the host has
// queued work; a captured graph is launched once and replayed with a small gap per node; a
// compiler fuses operators and launches fewer kernels with a lighter launcher.
//
// The three stacks, over the operators of one step in execution order (each one kernel of
// `kernel_s` seconds on the GPU, of class gemm / attention / norm / elementwise / other):
//   eager:    the host starts at step_s (the step's own host time outside the operators:
//             inputs, outputs, the synchronise), then spends dispatch_s[class] per operator;
//             operator i's kernel is queued when its dispatch ends (H_i) and starts at
//             max(G_{i-1}, H_i + launch_s) (launch_s: launch call to kernel start on an idle
//             GPU); G_i = start + kernel_s. Wall = max(H_n, G_n).
//   compiled: eager over the fused graph (the graph passes express torch.compile's fusion),
//             every kernel dispatched by the compiler's launcher at compiled_dispatch_s.
//   graph:    one replay: the host spends step_s + graph_launch_s + n graph_node_launch_s, then
//             the kernels run back to back with node_gap_s between two: wall = that + launch_s +
//             sum kernel_s + (n - 1) node_gap_s.
// Every figure is a parameter: fitted from real Kineto traces (sim/costs/stack_eval.h,
// `vlasim gpu-eval --traces`), shipped in sim/kernel_fit/stack_model.csv.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/graph.h"
#include "scenarios/config/registry.h"

namespace vlasim {

// The operator classes a stack prices dispatch by.
inline constexpr const char* kStackClasses[] = {"gemm", "attention", "norm", "elementwise", "other"};

struct StackParams {
  std::map<std::string, double> dispatch_s;  // eager host seconds per operator, by class
  double launch_s = 8e-6;           // launch call to kernel start on an idle GPU
  double step_s = 300e-6;           // host seconds per step outside the operators
  double compiled_dispatch_s = 12e-6;  // compiled: host seconds per (fused) kernel
  double graph_launch_s = 10e-6;    // graph: host seconds to launch one replay
  double graph_node_launch_s = 0;   // graph: host seconds per node of the replay at its launch
  double node_gap_s = 1e-6;         // graph: GPU seconds between two replayed kernels
  // The eager dispatch of class `cls` (kStackClasses), "other"'s when the class has none.
  double dispatch(const std::string& cls) const;
};

// The class a stack prices `op`'s dispatch by (kStackClasses): the kernel model's kernel_class.
std::string stack_op_class(const Op& op);

struct StackOp;
// The kernels eager PyTorch launches for the ops `ids` of `g` (execution order), as a stack
// queues them: a bias add joins the GEMM before it (linear's addmm epilogue), a copy (a QKV
// gather, a concat of views) is a view and launches nothing, an activation the graph fused
// into a GEMM runs as a kernel of its own after it (two, act and mul, for a fused gate/up);
// an RMSNorm is HF transformers' eight kernels (to fp32, pow, mean, add, rsqrt, mul, to, mul:
// classes other / elementwise as the trace reader keys them), a RoPE its apply_rotary_pos_emb
// (mul, neg, cat, mul, add for q and for k); every other op is one kernel. `kernel_s(op, source)`
// prices a kernel: a graph op (source is op), or a synthetic one (id -1; source: the graph op it
// comes from) such as an activation (elementwise over the GEMM's m x n output, or m x n/2 for
// gate/up) or a pass of a decomposed RMSNorm (over the norm's tensor, or one value a row).
std::vector<StackOp> eager_lowering(const OpGraph& g, const std::vector<int>& ids,
                                    const std::function<double(const Op& op, const Op& source)>& kernel_s);

// One operator of a step: its class (kStackClasses) and its kernel's time alone on the GPU.
struct StackOp {
  std::string cls;
  double kernel_s = 0;
};

// What a stack makes of one step. Promises wall_s >= gpu_busy_s, wall_s >= host_s for eager
// and compiled, and gpu_idle_s = wall_s - gpu_busy_s.
struct StackTiming {
  double wall_s = 0;
  double gpu_busy_s = 0;  // sum of kernel times (graph: the node gaps too)
  double host_s = 0;      // host time the stack spends (dispatch, launch, step)
  double gpu_idle_s = 0;  // wall_s - gpu_busy_s: the GPU waiting for the host (or the launch)
  // Share of the step the GPU waits on the host: gpu_idle_s / wall_s (0 for an empty step).
  double host_bound_share() const { return wall_s > 0 ? gpu_idle_s / wall_s : 0; }
};

class StackModel {
 public:
  virtual ~StackModel() = default;
  // One step of `ops` (execution order), with the step's own host time (step_s) when
  // `with_step` (a scenario's segment charges it on the first segment of a request on its GPU
  // stream only). REQUIRES: every kernel_s >= 0.
  virtual StackTiming run(const std::vector<StackOp>& ops, bool with_step = true) const = 0;
  // "eager", "graph" or "compiled".
  virtual std::string mode() const = 0;
  // Whether the operators run fused by the graph passes (compiled, graph), or one ATen
  // operator each, unfused (eager).
  virtual bool fused() const = 0;
};

// The stack `mode` ("eager", "graph", "compiled") with parameters `p`. Throws
// std::invalid_argument for another mode.
std::unique_ptr<StackModel> make_stack(const std::string& mode, const StackParams& p);

using StackRegistry = Registry<StackModel>;
// Adds "eager", "graph" and "compiled" to `r`. Each takes `fit` (a stack parameters CSV; default
// the shipped sim/kernel_fit/stack_model.csv, found as the kernel fit is) and overrides of its own
// figures in microseconds (dispatch_<class>_us, launch_us, step_us, compiled_dispatch_us,
// graph_launch_us, graph_node_launch_us, node_gap_us), each refused at its key outside 0 to 100000 us.
void register_stacks(StackRegistry& r);
const StackRegistry& stack_registry();
// A stack a command names (--stack, a figure table's stack:): "none" (the cost model's own
// per-op launch and host time), "auto" (per GPU: graph where the device captures graphs
// (graph_capture), else eager) or a stack_registry() name, returned as given. Throws
// ConfigError at `where` naming the valid names otherwise.
std::string check_stack_name(const std::string& name, const ConfigNode& where);

// The parameters as CSV (a comment line `note`, then "figure,us" rows: dispatch_<class> for
// every class, launch, step, compiled_dispatch, graph_launch, graph_node_launch, node_gap) and
// back. The parser
// promises every figure once, each a number from 0 to 100000 us, or a ConfigError naming
// `where`, the line and the figure; an unknown or repeated figure is refused.
std::string stack_params_csv(const StackParams& p, const std::string& note);
StackParams parse_stack_params(const std::string& text, const std::string& where);
// stack_model.csv in the kernel fit's data folder (find_data_dir "kernel_fit": $VLASIM_KERNEL_FIT,
// $VLASIM_DATA_DIR/kernel_fit, the install prefix, the source tree's sim/kernel_fit).
std::string default_stack_fit_path();

}  // namespace vlasim
