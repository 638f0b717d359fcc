// Scheduler policies' decisions on hand-built queues (no simulation): which item a queue
// policy picks, and which batch a batching policy forms around it.
#include <gtest/gtest.h>

#include <vector>

#include "scheduler/policy.h"

namespace vlasim {
namespace {

WorkItem item(uint64_t request, int model, int segment, double ready, double deadline) {
  WorkItem w;
  w.request = request;
  w.model = model;
  w.plan = model;
  w.segment = segment;
  w.arrival = ready;
  w.ready = ready;
  w.deadline = deadline;
  return w;
}

size_t pick(const std::string& policy, const std::vector<WorkItem>& q) {
  auto p = queue_policies().make(policy, Params(), ConfigNode());
  UnitView v;
  v.queue = q;
  return p->pick(v);
}

TEST(QueuePolicy, EsfServesTheModelWhoseHeadIsDueFirstWhereEdfServesTheDueItem) {
  // Model 0's head is due at 10, its second item at 2; model 1's only item at 5.
  std::vector<WorkItem> q = {item(0, 0, 0, 0.0, 10), item(1, 0, 0, 1.0, 2), item(2, 1, 0, 0.5, 5)};
  EXPECT_EQ(pick("edf", q), 1u);  // the item due first, wherever it stands in its model's queue
  EXPECT_EQ(pick("esf", q), 2u);  // model 1's head (5) is due before model 0's head (10)
  EXPECT_EQ(pick("fifo", q), 0u);
  q[2].deadline = 20;             // now model 0's head is due first
  EXPECT_EQ(pick("esf", q), 0u);
}

TEST(QueuePolicy, EsfBreaksTiesByTheOlderHead) {
  std::vector<WorkItem> q = {item(3, 1, 0, 2.0, 5), item(1, 0, 0, 1.0, 5)};
  EXPECT_EQ(pick("esf", q), 1u);
}

BatchChoice form(const std::string& policy, const std::vector<WorkItem>& q, size_t lead, int max_batch) {
  auto p = batch_policies().make(policy, Params(), ConfigNode());
  UnitView v;
  v.queue = q;
  return p->form(v, lead, max_batch);
}

TEST(BatchPolicy, FormsAroundTheLeadFromItsModelAndSegmentOnlyEarliestDeadlineFirst) {
  std::vector<WorkItem> q = {item(0, 0, 0, 0.0, 9),   // same model and segment as the lead
                             item(1, 1, 0, 0.1, 1),   // another model
                             item(2, 0, 1, 0.2, 1),   // the lead's model, another segment
                             item(3, 0, 0, 0.3, 4),   // the lead
                             item(4, 0, 0, 0.4, 3)};  // same model and segment, due earlier
  BatchChoice d = form("dynamic", q, 3, 8);
  EXPECT_EQ(d.items, (std::vector<size_t>{3, 4, 0}));
  EXPECT_EQ(d.size, 4);  // dynamic: 3 taken, run at their bucket (the next power of two)
  BatchChoice f = form("fixed", q, 3, 8);
  EXPECT_EQ(f.items, d.items);
  EXPECT_EQ(f.size, 8);  // fixed: padded to the unit's batch size
  BatchChoice two = form("dynamic", q, 3, 2);
  EXPECT_EQ(two.items, (std::vector<size_t>{3, 4}));  // the earlier-due one fills the last place
  EXPECT_EQ(two.size, 2);
  EXPECT_EQ(form("dynamic", q, 3, 3).size, 3);  // a bucket is at most the unit's size
  EXPECT_EQ(form("fixed", q, 1, 4).items, (std::vector<size_t>{1}));
}

TEST(BatchPolicy, SizesAreWhatAPlanMustCost) {
  auto fixed = batch_policies().make("fixed", Params(), ConfigNode());
  auto dynamic = batch_policies().make("dynamic", Params(), ConfigNode());
  EXPECT_EQ(fixed->sizes(4), (std::vector<int>{4}));
  EXPECT_EQ(dynamic->sizes(4), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(dynamic->sizes(6), (std::vector<int>{1, 2, 4, 6}));
  EXPECT_EQ(fixed->default_size(), 1);
}

TEST(BatchPolicy, SizeOutOfRangeIsRefusedAtItsKey) {
  ConfigNode n = ConfigNode::load_string("size: 0", "batching.yaml");
  try {
    batch_policies().make("fixed", Params(n), n);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "size");
    EXPECT_NE(std::string(e.what()).find("between 1 and"), std::string::npos);
  }
  ConfigNode ok = ConfigNode::load_string("size: 8", "batching.yaml");
  EXPECT_EQ(batch_policies().make("dynamic", Params(ok), ok)->default_size(), 8);
}

}  // namespace
}  // namespace vlasim
