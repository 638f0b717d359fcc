// The real runtime runs scenarios with the simulator's plans and policies.
#include <gtest/gtest.h>

#include <map>

#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <functional>
#include <optional>
#include <thread>

#include "executors/host.h"
#include "executors/runtime/runtime.h"
#include "executors/stop_signal.h"
#include "reports/control.h"
#include "reports/report.h"
#include "sim/costs/cost_models.h"
#include "executors/executor_registry.h"
#include "sim/engine/planner.h"
#include "scratch.h"

namespace vlasim {
namespace {

Scenario scenario(const std::string& yaml) {
  return load_scenario_text(yaml, "<test>", default_catalog_dir(), default_cards_dir());
}

Plan plan_of(const Scenario& s) {
  auto cost = cost_models().make("roofline", Params(), ConfigNode());
  return make_plan(s, *cost, std::vector<int>(s.models.size(), 2));
}

const char* kTwoGroups = R"(
name: two-groups
hardware:
  devices:
    - {name: cpu0, catalog: epyc-2vcpu, core_groups: [{name: a, cores: 1}, {name: b, cores: 1}]}
models:
  - name: tiny
    card: pi0_tiny
    dtype: fp32
    placement:
      - {stages: [vision, prefix], device: cpu0.a}
      - {stage: action, device: cpu0.b}
workload:
  - {name: cam, model: tiny, rate_hz: 40, duration_s: 0.5}
policies: {pipeline: async}
drain_s: 5
)";

TEST(Runtime, RunsEveryRequestThroughBothCoreGroups) {
  Scenario s = scenario(kTwoGroups);
  Plan p = plan_of(s);
  ExecuteOptions o;
  o.warmup = 1;
  ExecResult r = execute(s, p, o);
  ASSERT_EQ(r.result.requests.size(), 20u);
  for (const auto& q : r.result.requests) {
    EXPECT_TRUE(q.finished());
    EXPECT_GE(q.start, q.arrival);
    EXPECT_GT(q.latency(), 0);
    // The three stages ran one after another inside the request's time.
    double stages = 0;
    for (Stage st : {Stage::Vision, Stage::Prefix, Stage::Action}) {
      ASSERT_TRUE(q.stage_done(static_cast<int>(st))) << to_string(st);
      EXPECT_GT(q.stage_latency[static_cast<int>(st)], 0) << to_string(st);
      stages += q.stage_latency[static_cast<int>(st)];
    }
    EXPECT_LE(stages, q.latency() * (1 + 1e-9));
  }
  // Both units ran segments, and every op of the model has a measured time.
  int used = 0;
  for (const auto& u : r.result.units) used += u.segments > 0;
  EXPECT_EQ(used, 2);
  for (double t : r.op_seconds[0]) EXPECT_TRUE(t >= 0) << "an op was never timed";
  EXPECT_EQ(r.devices.size(), 2u);
  EXPECT_FALSE(r.result.trace.empty());
}

TEST(Runtime, SerialPipelineNeverOverlapsRequestsOfOneModel) {
  std::string yaml = kTwoGroups;
  yaml.replace(yaml.find("policies: {pipeline: async}"), 27, "policies: {pipeline: serial}");
  Scenario s = scenario(yaml);
  ExecResult r = execute(s, plan_of(s), ExecuteOptions{});
  const auto& q = r.result.requests;
  for (size_t i = 1; i < q.size(); ++i)
    if (q[i].finished() && q[i - 1].finished()) {
      EXPECT_GE(q[i].start, q[i - 1].end - 1e-9);
    }
}

TEST(Runtime, RunsDynamicZoneVariants) {
  Scenario s = scenario(R"(
name: zone
hardware:
  devices:
    - {name: cpu0, catalog: epyc-2vcpu, core_groups: [{name: a, cores: 1}, {name: b, cores: 1}]}
models:
  - name: tiny
    card: pi0_tiny
    dtype: fp32
    partition: {name: block_split, params: {stage: prefix, after_block: 2, first: cpu0.a, second: cpu0.b, second_stages: [action]}}
    dynamic_zone: {name: balance, params: {width: 2, hysteresis: 0}}
workload:
  - {name: cam, model: tiny, rate_hz: 200, duration_s: 0.3}
background:
  - {device: cpu0.a, compute: 0.5}
policies: {pipeline: async}
drain_s: 60
)");
  // drain_s: the run ends once every request has finished; 60 s of room is for sanitizer
  // builds, where these 60 requests take ~10 s beside the background load (1.5 s in release).
  Plan p = plan_of(s);
  ASSERT_GT(p.models.size(), 1u);  // the zone's variants
  ExecResult r = execute(s, p, ExecuteOptions{});
  ASSERT_EQ(r.result.requests.size(), 60u);
  for (const auto& q : r.result.requests) {
    EXPECT_TRUE(q.finished());
    EXPECT_EQ(p.models[q.plan].model, 0);
  }
  ASSERT_EQ(r.op_seconds.size(), 1u);  // per scenario model, variants merged
}

// kTwoGroups with four robots arriving together and fixed batches of 4 on both groups.
std::string batched_two_groups() {
  std::string yaml = kTwoGroups;
  yaml.replace(yaml.find("{name: cam, model: tiny, rate_hz: 40, duration_s: 0.5}"), 54,
               "{name: cam, model: tiny, count: 4, rate_hz: 10, duration_s: 0.2}");
  yaml.replace(yaml.find("policies: {pipeline: async}"), 27,
               "policies: {pipeline: {name: async, params: {depth: 4}}, batching: {name: fixed, params: {size: 4}}}");
  return yaml;
}

TEST(Runtime, RunsBatchesOfItsQueuedRequestsAtTheBatchSize) {
  alarm(120);
  Scenario s = scenario(batched_two_groups());
  const Plan p = plan_of(s);
  ASSERT_EQ(p.models[0].batched.size(), 1u);
  ExecResult r = execute(s, p, ExecuteOptions{});
  ASSERT_EQ(r.result.requests.size(), 8u);
  for (const auto& q : r.result.requests) EXPECT_TRUE(q.finished());
  // The first request of an arrival finds group a free and starts alone; the other three
  // wait for it and run as one batch: fewer runs than requests, each at the batch size.
  int items = 0, most = 0;
  for (const TraceEvent& e : r.result.trace) {
    EXPECT_EQ(e.batch, 4);  // fixed: always at the unit's size
    items += e.items;
    most = std::max(most, e.items);
  }
  EXPECT_EQ(items, 16);  // each request once on each group
  EXPECT_GE(most, 3);
  EXPECT_LT(r.result.trace.size(), 16u);
  alarm(0);
}

TEST(Runtime, ContinuousBatchingRunsTheActionExpertStepByStepPayingTheInspection) {
  alarm(120);
  std::string yaml = batched_two_groups();
  yaml.replace(yaml.find("batching: {name: fixed, params: {size: 4}}"), 42,
               "batching: {name: continuous, params: {size: 4, inspect_ms: 2}}");
  Scenario s = scenario(yaml);
  const Plan p = plan_of(s);
  const ModelPlan& mp = p.models[0];
  ExecResult r = execute(s, p, ExecuteOptions{});
  ASSERT_EQ(r.result.requests.size(), 8u);
  for (const auto& q : r.result.requests) EXPECT_TRUE(q.finished());
  int step_items = 0, step_runs = 0;
  for (const TraceEvent& e : r.result.trace) {
    const Segment& seg = mp.segments[static_cast<size_t>(e.segment)];
    if (mp.graph.op(seg.ops.front()).stage != Stage::Action) continue;
    ++step_runs;
    step_items += e.items;
    EXPECT_GE(e.end - e.start, 0.002) << "a step ran without the engine's inspection first";
  }
  EXPECT_EQ(step_items, 8 * s.models[0].shape.steps);  // each request once per step
  EXPECT_LT(step_runs, step_items);                     // some steps ran batched
  alarm(0);
}

TEST(Runtime, RefusesTheLiveTrafficControllerAtItsKey) {
  const auto dir = testing::scratch_dir("runtime_live_controller");
  std::ofstream(dir / "problem.yaml") << "gpus: [{name: cpu, catalog: epyc-2vcpu, count: 1}]\n"
                                         "models:\n  - {name: tiny, robots: 1, capacity: {epyc-2vcpu: 4}}\n";
  std::string yaml = kTwoGroups;
  yaml.replace(yaml.find("  - name: tiny\n"), 15, "  - name: tiny-cpu0\n");
  yaml += "controller: {problem: " + (dir / "problem.yaml").string() + "}\n";
  Scenario s = scenario(yaml);
  ASSERT_EQ(s.streams[0].group, "tiny");
  try {
    execute(s, plan_of(s), ExecuteOptions{});
    FAIL() << "a real run took the live controller";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "controller");
    EXPECT_NE(std::string(e.what()).find("simulator"), std::string::npos) << e.what();
  }
}

TEST(Runtime, RefusesCoresThisMachineDoesNotHave) {
  Scenario s = scenario(R"(
name: big-cpu
hardware: {devices: [{name: cpu0, catalog: xeon-platinum-8470q, core_groups: [{name: s0, cores: 52}]}]}
models: [{card: pi0_tiny}]
workload: [{model: pi0_tiny, rate_hz: 10, duration_s: 0.2}]
)");
  try {
    execute(s, plan_of(s), ExecuteOptions{});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("core group 's0'"), std::string::npos) << e.what();
  }
}

// An explicit bf16 runs where this CPU can run it, and elsewhere is refused before any work
// with the scenario's file, the dtype's line and key, the host's ISA and the alternative
// (CI runs this test again with ONEDNN_MAX_CPU_ISA=AVX2, where it takes the refusal branch).
TEST(Runtime, ExplicitBf16RunsOrIsRefusedNamingTheHostIsa) {
  Scenario s = scenario(R"(
name: bf16
hardware: {devices: [{name: cpu0, catalog: epyc-2vcpu, core_groups: [{name: a, cores: 1}]}]}
models:
  - card: pi0_tiny
    dtype: bf16
workload: [{model: pi0_tiny, rate_hz: 20, duration_s: 0.2}]
drain_s: 5
)");
  if (host_info().bf16) {
    ExecResult r = execute(s, plan_of(s), ExecuteOptions{});
    ASSERT_FALSE(r.result.requests.empty());
    EXPECT_TRUE(r.result.requests.front().finished());
    return;
  }
  try {
    execute(s, plan_of(s), ExecuteOptions{});
    FAIL() << "bf16 ran on a CPU whose oneDNN ISA is " << host_info().isa;
  } catch (const ConfigError& e) {
    const std::string w = e.what();
    EXPECT_EQ(e.file(), "<test>");
    EXPECT_EQ(e.line(), 6) << w;
    EXPECT_EQ(e.key(), "models[0].dtype") << w;
    EXPECT_NE(w.find("ISA " + host_info().isa), std::string::npos) << w;
    EXPECT_NE(w.find("dtype: fp32"), std::string::npos) << w;
  }
}

// dtype: auto is this CPU's native dtype on a CPU device and bf16 on a GPU; planning an
// unresolved auto is refused.
TEST(Runtime, AutoDtypeIsTheCpusNativeOneAndMustBeResolved) {
  Scenario s = scenario(R"(
name: auto
hardware:
  devices:
    - {name: cpu0, catalog: epyc-2vcpu, core_groups: [{name: a, cores: 1}]}
    - {name: gpu0, catalog: rtx4090}
models:
  - {name: c, card: pi0_tiny, dtype: auto, placement: [{stages: [vision, prefix, action], device: cpu0.a}]}
  - {name: g, card: pi0_tiny, dtype: auto, placement: [{stages: [vision, prefix, action], device: gpu0}]}
workload: [{model: c, rate_hz: 20, duration_s: 0.2}]
)");
  EXPECT_THROW(plan_of(s), ConfigError);
  resolve_auto_dtypes(s, native_cpu_dtype());
  EXPECT_EQ(s.models[0].shape.dtype, native_cpu_dtype());
  EXPECT_EQ(s.models[1].shape.dtype, DType::BF16);
  EXPECT_EQ(native_cpu_dtype(), host_info().bf16_native ? DType::BF16 : DType::F32);
  const Plan p = plan_of(s);
  EXPECT_EQ(p.models[0].graph.op(0).dtype, native_cpu_dtype());

  // A partition over two GPUs is a GPU model, even when the scenario's first device (where a
  // model without placement would go) is a CPU.
  Scenario g = scenario(R"(
name: auto-split
hardware:
  devices:
    - {name: host, catalog: epyc-2vcpu}
    - {name: ga, catalog: rtx4090}
    - {name: gb, catalog: rtx4090}
  links: [{catalog: pcie4-x16, between: [ga, gb]}]
models:
  - name: m
    card: pi0_tiny
    dtype: auto
    partition: {name: block_split, params: {stage: prefix, after_block: 1, first: ga, second: gb}}
workload: [{model: m, rate_hz: 20, duration_s: 0.2}]
)");
  EXPECT_FALSE(model_uses_cpu(g, g.models[0]));
  resolve_auto_dtypes(g, DType::F32);
  EXPECT_EQ(g.models[0].shape.dtype, DType::BF16);
}

// V-AEFusion in a real run: each request's stale action steps start with it on the action
// core group, beside its VLM, and its fresh steps only after both.
TEST(Runtime, VAeFusionRunsTheStaleStepsBesideTheVlm) {
  Scenario s = scenario(R"(
name: vaef-real
hardware:
  devices:
    - name: cpu0
      catalog: epyc-2vcpu
      core_groups: [{name: vlm, cores: 1}, {name: ae, cores: 1}]
models:
  - name: m
    card: pi0_tiny
    dtype: auto
    v_aefusion: {stale_steps: 4}
    placement:
      - {stages: [vision, prefix], device: cpu0.vlm}
      - {stages: [action], device: cpu0.ae}
workload: [{model: m, rate_hz: 10, duration_s: 0.5}]
policies: {queue: fifo, pipeline: serial}
)");
  resolve_auto_dtypes(s, native_cpu_dtype());
  const Plan p = plan_of(s);
  const int fork = p.models[0].fork;
  ASSERT_GE(fork, 1);
  const ExecResult r = execute(s, p, ExecuteOptions{});
  EXPECT_EQ(r.failed, 0u) << r.first_error;
  std::map<uint64_t, std::map<int, std::pair<double, double>>> runs;
  for (const TraceEvent& e : r.result.trace) runs[e.request][e.segment] = {e.start, e.end};
  ASSERT_FALSE(r.result.requests.empty());
  for (const RequestRecord& q : r.result.requests) {
    ASSERT_TRUE(q.finished()) << "request " << q.id;
    const auto& seg = runs[q.id];
    ASSERT_TRUE(seg.count(fork) && seg.count(fork + 1) && seg.count(fork - 1)) << "request " << q.id;
    EXPECT_GE(seg.at(fork + 1).first, std::max(seg.at(fork - 1).second, seg.at(fork).second) - 1e-9);
    EXPECT_LE(seg.at(fork).first, seg.at(fork - 1).second);  // it ran beside the VLM, not after
  }
}

// A GPU stream runs on the cuda executor: where it cannot start (no GPU, no driver, built
// without nvcc) the run is refused naming the device, the stream and why; where it can, the
// requests run.
TEST(Runtime, AGpuStreamRunsOnTheCudaExecutorOrIsRefusedNamingTheDevice) {
  Scenario s = scenario(R"(
name: gpu-stream
hardware:
  devices:
    - {name: gpu0, catalog: rtx4090}
models:
  - {name: g, card: pi0_tiny, dtype: bf16, placement: [{stages: [vision, prefix, action], device: gpu0}]}
workload: [{model: g, rate_hz: 20, duration_s: 0.2}]
)");
  try {
    const ExecResult r = execute(s, plan_of(s), ExecuteOptions{});
    ASSERT_FALSE(r.result.requests.empty());
    EXPECT_TRUE(r.result.requests.front().finished());
    EXPECT_EQ(r.failed, 0u) << r.first_error;
    ASSERT_FALSE(r.devices.empty());
    EXPECT_NE(r.devices.front().find("cuda"), std::string::npos) << r.devices.front();
  } catch (const ConfigError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("device 'gpu0'"), std::string::npos) << w;
    EXPECT_NE(w.find("cuda executor"), std::string::npos) << w;
  }
}

// A link between this host and a GPU copies for real, from pageable memory when the link says
// so: where no GPU can start the run is refused at the link (file, line, key); where one can,
// the requests run and the copies are named as the link declares them.
TEST(Runtime, AHostToGpuLinkCopiesForRealOrIsRefusedNamingTheLink) {
  Scenario s = scenario(R"(
name: gpu-link
hardware:
  devices:
    - {name: cpu0, catalog: epyc-2vcpu, core_groups: [{name: a, cores: 1}]}
    - {name: gpu0, catalog: rtx4090}
  links:
    - {name: pcie, catalog: pcie4-x16, between: [cpu0, gpu0], memory: pageable}
models:
  - name: g
    card: pi0_tiny
    dtype: fp32
    placement: [{stages: [vision], device: cpu0}, {stages: [prefix, action], device: gpu0}]
workload: [{model: g, rate_hz: 20, duration_s: 0.2}]
)");
  try {
    const ExecResult r = execute(s, plan_of(s), ExecuteOptions{});
    EXPECT_EQ(r.failed, 0u) << r.first_error;
    bool named = false;
    for (const std::string& d : r.devices) named |= d.find("h2d from pageable memory") != std::string::npos;
    EXPECT_TRUE(named);
  } catch (const ConfigError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("link 'pcie'"), std::string::npos) << w;
    EXPECT_NE(w.find("hardware.links"), std::string::npos) << w;
    EXPECT_NE(w.find(":8:"), std::string::npos) << w;  // the link's line
  }
}

// Fault injection: a real executor wrapped so that chosen runs throw or take longer.
class FaultyExecutor : public Executor {
 public:
  // fault(k) is called before the k-th run (from 1) of this executor; it may throw or sleep.
  FaultyExecutor(std::unique_ptr<Executor> inner, std::function<void(int)> fault)
      : inner_(std::move(inner)), fault_(std::move(fault)) {}
  int prepare(const OpGraph& g, const std::vector<int>& ops) override { return inner_->prepare(g, ops); }
  const SegmentTiming& run(int segment) override {
    if (++runs_ > warmups_) fault_(runs_ - warmups_);
    return inner_->run(segment);
  }
  std::vector<TensorInfo> inputs(int segment) const override { return inner_->inputs(segment); }
  void set_input(int segment, TensorKey key, const std::vector<float>& data) override {
    inner_->set_input(segment, key, data);
  }
  std::vector<float> get_output(int segment, int op) const override { return inner_->get_output(segment, op); }
  std::string name() const override { return "faulty " + inner_->name(); }
  std::string device() const override { return inner_->device(); }
  int warmups_ = 0;  // runs before the clock starts, never faulted

 private:
  std::unique_ptr<Executor> inner_;
  std::function<void(int)> fault_;
  int runs_ = 0;
};

ExecuteOptions faulty(std::function<void(int)> fault) {
  ExecuteOptions o;
  o.warmup = 0;
  o.make_executor = [fault](const Params& params, const ConfigNode& where) -> std::unique_ptr<Executor> {
    return std::make_unique<FaultyExecutor>(executor_registry().make("onednn", params, where), fault);
  };
  return o;
}

// Every request ended one way: finished, failed, or (cut off by the drain) neither.
void expect_accounted(const ExecResult& r, size_t requests) {
  ASSERT_EQ(r.result.requests.size(), requests);
  size_t failed = 0;
  for (const auto& q : r.result.requests) {
    EXPECT_FALSE(q.finished() && q.failed);
    failed += q.failed;
  }
  EXPECT_EQ(r.failed, failed);
}

TEST(RuntimeFaults, AKernelThatThrowsFailsItsRequestAndTheOthersRunOn) {
  alarm(120);
  Scenario s = scenario(kTwoGroups);
  ExecResult r = execute(s, plan_of(s), faulty([](int k) {
    if (k % 3 == 0) throw std::runtime_error("injected kernel fault");
  }));
  expect_accounted(r, 20);
  EXPECT_GT(r.failed, 0u);
  size_t finished = 0;
  for (const auto& q : r.result.requests) finished += q.finished();
  EXPECT_GT(finished, 0u);
  EXPECT_EQ(finished + r.failed, 20u);  // no request was left hanging
  EXPECT_NE(r.first_error.find("injected kernel fault"), std::string::npos) << r.first_error;
  EXPECT_NE(r.first_error.find("cpu0."), std::string::npos) << r.first_error;
  alarm(0);
}

TEST(RuntimeFaults, AWorkerThatDiesOnEveryRunFailsEveryRequestAndTheRunEndsAtOnce) {
  alarm(120);
  Scenario s = scenario(kTwoGroups);
  ExecResult r = execute(s, plan_of(s), faulty([](int) { throw 42; }));  // not a std::exception
  expect_accounted(r, 20);
  EXPECT_EQ(r.failed, 20u);
  EXPECT_NE(r.first_error.find("not a std::exception"), std::string::npos) << r.first_error;
  EXPECT_LT(r.result.end_time, s.arrivals_end() + 1.0);  // not held to the 5 s drain
  alarm(0);
}

TEST(RuntimeFaults, AFailedBatchFailsEveryRequestInIt) {
  alarm(120);
  Scenario s = scenario(batched_two_groups());
  // Group a's executor (made first) takes 50 ms on its first run, so requests 1-3 queue behind
  // request 0 and run next as one batch, and that run throws: exactly those three fail.
  ExecuteOptions o = faulty([](int k) {
    if (k == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (k == 2) throw std::runtime_error("injected batch fault");
  });
  auto faulty_make = o.make_executor;
  int made = 0;
  o.make_executor = [&](const Params& params, const ConfigNode& where) {
    return made++ == 0 ? faulty_make(params, where) : executor_registry().make("onednn", params, where);
  };
  ExecResult r = execute(s, plan_of(s), o);
  expect_accounted(r, 8);
  EXPECT_EQ(r.failed, 3u);
  for (uint64_t id : {1, 2, 3}) EXPECT_TRUE(r.result.requests[id].failed) << id;
  for (uint64_t id : {0, 4, 5, 6, 7}) EXPECT_TRUE(r.result.requests[id].finished()) << id;
  alarm(0);
}

TEST(RuntimeFaults, AnExecutorFarSlowerThanTheDeadlineLeavesRequestsUnfinishedAndTheRunEnds) {
  alarm(120);
  std::string yaml = kTwoGroups;
  yaml.replace(yaml.find("drain_s: 5"), 10, "drain_s: 0.2");
  yaml.replace(yaml.find("duration_s: 0.5}"), 16, "duration_s: 0.5, deadline_ms: 20}");
  Scenario s = scenario(yaml);
  // ~100x the tiny model's few milliseconds, well past its 20 ms deadline.
  ExecResult r = execute(s, plan_of(s), faulty([](int) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }));
  expect_accounted(r, 20);
  EXPECT_EQ(r.failed, 0u);
  size_t unfinished = 0, met = 0;
  for (const auto& q : r.result.requests) {
    unfinished += !q.finished();
    met += q.met();
  }
  EXPECT_GT(unfinished, 10u);
  EXPECT_EQ(met, 0u);
  // Stopped at arrivals end + drain, plus at most the segments then running (0.3 s each).
  EXPECT_LT(r.result.end_time, s.arrivals_end() + s.drain_s + 1.0);
  alarm(0);
}

// One core group running the whole tiny model, overloaded many times over (1000 requests a
// second for 0.5 s, each taking milliseconds), with a 0.5 s drain and a deadline.
const char* kOverloaded = R"(
name: overloaded
hardware:
  devices:
    - {name: cpu0, catalog: epyc-2vcpu, core_groups: [{name: a, cores: 1}]}
models:
  - {name: tiny, card: pi0_tiny, dtype: fp32}
workload:
  - {name: cam, model: tiny, rate_hz: 1000, duration_s: 0.5, deadline_ms: 100}
policies: {pipeline: async}
drain_s: 0.5
)";

// Counts of a run's records: finished, failed, neither (unfinished).
struct Accounting {
  size_t finished = 0, failed = 0, unfinished = 0, met = 0;
};
Accounting account(const ExecResult& r) {
  Accounting a;
  for (const RequestRecord& q : r.result.requests) {
    a.finished += q.finished();
    a.failed += q.failed;
    a.unfinished += !q.finished() && !q.failed;
    a.met += q.met();
    EXPECT_FALSE(q.finished() && q.failed) << q.id;
  }
  return a;
}

// The run ends at arrivals end + drain_s as a simulation does: the workers stop taking
// queued work there (a segment running may finish), and what did not finish is recorded
// unfinished, a missed deadline in the report. (Before: the workers emptied their queues
// after the drain, and every request finished, 3.5 to 4.8 s into a run planned to end at 1 s.)
TEST(Runtime, AnOverloadedRunEndsAtItsDrainWithTheRestUnfinished) {
  alarm(120);
  const Scenario s = scenario(kOverloaded);
  const Plan p = plan_of(s);
  ExecuteOptions o;
  o.warmup = 1;
  const ExecResult r = execute(s, p, o);
  // Every arrival was issued and has its record.
  ASSERT_EQ(r.result.requests.size(), 500u);
  const Accounting a = account(r);
  EXPECT_EQ(a.failed, 0u) << r.first_error;
  EXPECT_GT(a.finished, 0u);
  EXPECT_GT(a.unfinished, 100u);  // several seconds of work were left at the drain's end
  EXPECT_EQ(a.finished + a.unfinished, 500u);
  EXPECT_TRUE(r.result.stopped.empty()) << "the drain is the run's end, not a stop: " << r.result.stopped;
  // Within twice the run's planned span (arrivals and drain), not the backlog's.
  const double planned = s.arrivals_end() + s.drain_s;
  EXPECT_LT(r.result.end_time, 2 * planned) << "ran " << r.result.end_time << " s of a planned " << planned;
  const Report rep = make_report(s, p, r.result, "execute");
  EXPECT_EQ(rep.requests, 500u);
  EXPECT_EQ(rep.finished, a.finished);
  EXPECT_LE(rep.deadline_attainment, static_cast<double>(a.finished) / 500);  // unfinished ones missed
  alarm(0);
}

// The stop hook ends a run at once, as Ctrl-C does a simulation: arrivals stop, queued work
// does not start, and the result is partial, with every request issued until then in it.
TEST(Runtime, AStopHookEndsTheRunAtOnceWithAPartialResult) {
  alarm(120);
  std::string yaml = kOverloaded;
  yaml.replace(yaml.find("duration_s: 0.5"), 15, "duration_s: 5");
  yaml.replace(yaml.find("drain_s: 0.5"), 12, "drain_s: 5");
  const Scenario s = scenario(yaml);
  const Plan p = plan_of(s);
  ExecuteOptions o;
  o.warmup = 1;
  // Fires 0.5 s after the clock started (the first progress call, 16 arrivals in).
  std::optional<std::chrono::steady_clock::time_point> started;
  o.progress = [&](double) {
    if (!started) started = std::chrono::steady_clock::now();
  };
  int asked = 0;
  o.should_stop = [&]() -> std::string {
    ++asked;
    return started && std::chrono::steady_clock::now() - *started > std::chrono::milliseconds(500) ? "test stop" : "";
  };
  const ExecResult r = execute(s, p, o);
  EXPECT_EQ(r.result.stopped, "test stop");
  EXPECT_GT(asked, 10);  // asked as the run went (every 10-50 ms), not once
  // Cut where it stopped, long before the 5 s of arrivals: the horizon is the stop, and the
  // run ended soon after it (the segment then running).
  EXPECT_LT(r.result.horizon, s.arrivals_end() / 4);
  EXPECT_LT(r.result.end_time, 2 * r.result.horizon);
  // Every request issued until the stop has its record, finished or unfinished.
  ASSERT_FALSE(r.result.requests.empty());
  EXPECT_LT(r.result.requests.size(), 2500u);
  const Accounting a = account(r);
  EXPECT_EQ(a.failed, 0u) << r.first_error;
  EXPECT_GT(a.finished, 0u);
  EXPECT_GT(a.unfinished, 0u);  // overloaded: a queue was left
  EXPECT_EQ(a.finished + a.unfinished, r.result.requests.size());
  for (const RequestRecord& q : r.result.requests) EXPECT_LE(q.arrival, r.result.horizon) << q.id;
  const Report rep = make_report(s, p, r.result, "execute");
  EXPECT_EQ(rep.partial, "test stop");
  EXPECT_EQ(rep.requests, r.result.requests.size());
  alarm(0);
}

// The command line's wiring: SIGTERM to the process (any of its threads may take it) ends a
// real run at once with a partial result, and the process lives on to write it.
TEST(Runtime, SigtermThroughStopSignalsEndsTheRunWithAPartialResult) {
  alarm(120);
  std::string yaml = kOverloaded;
  yaml.replace(yaml.find("duration_s: 0.5"), 15, "duration_s: 5");
  const Scenario s = scenario(yaml);
  StopSignals signals;
  ExecuteOptions o;
  o.warmup = 1;
  std::thread killer;
  o.progress = [&](double) {  // 0.3 s after the clock started
    if (!killer.joinable())
      killer = std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        kill(getpid(), SIGTERM);
      });
  };
  o.should_stop = [] { return StopSignals::reason(); };
  const ExecResult r = execute(s, plan_of(s), o);
  if (killer.joinable()) killer.join();
  EXPECT_EQ(r.result.stopped, "terminated (SIGTERM)");
  EXPECT_EQ(StopSignals::exit_status(), 143);
  EXPECT_LT(r.result.end_time, s.arrivals_end() / 4);
  ASSERT_FALSE(r.result.requests.empty());
  const Accounting a = account(r);
  EXPECT_EQ(a.finished + a.unfinished, r.result.requests.size());
  alarm(0);
}

// A stop before the clock starts (during the warmup) runs nothing and says so.
TEST(Runtime, AStopDuringTheWarmupRunsNothing) {
  alarm(120);
  const Scenario s = scenario(kOverloaded);
  ExecuteOptions o;
  o.should_stop = [] { return std::string("at once"); };
  const ExecResult r = execute(s, plan_of(s), o);
  EXPECT_EQ(r.result.stopped, "at once");
  EXPECT_TRUE(r.result.requests.empty());
  EXPECT_TRUE(r.result.trace.empty());
  EXPECT_LT(r.result.end_time, s.arrivals_end());
  alarm(0);
}

TEST(RuntimeFaults, RefusesACoreGroupWhoseCpusThisProcessMayNotRunOn) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "needs two allowed CPUs to take one away";
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(allowed_cpus().front(), &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  Scenario s = scenario(kTwoGroups);  // core groups on CPUs 0 and 1
  std::string what;
  try {
    execute(s, plan_of(s), ExecuteOptions{});
  } catch (const ConfigError& e) {
    what = e.what();
  }
  sched_setaffinity(0, sizeof saved, &saved);
  EXPECT_NE(what.find("may not run on"), std::string::npos) << what;
}

// A live arm (ExecuteOptions::arm) ticks through a real run of a control stream: every tick
// accounted for, chunks in effect never going back to an older one, and (timing-free) the
// same chunks taking effect as the arm stepped over the measured times afterwards.
TEST(Runtime, ALiveArmTicksThroughTheRunAndConsumesTheChunksReallyInferred) {
  // pi0_tiny on one core (a one-core group, as every runtime test: TSan cannot see OpenMP's
  // barriers, scripts/sanitize.sh) driving a robot at 50 actions/s that asks every 5 actions for 1 s.
  Scenario s = scenario(
      "name: live-arm\nhardware: {devices: [{name: cpu0, catalog: epyc-2vcpu, core_groups: [{name: all, cores: 1}]}]}\n"
      "models: [{name: tiny, card: pi0_tiny, dtype: fp32, placement: [{stages: [vision, prefix, action], device: cpu0.all}]}]\n"
      "workload: [{name: arm, model: tiny, duration_s: 1, control: {hz: 50, execute: 5, capture_ms: 20, actuation_ms: 10}}]\n"
      "drain_s: 5\n");
  Plan p = plan_of(s);
  ExecuteOptions o;
  o.warmup = 1;
  o.arm = true;
  const ExecResult er = execute(s, p, o);
  ASSERT_EQ(er.arms.size(), 1u);
  const ArmRun& arm = er.arms[0];
  const ControlReport cr = make_control_report(s, er.result);
  ASSERT_EQ(cr.streams.size(), 1u);
  EXPECT_EQ(arm.chunks.size(), cr.streams[0].requests);
  EXPECT_GE(arm.ticks.size(), 45u);  // 1 s at 50 Hz, from time 0
  EXPECT_EQ(arm.waiting_ticks + arm.executed + arm.dry_ticks + arm.idle_ticks, arm.ticks.size());
  EXPECT_GT(arm.executed, 0u);
  int newest = -1;
  for (const ArmTick& t : arm.ticks) {
    EXPECT_GE(t.chunk, newest) << "tick " << t.k;
    newest = std::max(newest, t.chunk);
    EXPECT_GE(t.late_s, 0) << "tick " << t.k;
  }
  // The live arm learns of a chunk under the run's lock; one held past the 10 ms actuation could
  // let a chunk go unseen at its first tick, hence one chunk of slack.
  const ArmRun model = control_arm(s, er.result, cr, cr.streams[0]);
  EXPECT_GT(model.ran, 0u);
  EXPECT_LE(std::abs(static_cast<long>(arm.ran) - static_cast<long>(model.ran)), 1L);
}

}  // namespace
}  // namespace vlasim
