// OpGraph itself: ids, edges, adjacency, cost sums and parameter de-duplication.
#include "models/graph.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace vlasim {
namespace {

Op make(const std::string& name, Stage stage, double flops, const std::string& wid = "",
        double weight_bytes = 0, int block = -1) {
  Op o;
  o.name = name;
  o.stage = stage;
  o.flops = flops;
  o.weight_id = wid;
  o.weight_bytes = weight_bytes;
  o.block = block;
  return o;
}

TEST(OpGraph, AddAssignsSequentialIdsEqualToVertexIndex) {
  OpGraph g;
  EXPECT_EQ(g.add(make("a", Stage::Vision, 1)), 0);
  EXPECT_EQ(g.add(make("b", Stage::Vision, 1)), 1);
  EXPECT_EQ(g.add(make("c", Stage::Prefix, 1)), 2);
  ASSERT_EQ(g.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(g.op(i).id, i);
  EXPECT_EQ(g.op(1).name, "b");
}

TEST(OpGraph, CheckRoomRefusesWhatWouldPassTheOpLimit) {
  OpGraph g;
  g.add(make("a", Stage::Vision, 1));
  EXPECT_NO_THROW(g.check_room(kMaxGraphOps - 1));
  EXPECT_THROW(g.check_room(kMaxGraphOps), GraphTooLarge);
  EXPECT_THROW(g.check_room(static_cast<size_t>(-1)), GraphTooLarge);  // no wrap-around
}

TEST(OpGraph, DependRecordsBytesAndAdjacencyInBothDirections) {
  OpGraph g;
  for (const char* n : {"a", "b", "c", "d"}) g.add(make(n, Stage::Prefix, 0));
  g.depend(0, 2, 100);
  g.depend(1, 2, 50);
  g.depend(0, 3, 7);
  EXPECT_EQ(g.preds(2), (std::vector<int>{0, 1}));
  EXPECT_EQ(g.succs(0), (std::vector<int>{2, 3}));
  EXPECT_TRUE(g.preds(0).empty());
  EXPECT_TRUE(g.succs(3).empty());
  EXPECT_DOUBLE_EQ(g.edge_bytes(0, 2), 100);
  EXPECT_DOUBLE_EQ(g.edge_bytes(1, 2), 50);
  EXPECT_DOUBLE_EQ(g.edge_bytes(2, 0), 0);  // direction matters
  EXPECT_DOUBLE_EQ(g.edge_bytes(1, 3), 0);  // no edge
}

TEST(OpGraph, DependRejectsBackwardSelfAndDanglingEdges) {
  OpGraph g;
  g.add(make("a", Stage::Prefix, 0));
  g.add(make("b", Stage::Prefix, 0));
  EXPECT_THROW(g.depend(1, 0, 1), std::logic_error);
  EXPECT_THROW(g.depend(1, 1, 1), std::logic_error);
  EXPECT_THROW(g.depend(0, 5, 1), std::logic_error);
  EXPECT_THROW(g.depend(-1, 1, 1), std::logic_error);
  EXPECT_NO_THROW(g.depend(0, 1, 1));
}

TEST(OpGraph, FlopsSumOverAllOpsAndPerStage) {
  OpGraph g;
  g.add(make("v", Stage::Vision, 10));
  g.add(make("p", Stage::Prefix, 20));
  g.add(make("a0", Stage::Action, 5));
  g.add(make("a1", Stage::Action, 5));
  EXPECT_DOUBLE_EQ(g.flops(), 40);
  EXPECT_DOUBLE_EQ(g.flops(Stage::Vision), 10);
  EXPECT_DOUBLE_EQ(g.flops(Stage::Action), 10);
  EXPECT_DOUBLE_EQ(g.flops(Stage::Decode), 0);
}

TEST(OpGraph, ParamBytesCountEachWeightIdOnce) {
  OpGraph g;
  g.add(make("p.qkv", Stage::Prefix, 0, "backbone.qkv", 1000));
  // An action expert's block used in two steps: same weight id, counted once.
  g.add(make("e.s0.qkv", Stage::Action, 0, "expert.qkv", 300));
  g.add(make("e.s1.qkv", Stage::Action, 0, "expert.qkv", 300));
  g.add(make("e.s0.attn", Stage::Action, 0));  // no weights
  // The same prefix weights reused by a decode step count for that stage too.
  g.add(make("d.s1.qkv", Stage::Decode, 0, "backbone.qkv", 1000));
  EXPECT_DOUBLE_EQ(g.param_bytes(), 1300);
  EXPECT_DOUBLE_EQ(g.param_bytes(Stage::Action), 300);
  EXPECT_DOUBLE_EQ(g.param_bytes(Stage::Prefix), 1000);
  EXPECT_DOUBLE_EQ(g.param_bytes(Stage::Decode), 1000);
  EXPECT_DOUBLE_EQ(g.param_bytes(Stage::Vision), 0);
}

TEST(OpGraph, BlocksIsMaxBlockIndexPlusOnePerStage) {
  OpGraph g;
  g.add(make("v.embed", Stage::Vision, 0, "", 0, -1));
  g.add(make("v.b0", Stage::Vision, 0, "", 0, 0));
  g.add(make("v.b3", Stage::Vision, 0, "", 0, 3));
  g.add(make("p.b17", Stage::Prefix, 0, "", 0, 17));
  g.add(make("h", Stage::Head, 0, "", 0, -1));
  EXPECT_EQ(g.blocks(Stage::Vision), 4);
  EXPECT_EQ(g.blocks(Stage::Prefix), 18);
  EXPECT_EQ(g.blocks(Stage::Head), 0);    // ops outside blocks only
  EXPECT_EQ(g.blocks(Stage::Action), 0);  // no ops
}

TEST(OpGraph, DtypeAndStageNamesRoundTrip) {
  EXPECT_EQ(dtype_bytes(DType::F32), 4);
  EXPECT_EQ(dtype_bytes(DType::BF16), 2);
  EXPECT_EQ(dtype_bytes(DType::F16), 2);
  EXPECT_EQ(dtype_bytes(DType::I8), 1);
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::I8}) {
    DType back;
    ASSERT_TRUE(parse_dtype(to_string(t), &back));
    EXPECT_EQ(back, t);
  }
  DType d;
  EXPECT_FALSE(parse_dtype("fp8", &d));
  for (Stage s : {Stage::Vision, Stage::Prefix, Stage::Action, Stage::Decode, Stage::Head}) {
    Stage back;
    ASSERT_TRUE(parse_stage(to_string(s), &back));
    EXPECT_EQ(back, s);
  }
  Stage s;
  EXPECT_FALSE(parse_stage("encode", &s));
}

}  // namespace
}  // namespace vlasim
