// Each card under tests/data/broken_cards/ is pi0_tiny with one mistake; loading it must
// throw ConfigError naming the file, a line and the offending key.
#include <gtest/gtest.h>

#include "models/builder.h"

namespace vlasim {
namespace {

struct Broken {
  std::string file;     // without .yaml
  std::string key;      // expected ConfigError::key()
  std::string message;  // fragment of the message
};

std::ostream& operator<<(std::ostream& os, const Broken& b) { return os << b.file; }

const std::vector<Broken> kBroken = {
    {"malformed_yaml", "", "malformed YAML"},
    {"missing_width", "components[0].width", "missing required key"},
    {"unknown_type", "components[1].type", "valid types are: vit, encoder, projector"},
    {"negative_depth", "components[2].depth", "positive"},
    {"zero_heads", "components[0].heads", "positive"},
    {"vit_head_dim_mismatch", "components[0].head_dim", "must equal width"},
    {"expert_kv_heads_mismatch", "components[3].kv_heads", "prefix decoder's kv_heads"},
    {"expert_depth_mismatch", "components[3].depth", "prefix decoder's depth"},
    {"projector_width_mismatch", "components[1].dims", "input width 128"},
    {"decoder_width_mismatch", "components[2].width", "has width 256"},
    {"unknown_key", "components[0].mpl", "valid keys are"},
    {"missing_defaults", "defaults", "missing required key"},
    {"bad_activation", "components[0].act", "unknown activation 'swish'"},
    {"views_over_max", "defaults.views", "exceed max_views"},
    {"unknown_input", "components[1].inputs[0]", "not an earlier component"},
    {"name_mismatch", "name", "must match its file name"},
    {"zero_steps", "defaults.steps", "between 1 and"},
    {"kv_heads_not_dividing", "components[2].kv_heads", "must divide heads"},
    {"bad_dtype", "defaults.dtype", "unknown dtype 'fp4'"},
    {"unknown_stage", "components[1].stage", "unknown stage 'perception'"},
    {"duplicate_component", "components[1].name", "duplicate component name"},
    {"unknown_top_key", "max_cameras", "valid keys are"},
    {"patch_not_dividing", "components[0].patch", "must divide image_size"},
    {"not_a_number", "components[0].mlp", "expected an integer"},
    {"unknown_prefix", "components[3].prefix", "not an earlier decoder"},
    {"weights_from_unknown", "components[3].weights_from", "names no earlier component"},
    {"weights_from_other_type", "components[3].weights_from", "is of type decoder, this component of type expert"},
    {"weights_from_differs", "components[4].weights_from", "key 'depth' differs"},
    {"weights_from_other_dtype", "components[4].weights_from", "key 'dtype' differs"},
    {"component_bad_dtype", "components[0].dtype", "unknown dtype 'fp8'"},
    {"weights_from_other_input_width", "components[5].weights_from", "shares weights"},
    {"weights_from_on_ar_decode", "components[4].weights_from", "already uses its decoder's weights"},
    {"ar_decode_other_dtype", "components[4].dtype", "must be the decoder's (bf16)"},
};

class BrokenCard : public ::testing::TestWithParam<Broken> {};

TEST_P(BrokenCard, FailsWithConfigErrorAtTheOffendingKey) {
  const Broken& b = GetParam();
  const std::string path =
      std::string(VLASIM_SOURCE_DIR) + "/tests/data/broken_cards/" + b.file + ".yaml";
  try {
    load_card(path);
    FAIL() << b.file << " loaded without error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_GT(e.line(), 0) << e.what();
    EXPECT_EQ(e.key(), b.key) << e.what();
    EXPECT_NE(e.message().find(b.message), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Cards, BrokenCard, ::testing::ValuesIn(kBroken),
                         [](const auto& info) { return info.param.file; });

TEST(BrokenCardSet, EveryFileInTheFolderIsCovered) {
  std::vector<std::string> files =
      card_names(std::string(VLASIM_SOURCE_DIR) + "/tests/data/broken_cards");
  EXPECT_EQ(files.size(), kBroken.size());
  for (const std::string& f : files) {
    bool listed = false;
    for (const Broken& b : kBroken) listed = listed || b.file == f;
    EXPECT_TRUE(listed) << f << " has no expectation";
  }
}

TEST(BrokenCardSet, MissingFileIsAConfigError) {
  EXPECT_THROW(load_card("/nonexistent/card.yaml"), ConfigError);
}

}  // namespace
}  // namespace vlasim
