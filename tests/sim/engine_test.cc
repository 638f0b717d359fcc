// Engine behaviour on hand-built plans: processor sharing, pipelines, policies, determinism.
#include <gtest/gtest.h>

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "sim/engine/engine.h"

namespace vlasim {
namespace {

UnitDecl unit(const std::string& name, int cores = 0) {
  UnitDecl u;
  u.name = name;
  u.cores = cores;
  return u;
}

// A scenario and plan with one GPU (two streams) and one CPU core group, built by hand so
// the engine is tested apart from models and cost models.
struct Fixture {
  Scenario s;
  Plan p;

  Fixture() {
    DeviceInstance gpu;
    gpu.name = "gpu0";
    gpu.spec.type = DeviceType::Gpu;
    gpu.units = {unit("s0"), unit("s1")};
    DeviceInstance cpu;
    cpu.name = "cpu0";
    cpu.spec.type = DeviceType::Cpu;
    cpu.spec.numa_nodes = 1;
    cpu.units = {unit("g0", 1)};
    s.devices = {gpu, cpu};
    s.queue.name = "fifo";
    s.pipeline.name = "serial";
    s.drain_s = 100;
    p.domains = 2;
    p.domain_names = {"gpu0", "cpu0"};
    p.domain_resources = {2, 2};
    auto unit = [](std::string n, int dev, int u, DeviceType t, int dom) {
      UnitInfo ui;
      ui.name = n;
      ui.device = dev;
      ui.unit = u;
      ui.type = t;
      ui.domain = dom;
      ui.compute_resource = 0;
      ui.memory_resource = 1;
      return ui;
    };
    p.units = {unit("gpu0.s0", 0, 0, DeviceType::Gpu, 0), unit("gpu0.s1", 0, 1, DeviceType::Gpu, 0),
               unit("cpu0.g0", 1, 0, DeviceType::Cpu, 1)};
  }

  // Adds a model whose plan is the given segments: (unit, seconds, compute_frac, memory_frac).
  int add_model(std::vector<std::tuple<int, double, double, double>> segs) {
    ModelInstance mi;
    mi.name = "m" + std::to_string(s.models.size());
    s.models.push_back(mi);
    ModelPlan mp;
    mp.model = static_cast<int>(p.models.size());
    int prev = -1;
    for (auto [u, sec, c, m] : segs) {
      Segment seg;
      seg.unit = u;
      seg.seconds = sec;
      seg.compute_frac = c;
      seg.memory_frac = m;
      seg.stage_seconds[static_cast<int>(Stage::Prefix)] = sec;
      seg.label = "seg";
      mp.segments.push_back(seg);
      mp.alone_seconds += sec;
      if (u != prev) ++mp.pipeline_stages;
      prev = u;
    }
    p.models.push_back(mp);
    return mp.model;
  }

  // Gives model m's plan a batched variant: its segments at batch `size` take `seconds` each.
  void add_batch(int m, int size, double seconds) {
    BatchVariant v;
    v.size = size;
    v.segments = p.models[m].segments;
    for (Segment& seg : v.segments) {
      seg.seconds = seconds;
      seg.stage_seconds[static_cast<int>(Stage::Prefix)] = seconds;
    }
    p.models[m].batched.push_back(v);
  }

  // Batching policy `policy` with `depth` requests in flight per model, and unit 0 batching
  // up to `size`.
  void batching(const char* policy, int size, int depth) {
    s.batching.name = policy;
    s.pipeline.name = "async";
    s.pipeline.params = Params(ConfigNode::load_string("depth: " + std::to_string(depth), "<test>"));
    p.units[0].batch = size;
  }

  void add_stream(int model, double rate, double duration, double start = 0, double deadline = 0) {
    StreamDecl sd;
    sd.name = "st" + std::to_string(s.streams.size());
    sd.model = model;
    sd.rate_hz = rate;
    sd.duration_s = duration;
    sd.start_s = start;
    sd.deadline_s = deadline;
    s.streams.push_back(sd);
  }
};

TEST(Engine, SingleRequestTakesItsAloneTime) {
  Fixture f;
  int m = f.add_model({{0, 0.010, 1.0, 0.2}, {2, 0.005, 1.0, 0.1}});
  f.add_stream(m, 1.0, 0.5);  // one arrival at t=0
  SimResult r = simulate(f.s, f.p);
  ASSERT_EQ(r.requests.size(), 1u);
  EXPECT_NEAR(r.requests[0].latency(), 0.015, 1e-9);
}

TEST(Engine, TwoComputeBoundStreamsShareSmsAndTakeTwiceAsLong) {
  Fixture f;
  int a = f.add_model({{0, 0.010, 1.0, 0.1}});
  int b = f.add_model({{1, 0.010, 1.0, 0.1}});
  f.add_stream(a, 1.0, 0.5);
  f.add_stream(b, 1.0, 0.5);
  SimResult r = simulate(f.s, f.p);
  ASSERT_EQ(r.requests.size(), 2u);
  EXPECT_NEAR(r.requests[0].latency(), 0.020, 1e-9);
  EXPECT_NEAR(r.requests[1].latency(), 0.020, 1e-9);
}

TEST(Engine, ComputeBoundAndMemoryBoundStreamsOverlap) {
  // A (compute 1.0, memory 0.3) and B (compute 0.3, memory 1.0) both at full speed would
  // need 1.3 of each resource: both run at 1/1.3 until one ends. Less than serial (20 ms).
  Fixture f;
  int a = f.add_model({{0, 0.010, 1.0, 0.3}});
  int b = f.add_model({{1, 0.010, 0.3, 1.0}});
  f.add_stream(a, 1.0, 0.5);
  f.add_stream(b, 1.0, 0.5);
  SimResult r = simulate(f.s, f.p);
  EXPECT_NEAR(r.requests[0].latency(), 0.013, 1e-9);
  EXPECT_NEAR(r.requests[1].latency(), 0.013, 1e-9);
}

TEST(Engine, SmLimitedStreamLeavesTheRestToTheOther) {
  // With usage scaled by an SM share of 0.5 each, two compute-bound streams fit side by side.
  Fixture f;
  f.p.units[0].compute_share = 0.5;
  f.p.units[1].compute_share = 0.5;
  int a = f.add_model({{0, 0.010, 1.0, 0.0}});
  int b = f.add_model({{1, 0.010, 1.0, 0.0}});
  f.add_stream(a, 1.0, 0.5);
  f.add_stream(b, 1.0, 0.5);
  SimResult r = simulate(f.s, f.p);
  EXPECT_NEAR(r.requests[0].latency(), 0.010, 1e-9);
  EXPECT_NEAR(r.requests[1].latency(), 0.010, 1e-9);
}

TEST(Engine, AsyncPipelineThroughputIsSetBySlowerStage) {
  // Stage A 10 ms on the GPU, stage B 8 ms on the CPU, frames every 5 ms (overload).
  // Serial: one frame per 18 ms. Async: one per 10 ms.
  auto run = [](const char* pipeline) {
    Fixture f;
    f.s.pipeline.name = pipeline;
    int m = f.add_model({{0, 0.010, 1.0, 0.1}, {2, 0.008, 1.0, 0.1}});
    f.add_stream(m, 200.0, 1.0);
    f.s.drain_s = 0.001;  // stop soon after the last arrival
    SimResult r = simulate(f.s, f.p);
    size_t done = 0;
    for (auto& q : r.requests) done += q.finished();
    return static_cast<double>(done) / r.horizon;
  };
  double serial = run("serial"), async = run("async");
  EXPECT_NEAR(serial, 1.0 / 0.018, 2.0);
  EXPECT_NEAR(async, 1.0 / 0.010, 2.0);
}

TEST(Engine, EdfServesTheEarliestDeadlineFirst) {
  // Requests of three models queue at one unit; the third arrives last with the tightest
  // deadline: edf runs it before the second, fifo after (and it misses its deadline).
  Fixture f;
  f.s.queue.name = "edf";
  int m0 = f.add_model({{0, 0.010, 1.0, 0.0}});
  int m1 = f.add_model({{0, 0.010, 1.0, 0.0}});
  int m2 = f.add_model({{0, 0.010, 1.0, 0.0}});
  f.add_stream(m0, 1.0, 0.5, 0.000);
  f.add_stream(m1, 1.0, 0.5, 0.001, 1.0);
  f.add_stream(m2, 1.0, 0.5, 0.002, 0.020);
  SimResult edf = simulate(f.s, f.p);
  EXPECT_LT(edf.requests[2].end, edf.requests[1].end);
  f.s.queue.name = "fifo";
  SimResult fifo = simulate(f.s, f.p);
  EXPECT_LT(fifo.requests[1].end, fifo.requests[2].end);
  EXPECT_FALSE(fifo.requests[2].met());
  EXPECT_TRUE(edf.requests[2].met());
}

TEST(Engine, BackgroundLoadSlowsWorkOnlyWhileItLasts) {
  // Half the SMs taken from t = 1 s to t = 2 s: a compute-bound 10 ms segment takes 20 ms
  // inside that window and 10 ms outside it.
  Fixture f;
  int m = f.add_model({{0, 0.010, 1.0, 0.1}});
  f.add_stream(m, 1.0, 3.0, 0.5);  // arrivals at 0.5, 1.5, 2.5
  BackgroundLoad l;
  l.device = "gpu0";
  l.compute = 0.5;
  l.start_s = 1.0;
  l.end_s = 2.0;
  f.s.background.push_back(l);
  SimResult r = simulate(f.s, f.p);
  ASSERT_EQ(r.requests.size(), 3u);
  EXPECT_NEAR(r.requests[0].latency(), 0.010, 1e-9);
  EXPECT_NEAR(r.requests[1].latency(), 0.020, 1e-9);
  EXPECT_NEAR(r.requests[2].latency(), 0.010, 1e-9);
}

TEST(Engine, SameSeedGivesIdenticalResults) {
  auto run = [](uint64_t seed) {
    Fixture f;
    f.s.seed = seed;
    int m = f.add_model({{0, 0.004, 1.0, 0.2}, {2, 0.003, 0.5, 0.5}});
    f.add_stream(m, 100.0, 2.0);
    f.s.streams[0].arrival = "poisson";
    SimResult r = simulate(f.s, f.p);
    std::vector<double> v;
    for (auto& q : r.requests) v.push_back(q.end);
    return v;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

TEST(Engine, SeveralSimulationsRunInOneProcess) {
  for (int i = 0; i < 3; ++i) {
    Fixture f;
    int m = f.add_model({{0, 0.001, 1.0, 0.0}});
    f.add_stream(m, 100.0, 1.0);
    SimResult r = simulate(f.s, f.p);
    EXPECT_EQ(r.requests.size(), 100u);
  }
}

// Shared and lone jobs, started late in simulated time where a double's last place is
// coarser than the picosecond clock (2e5 s, 3e6 s) and where the clock itself is a nanosecond
// (5e7 s), take the same time as at time zero and the run ends. (These spun forever: a job due
// within rounding of now was rescheduled at now.) An alarm ends the process if one spins.
TEST(Engine, RequestsLateInSimulatedTimeFinishInTheirTimeAndTheRunEnds) {
  alarm(120);
  auto latencies = [](double start) {
    Fixture f;
    int a = f.add_model({{0, 0.0100001, 1.0, 0.3}, {2, 0.0031, 1.0, 0.0}});
    int b = f.add_model({{1, 0.0070003, 0.4, 1.0}});
    f.add_stream(a, 7.0, 3.0, start);
    f.add_stream(b, 13.0, 3.0, start + 0.0123);
    SimResult r = simulate(f.s, f.p);
    std::vector<double> v;
    for (const auto& q : r.requests) v.push_back(q.finished() ? q.latency() : -1);
    return v;
  };
  const std::vector<double> base = latencies(0);
  ASSERT_EQ(base.size(), 21u + 39u);
  for (double start : {2e5, 3e6, 5e7}) {
    SCOPED_TRACE(start);
    const std::vector<double> late = latencies(start);
    ASSERT_EQ(late.size(), base.size());
    for (size_t i = 0; i < base.size(); ++i) EXPECT_NEAR(late[i], base[i], 5e-8);
  }
  alarm(0);
}

// A scenario whose times fall between a nanosecond clock's ticks: segments of a fraction of a
// nanosecond past a whole one, shared and alone, a background load, and two streams whose
// arrivals are 0.3 ns apart, all starting at each of `starts` (arrivals 3 s long), spanning
// `span` seconds in all (the drain fills the rest). Returns each request's latency in arrival
// order (-1: unfinished).
std::vector<double> sub_tick_latencies(std::vector<double> starts, double span, double quantum = 1e-3) {
  Fixture f;
  int a = f.add_model({{0, 0.0100000003, 1.0, 0.3}, {2, 0.0031000002, 1.0, 0.0}});
  int b = f.add_model({{1, 0.0070000004, 0.4, 1.0}});
  for (double start : starts) {
    f.add_stream(a, 7.0, 3.0, start);
    f.add_stream(b, 13.0, 3.0, start + 0.0123);
    f.add_stream(a, 2.0, 3.0, start + 0.0123 + 3e-10);
    BackgroundLoad l;
    l.device = "gpu0";
    l.compute = 0.3;
    l.start_s = start + 1.00000000017;
    l.end_s = start + 2.00000000041;
    f.s.background.push_back(l);
  }
  f.s.drain_s = span - f.s.arrivals_end();
  SimOptions o;
  o.quantum_s = quantum;
  SimResult r = simulate(f.s, f.p, o);
  std::vector<double> v;
  for (const auto& q : r.requests) v.push_back(q.finished() ? q.latency() : -1);
  return v;
}

// Past 9.2e6 s of span the clock ticks in nanoseconds from time zero on: an event less than
// a tick ahead (a job's last fraction of a nanosecond, an arrival 0.3 ns after another, a
// background change) runs at the nearest tick instead of stepping the clock by zero ticks
// forever, whatever the quantum, and latencies stay within a few ticks of the picosecond
// clock's. (This spun in Calendar::run, --max-wall-s and Ctrl-C unheard: issue 28.) An alarm
// ends the process if it spins.
TEST(Engine, ANanosecondClockRunsEventsCloserThanATickAndTheRunEnds) {
  alarm(120);
  const std::vector<double> ps = sub_tick_latencies({0}, 100);
  ASSERT_EQ(ps.size(), 21u + 39u + 6u);
  for (double span : {9.3e6, 5e7}) {
    SCOPED_TRACE(span);
    const std::vector<double> ns = sub_tick_latencies({0}, span);
    ASSERT_EQ(ns.size(), ps.size());
    for (size_t i = 0; i < ps.size(); ++i) {
      ASSERT_GT(ns[i], 0) << i;
      EXPECT_NEAR(ns[i], ps[i], 2e-8) << i;
    }
    EXPECT_EQ(sub_tick_latencies({0}, span, 0), ns);  // the quantum changes no result
  }
  alarm(0);
}

// A run spanning exactly the documented limit (kMaxSimulatedSeconds), with the same requests
// at its start and in its last seconds, finishes with every request in its time (late ones
// within a few units in the last place of a double there, 15 ns).
TEST(Engine, ASpanAtTheDocumentedLimitFinishesInItsTime) {
  alarm(120);
  const std::vector<double> base = sub_tick_latencies({0}, 100);
  const std::vector<double> both = sub_tick_latencies({0, kMaxSimulatedSeconds - 5}, kMaxSimulatedSeconds);
  ASSERT_EQ(both.size(), 2 * base.size());
  for (size_t i = 0; i < both.size(); ++i) {
    ASSERT_GT(both[i], 0) << i;
    EXPECT_NEAR(both[i], base[i % base.size()], 1e-7) << i;
  }
  alarm(0);
}

TEST(Engine, RefusesASpanItsClockCannotHold) {
  Fixture f;
  int m = f.add_model({{0, 0.001, 1.0, 0.0}});
  f.add_stream(m, 1.0, 10.0, kMaxSimulatedSeconds);
  EXPECT_THROW(simulate(f.s, f.p), std::invalid_argument);
}

// Each simulation's SystemC context is freed by the next (a sweep runs thousands).
TEST(Engine, RepeatedSimulationsDoNotGrowTheHeap) {
  auto run = [] {
    Fixture f;
    int m = f.add_model({{0, 0.001, 1.0, 0.0}});
    f.add_stream(m, 10.0, 1.0);
    return simulate(f.s, f.p).requests.size();
  };
  for (int i = 0; i < 5; ++i) run();
  const size_t before = mallinfo2().uordblks;
  for (int i = 0; i < 200; ++i) ASSERT_EQ(run(), 10u);
  const size_t after = mallinfo2().uordblks;
  // A leaked context cost ~7.7 kB a run (1.5 MB here); allow a tenth of that.
  EXPECT_LT(after, before + 150000) << "heap grew by " << (after - before) << " bytes over 200 runs";
}

TEST(Engine, AStopRequestEndsTheRunEarlyWithWhatRanAndWhy) {
  Fixture f;
  int m = f.add_model({{0, 0.001, 1.0, 0.0}});
  f.add_stream(m, 100.0, 100.0);
  f.s.drain_s = 0.5;  // limit 100.5 s: 50 slices of 2.01 s
  SimOptions o;
  // Stop once the progress report has passed 10% (the end of the fifth slice); asks in
  // between (on wall time) hear no.
  double fraction = 0;
  o.progress = [&](const SimProgress& p) { fraction = p.fraction; };
  o.should_stop = [&]() -> std::string { return fraction >= 0.0999 ? "enough" : ""; };
  SimResult r = simulate(f.s, f.p, o);
  EXPECT_EQ(r.stopped, "enough");
  EXPECT_NEAR(r.horizon, 5 * 2.01, 1e-9);
  EXPECT_LE(r.end_time, r.horizon + 1e-9);
  EXPECT_NEAR(static_cast<double>(r.requests.size()), 100 * 5 * 2.01, 2);
  SimResult whole = simulate(f.s, f.p);
  EXPECT_TRUE(whole.stopped.empty());
  EXPECT_EQ(whole.requests.size(), 10000u);
}

// A stop is asked for on wall time (SimOptions::should_stop), not only where progress is
// reported: a run whose work all falls in its first 2% of simulated time (10 M requests,
// seconds of wall time) stops soon after it starts, long before that slice ends, and its
// records cover what ran. (It ran the whole slice first: --max-wall-s 5 stopped after 68 s.)
TEST(Engine, AStopRequestIsHeardInsideALongStretchOfWork) {
  alarm(300);
  Fixture f;
  int m = f.add_model({{0, 5e-6, 1.0, 0.0}});
  f.add_stream(m, 1e5, 100.0);
  f.s.drain_s = 4900;  // limit 5000 s: the first slice (100 s) holds every arrival
  SimOptions o;
  size_t records = 0;
  o.on_record = [&](const RequestRecord&) { ++records; };
  int asked = 0;
  o.should_stop = [&]() -> std::string { return ++asked, "stop"; };
  SimResult r = simulate(f.s, f.p, o);
  EXPECT_EQ(r.stopped, "stop");
  EXPECT_EQ(asked, 1);
  EXPECT_LT(r.horizon, 100.0);  // inside the first slice
  EXPECT_LE(r.end_time, r.horizon + 1e-9);
  EXPECT_GT(records, 0u);
  EXPECT_LT(records, 10000000u);
  EXPECT_NEAR(static_cast<double>(records), 1e5 * r.horizon, 3);
  alarm(0);
}

TEST(Engine, UnfinishedRequestsAreReportedNotDropped) {
  Fixture f;
  int m = f.add_model({{0, 0.100, 1.0, 0.0}});
  f.add_stream(m, 100.0, 1.0);  // 10x overload
  f.s.drain_s = 0.01;
  SimResult r = simulate(f.s, f.p);
  EXPECT_EQ(r.requests.size(), 100u);
  size_t done = 0;
  for (auto& q : r.requests) done += q.finished();
  EXPECT_GT(done, 5u);
  EXPECT_LT(done, 15u);
}

// queue_limit: an arrival that finds that many requests waiting (arrived, not started) is
// dropped: it never runs, its record says so, and it ends at once (a streamed run hands it
// on in order). Waiting never passes the limit; kept and streamed runs agree.
TEST(Engine, AQueueLimitDropsArrivalsBeyondItAndCountsThem) {
  Fixture f;
  int m = f.add_model({{0, 0.1003, 1.0, 0.0}});
  f.add_stream(m, 100.0, 1.0, 0.0005);  // 10x overload; no arrival at a completion's time
  f.s.drain_s = 0.5;
  f.s.queue_limit = 5;
  SimResult r = simulate(f.s, f.p);
  ASSERT_EQ(r.requests.size(), 100u);
  size_t dropped = 0, finished = 0;
  for (const RequestRecord& q : r.requests) {
    dropped += q.dropped;
    finished += q.finished();
    if (q.dropped) {
      EXPECT_TRUE(q.start < 0 && !q.finished()) << q.id;
    }
    // Waiting when q arrived (q itself not counted): earlier arrivals not dropped and not
    // started by then.
    size_t waiting = 0;
    for (const RequestRecord& e : r.requests)
      if (e.id < q.id && !e.dropped && !(e.start >= 0 && e.start <= q.arrival)) ++waiting;
    EXPECT_LE(waiting, 5u) << q.id;
    EXPECT_EQ(q.dropped, waiting == 5u) << q.id;
  }
  EXPECT_GT(dropped, 80u);
  EXPECT_LT(dropped, 90u);
  EXPECT_GE(finished, 10u);
  // Streamed: the same records, in order.
  std::vector<RequestRecord> streamed;
  SimOptions o;
  o.on_record = [&](const RequestRecord& q) { streamed.push_back(q); };
  simulate(f.s, f.p, o);
  ASSERT_EQ(streamed.size(), r.requests.size());
  for (size_t i = 0; i < streamed.size(); ++i) {
    EXPECT_EQ(streamed[i].id, i);
    EXPECT_EQ(streamed[i].dropped, r.requests[i].dropped) << i;
    EXPECT_EQ(streamed[i].end, r.requests[i].end) << i;
  }
  // Without the limit nothing is dropped.
  f.s.queue_limit = 0;
  for (const RequestRecord& q : simulate(f.s, f.p).requests) EXPECT_FALSE(q.dropped);
}

// A streamed run (constant memory) whose queues would grow past the memory limit under
// overload is refused before it starts, naming the overloaded unit, the backlog and
// queue_limit; with a queue_limit whose waiting requests fit it runs. The estimate is a
// lower bound: each unit alone at its best batch.
TEST(Engine, AnOverloadedStreamedRunIsRefusedBeforeItStartsUnlessItDrops) {
  Fixture f;
  int m = f.add_model({{0, 0.100, 1.0, 0.0}, {2, 0.010, 1.0, 0.0}});
  f.add_stream(m, 100.0, 1e5);  // 1e7 requests
  // A serial pipeline: one request in flight, 110 ms each, so the model serves 9.1 a second.
  SimWork serial = estimate_work(f.s, f.p, 20000);
  EXPECT_NEAR(serial.overload, 11.0, 1e-9);
  EXPECT_EQ(serial.bottleneck, "m0");
  EXPECT_NEAR(serial.backlog, 1e7 * (1 - 1 / 11.0), 1e3);
  // Four in flight: gpu0.s0 (100 ms a request) is the bottleneck, 10x over.
  f.s.pipeline.name = "async";
  f.s.pipeline.params = Params(ConfigNode::load_string("depth: 4", "<test>"));
  SimWork w = estimate_work(f.s, f.p, 20000);
  EXPECT_NEAR(w.overload, 10.0, 1e-9);
  EXPECT_EQ(w.bottleneck, "gpu0.s0");
  EXPECT_NEAR(w.backlog, 1e7 * 0.9, 1e3);
  SimOptions o;
  o.on_record = [](const RequestRecord&) {};
  try {
    check_work(f.s, w, o);
    FAIL() << "an overloaded streamed run accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    for (const char* part : {"gpu0.s0", "1000%", "9e+06", "queue_limit", "--max-memory-gb"})
      EXPECT_NE(what.find(part), std::string::npos) << part << ": " << what;
  }
  EXPECT_THROW(simulate(f.s, f.p, o), std::invalid_argument);
  // Kept records are refused as before (all 1e7 of them); streamed, dropping keeps it small.
  EXPECT_THROW(check_work(f.s, w, SimOptions{}), std::invalid_argument);
  f.s.queue_limit = 1000;
  const SimWork bounded = estimate_work(f.s, f.p, 20000);
  EXPECT_NEAR(bounded.backlog, 1e7 * 0.9, 1e3);
  EXPECT_LE(bounded.backlog_bytes, 1000 * 200.0 + 1);
  EXPECT_NO_THROW(check_work(f.s, bounded, o));
  EXPECT_NE(overload_note(f.s, bounded).find("dropped"), std::string::npos) << overload_note(f.s, bounded);
  // A queue_limit whose waiting requests would not fit is refused too.
  f.s.queue_limit = 100000000;
  EXPECT_THROW(check_work(f.s, estimate_work(f.s, f.p, 20000), o), std::invalid_argument);
  // A stream the units keep up with has no backlog.
  Fixture g;
  int n = g.add_model({{0, 0.005, 1.0, 0.0}});
  g.add_stream(n, 100.0, 1e5);
  EXPECT_EQ(estimate_work(g.s, g.p, 20000).backlog, 0);
  EXPECT_EQ(overload_note(g.s, estimate_work(g.s, g.p, 20000)), "");
}

// Past the estimate (two GPU streams each within its own unit's time but sharing the SMs),
// a streamed run whose waiting requests pass the memory limit stops there, saying why,
// instead of growing until it dies.
TEST(Engine, AStreamedRunWhoseQueuesOutgrowTheMemoryLimitStops) {
  Fixture f;
  int a = f.add_model({{0, 0.006, 1.0, 0.0}});
  int b = f.add_model({{1, 0.006, 1.0, 0.0}});
  f.add_stream(a, 100.0, 100.0);  // 60% of gpu0.s0, 60% of gpu0.s1: 120% of the SMs
  f.add_stream(b, 100.0, 100.0);
  f.s.pipeline.name = "async";
  f.s.pipeline.params = Params(ConfigNode::load_string("depth: 1000000", "<test>"));
  EXPECT_EQ(estimate_work(f.s, f.p, 0).backlog, 0);
  SimOptions o;
  o.trace_limit = 0;
  o.max_memory_bytes = 400 * 200;  // 400 requests' records
  size_t records = 0;
  o.on_record = [&](const RequestRecord&) { ++records; };
  SimResult r = simulate(f.s, f.p, o);
  EXPECT_NE(r.stopped.find("--max-memory-gb"), std::string::npos) << r.stopped;
  EXPECT_NE(r.stopped.find("queue_limit"), std::string::npos) << r.stopped;
  EXPECT_LT(r.horizon, 100.0);
  EXPECT_GT(records, 0u);
  // Unbounded memory: the run ends, overloaded.
  o.max_memory_bytes = 1e9;
  EXPECT_EQ(simulate(f.s, f.p, o).stopped, "");
}

TEST(Engine, QuantumChangesSystemCActivationsNotResults) {
  // Shared GPU streams, a CPU stage, Poisson arrivals, a background load, overload and a
  // drain that stops the run with work pending: every figure must be the same whatever the
  // quantum, down to the last bit.
  auto run = [](double quantum) {
    Fixture f;
    f.s.seed = 11;
    int a = f.add_model({{0, 0.004, 1.0, 0.2}, {2, 0.003, 0.5, 0.5}});
    int b = f.add_model({{1, 0.02, 0.6, 0.6}});
    f.add_stream(a, 150.0, 2.0);
    f.s.streams[0].arrival = "poisson";
    f.add_stream(b, 100.0, 2.0, 0.005);
    BackgroundLoad l;
    l.device = "gpu0";
    l.compute = 0.5;
    l.start_s = 0.5;
    l.end_s = 1.0;
    f.s.background = {l};
    f.s.drain_s = 0.01;
    SimOptions o;
    o.quantum_s = quantum;
    return simulate(f.s, f.p, o);
  };
  const SimResult base = run(0);
  EXPECT_THROW(run(-1e-3), std::invalid_argument);
  EXPECT_THROW(run(std::nan("")), std::invalid_argument);
  EXPECT_EQ(base.systemc_activations, base.activations);  // no two events at one time here
  size_t unfinished = 0;
  for (const auto& q : base.requests) unfinished += !q.finished();
  EXPECT_GT(unfinished, 0u);  // the limit cut work off
  for (double quantum : {1e-4, 1e-3, 0.05, 1e9}) {
    SCOPED_TRACE(quantum);
    const SimResult r = run(quantum);
    EXPECT_LT(r.systemc_activations, base.systemc_activations);
    EXPECT_EQ(r.activations, base.activations);
    EXPECT_EQ(r.end_time, base.end_time);
    ASSERT_EQ(r.requests.size(), base.requests.size());
    for (size_t i = 0; i < r.requests.size(); ++i) {
      const RequestRecord &x = r.requests[i], &y = base.requests[i];
      ASSERT_EQ(x.start, y.start) << i;
      ASSERT_EQ(x.end, y.end) << i;
      ASSERT_EQ(x.stages_done, y.stages_done) << i;
      for (int k = 0; k < kStages; ++k) {
        if (x.stage_done(k)) {
          ASSERT_EQ(x.stage_latency[k], y.stage_latency[k]) << i;
        }
      }
    }
    ASSERT_EQ(r.trace.size(), base.trace.size());
    for (size_t i = 0; i < r.trace.size(); ++i) ASSERT_EQ(r.trace[i].end, base.trace[i].end) << i;
    for (size_t d = 0; d < r.domains.size(); ++d) {
      EXPECT_EQ(r.domains[d].busy_seconds, base.domains[d].busy_seconds);
      EXPECT_EQ(r.domains[d].resource_usage, base.domains[d].resource_usage);
    }
  }
}

TEST(Engine, EventDueAtTheLimitDoesNotRunWhateverTheQuantum) {
  // One request at 0.09 s of 10 ms; arrivals end at 0.1 s, so with no drain the run stops
  // exactly when it would complete. SystemC does not run events due at sc_start's limit;
  // running ahead of SystemC must not either.
  auto finished = [](double quantum, double drain) {
    Fixture f;
    int m = f.add_model({{0, 0.01, 1.0, 0.0}});
    f.add_stream(m, 10.0, 0.01, 0.09);
    f.s.drain_s = drain;
    SimOptions o;
    o.quantum_s = quantum;
    SimResult r = simulate(f.s, f.p, o);
    EXPECT_EQ(r.requests.size(), 1u);
    return !r.requests.empty() && r.requests[0].finished();
  };
  EXPECT_FALSE(finished(0, 0));
  EXPECT_FALSE(finished(1e9, 0));
  EXPECT_TRUE(finished(0, 1e-9));  // a picosecond more, and it completes
  EXPECT_TRUE(finished(1e9, 1e-9));
}

TEST(Engine, SegmentTimesFollowTheirVariabilityQuantiles) {
  // Quantiles of a factor uniform on [0.5, 1.5]: unloaded requests (one segment of 10 ms,
  // arrivals 50 ms apart) take 10 ms times a uniform draw, repeatably for one seed.
  auto run = [](uint64_t seed, bool variable) {
    Fixture f;
    f.s.seed = seed;
    int m = f.add_model({{0, 0.010, 1.0, 0.1}});
    if (variable) f.p.models[m].segments[0].variability = {0.5, 1.0, 1.5};
    f.add_stream(m, 20.0, 20.0);  // 400 requests
    std::vector<double> lat;
    for (const auto& q : simulate(f.s, f.p).requests) lat.push_back(q.latency());
    return lat;
  };
  std::vector<double> lat = run(3, true);
  ASSERT_EQ(lat.size(), 400u);
  EXPECT_EQ(lat, run(3, true));
  EXPECT_NE(lat, run(4, true));
  std::sort(lat.begin(), lat.end());
  EXPECT_GE(lat.front(), 0.005 - 1e-9);
  EXPECT_LE(lat.back(), 0.015 + 1e-9);
  EXPECT_NEAR(lat[200], 0.010, 0.0008);  // median of the uniform
  EXPECT_NEAR(lat[40], 0.006, 0.0008);   // 10th percentile
  EXPECT_NEAR(lat[360], 0.014, 0.0008);  // 90th percentile
  for (double x : run(3, false)) EXPECT_NEAR(x, 0.010, 1e-9);  // none: every run alike
}

TEST(Engine, DynamicBatchRunsWhatIsWaitingOnceAtThatSize) {
  // Five requests of one model queue behind a first one on a unit that batches up to 4: the
  // first runs alone (10 ms); then 4 run as one batch (18 ms), then the last alone (10 ms).
  Fixture f;
  f.batching("dynamic", 4, 8);
  int m = f.add_model({{0, 0.010, 1.0, 0.0}});
  for (int b : {2, 4}) f.add_batch(m, b, 0.010 + 0.002 * b);
  for (int k = 0; k < 6; ++k) f.add_stream(m, 1.0, 0.5, k * 1e-4);
  SimResult r = simulate(f.s, f.p);
  ASSERT_EQ(r.requests.size(), 6u);
  EXPECT_NEAR(r.requests[0].end, 0.010, 1e-9);
  for (int k = 1; k <= 4; ++k) EXPECT_NEAR(r.requests[k].end, 0.028, 1e-9) << k;
  EXPECT_NEAR(r.requests[5].end, 0.038, 1e-9);
  ASSERT_EQ(r.trace.size(), 3u);  // one event per batch, with its size and items
  EXPECT_EQ(r.trace[1].batch, 4);
  EXPECT_EQ(r.trace[1].items, 4);
  EXPECT_EQ(r.units[0].segments, 3u);
}

TEST(Engine, DynamicBatchOfThreeRunsAtItsBucketOfFour) {
  Fixture f;
  f.batching("dynamic", 4, 8);
  int m = f.add_model({{0, 0.010, 1.0, 0.0}});
  for (int b : {2, 4}) f.add_batch(m, b, 0.010 + 0.002 * b);
  for (int k = 0; k < 4; ++k) f.add_stream(m, 1.0, 0.5, k * 1e-4);  // one alone, then three
  SimResult r = simulate(f.s, f.p);
  ASSERT_EQ(r.trace.size(), 2u);
  EXPECT_EQ(r.trace[1].items, 3);
  EXPECT_EQ(r.trace[1].batch, 4);
  EXPECT_NEAR(r.requests[3].end, 0.010 + 0.018, 1e-9);
}

TEST(Engine, FixedBatchPadsToItsSize) {
  // One request on a unit with fixed batches of 4 pays for the whole batch.
  Fixture f;
  f.batching("fixed", 4, 4);
  int m = f.add_model({{0, 0.010, 1.0, 0.0}});
  f.add_batch(m, 4, 0.018);
  f.add_stream(m, 1.0, 0.5);
  SimResult r = simulate(f.s, f.p);
  ASSERT_EQ(r.requests.size(), 1u);
  EXPECT_NEAR(r.requests[0].latency(), 0.018, 1e-9);
  ASSERT_EQ(r.trace.size(), 1u);
  EXPECT_EQ(r.trace[0].batch, 4);
  EXPECT_EQ(r.trace[0].items, 1);
}

TEST(Engine, BatchesHoldOneModelAndStage) {
  // Two models wait at a batching unit: each runs as its own batch, never mixed.
  Fixture f;
  f.batching("dynamic", 4, 4);
  int a = f.add_model({{0, 0.010, 1.0, 0.0}});
  int b = f.add_model({{0, 0.010, 1.0, 0.0}});
  for (int m : {a, b})
    for (int k : {2, 4}) f.add_batch(m, k, 0.012);
  for (int k = 0; k < 3; ++k) f.add_stream(a, 1.0, 0.5, 1e-4 * k);
  for (int k = 0; k < 2; ++k) f.add_stream(b, 1.0, 0.5, 1e-4 * k + 5e-5);
  SimResult r = simulate(f.s, f.p);
  for (const TraceEvent& e : r.trace)
    for (const RequestRecord& q : r.requests) {
      if (q.start == e.start) {
        EXPECT_EQ(q.model, e.model);
      }
    }
  ASSERT_EQ(r.trace.size(), 3u);  // a alone, then b's two (queued first), then a's two
  EXPECT_EQ(r.trace[1].items, 2);
  EXPECT_EQ(r.trace[2].items, 2);
  EXPECT_NE(r.trace[1].model, r.trace[2].model);
}

// The fixture's two GPU streams as a lockstep on a 100-SM GPU (s0 declared at 50 SMs):
// model A on s0, model B on s1, each one 10 ms segment at the declared split, costed at the
// SM counts the lockstep may give them; the table gives s0 70 SMs for (A, 1) with (B, 1).
struct LockstepFixture : Fixture {
  int a = 0, b = 0;
  LockstepFixture(bool guard) {
    s.devices[0].spec.sms = 100;
    p.units[0].compute_share = p.units[1].compute_share = 0.5;
    a = add_model({{0, 0.010, 1.0, 0.0}});
    b = add_model({{1, 0.010, 1.0, 0.0}});
    auto cost = [&](int m, int sms, double seconds) {
      Segment seg = p.models[m].segments[0];
      seg.seconds = seconds;
      seg.stage_seconds[static_cast<int>(Stage::Prefix)] = seconds;
      p.models[m].split[{0, 1, sms}] = seg;
    };
    cost(a, 100, 0.006), cost(a, 70, 0.008), cost(a, 50, 0.010);
    cost(b, 100, 0.005), cost(b, 30, 0.012), cost(b, 50, 0.010);
    LockstepPlan lp;
    lp.device = 0;
    lp.units[0] = 0;
    lp.units[1] = 1;
    lp.sms = 100;
    lp.static_first = 50;
    lp.guard = guard;
    lp.lut[SmLutKey{a, 1, b, 1}] = 70;
    p.locksteps = {lp};
    s.pipeline.name = "async";
  }
};

TEST(Engine, ALockstepWaitsForBothStreamsAndALoneBatchHasTheWholeGpu) {
  LockstepFixture f(true);
  f.add_stream(f.a, 1.0, 0.5, 0.0);
  f.add_stream(f.b, 1.0, 0.5, 0.0);  // arrives while A runs alone: waits for the next lockstep
  SimResult r = simulate(f.s, f.p);
  EXPECT_NEAR(r.requests[0].end, 0.006, 1e-9);          // A on all 100 SMs
  EXPECT_NEAR(r.requests[1].end, 0.006 + 0.005, 1e-9);  // then B on all 100 SMs
  EXPECT_EQ(r.locksteps, 2u);
}

TEST(Engine, ALockstepOfTwoBatchesSplitsTheSmsAsTheTableSays) {
  LockstepFixture f(true);
  f.add_stream(f.b, 1.0, 0.5, 0.000);  // B alone first (5 ms), while A and B2 arrive
  f.add_stream(f.a, 1.0, 0.5, 0.001);
  f.add_stream(f.b, 1.0, 0.5, 0.002);
  SimResult r = simulate(f.s, f.p);
  EXPECT_NEAR(r.requests[0].end, 0.005, 1e-9);
  EXPECT_NEAR(r.requests[1].end, 0.005 + 0.008, 1e-9);  // A on 70 SMs
  EXPECT_NEAR(r.requests[2].end, 0.005 + 0.012, 1e-9);  // B2 on the other 30
  EXPECT_EQ(r.locksteps, 2u);
  EXPECT_EQ(r.guard_kept, 0u);
}

TEST(Engine, TheGuardKeepsTheSplitThatMeetsTheTighterDeadline) {
  // B2 is due 13 ms after it arrives (at 15 ms): on the table's 30 SMs it would end at 17 ms,
  // on the previous split's 50 at 15 ms. The guard keeps 50/50; without it B2 misses.
  for (bool guard : {true, false}) {
    LockstepFixture f(guard);
    f.add_stream(f.b, 1.0, 0.5, 0.000);
    f.add_stream(f.a, 1.0, 0.5, 0.001);
    f.add_stream(f.b, 1.0, 0.5, 0.002, 0.013);
    SimResult r = simulate(f.s, f.p);
    SCOPED_TRACE(guard);
    EXPECT_EQ(r.guard_kept, guard ? 1u : 0u);
    EXPECT_NEAR(r.requests[2].end, guard ? 0.015 : 0.017, 1e-9);
    EXPECT_EQ(r.requests[2].met(), guard);
    EXPECT_NEAR(r.requests[1].end, guard ? 0.015 : 0.013, 1e-9);  // A pays for it
  }
}

TEST(Engine, BareLoopCountsEveryEvent) {
  uint64_t count = 0;
  double rate = bare_systemc_event_rate(20000, &count);
  EXPECT_EQ(count, 20000u);
  EXPECT_GT(rate, 0.0);
}

}  // namespace
}  // namespace vlasim
