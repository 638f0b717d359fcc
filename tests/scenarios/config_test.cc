// ConfigNode and Registry: errors name the file, the line and the key.
#include <gtest/gtest.h>

#include "scenarios/config.h"
#include "scenarios/registry.h"

namespace vlasim {
namespace {

ConfigError error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no ConfigError thrown";
  return ConfigError("", 0, 0, "", "");
}

TEST(ConfigNode, MissingKeyNamesFileLineAndPath) {
  ConfigNode n = ConfigNode::load_string("a:\n  b: 1\n  c:\n    d: 2\n", "x.yaml");
  ConfigError e = error_of([&] { n.required("a").required("c").required("e"); });
  EXPECT_EQ(e.file(), "x.yaml");
  EXPECT_EQ(e.key(), "a.c.e");
  EXPECT_EQ(e.line(), 4);
  EXPECT_NE(std::string(e.what()).find("x.yaml:4"), std::string::npos);
}

TEST(ConfigNode, MalformedYamlReportsTheLine) {
  ConfigError e = error_of([] { ConfigNode::load_string("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml"); });
  EXPECT_EQ(e.file(), "bad.yaml");
  EXPECT_GT(e.line(), 1);
  EXPECT_NE(e.message().find("malformed YAML"), std::string::npos);
}

TEST(ConfigNode, MissingFileIsAnError) {
  ConfigError e = error_of([] { ConfigNode::load_file("/nonexistent/file.yaml"); });
  EXPECT_NE(e.message().find("cannot open"), std::string::npos);
}

TEST(ConfigNode, UnknownKeyListsTheValidOnes) {
  ConfigNode n = ConfigNode::load_string("rate: 1\nrat: 2\n", "k.yaml");
  ConfigError e = error_of([&] { n.check_keys({"rate", "deadline"}); });
  EXPECT_EQ(e.key(), "rat");
  EXPECT_EQ(e.line(), 2);
  EXPECT_NE(e.message().find("rate, deadline"), std::string::npos);
}

TEST(ConfigNode, RejectsNonNumbersAndNegativeValues) {
  ConfigNode n = ConfigNode::load_string("a: abc\nb: -3\nc: 1.5x\nd: 4\n", "n.yaml");
  EXPECT_EQ(error_of([&] { n.required("a").as_double(); }).key(), "a");
  EXPECT_EQ(error_of([&] { n.get_positive("b"); }).line(), 2);
  EXPECT_EQ(error_of([&] { n.required("c").as_double(); }).key(), "c");
  EXPECT_EQ(error_of([&] { n.get_count("d", 1, 1, 3); }).key(), "d");
  EXPECT_DOUBLE_EQ(n.get_positive("d"), 4.0);
  EXPECT_DOUBLE_EQ(n.get_double("zz", 7.0), 7.0);
}

TEST(ConfigNode, SequenceItemsCarryTheirIndexInThePath) {
  ConfigNode n = ConfigNode::load_string("xs:\n  - {v: 1}\n  - {v: oops}\n", "s.yaml");
  auto items = n.required("xs").items();
  ConfigError e = error_of([&] { items[1].required("v").as_int(); });
  EXPECT_EQ(e.key(), "xs[1].v");
  EXPECT_EQ(e.line(), 3);
}

struct Part {
  virtual ~Part() = default;
  virtual int value() const = 0;
};
struct Fixed : Part {
  int v;
  explicit Fixed(int x) : v(x) {}
  int value() const override { return v; }
};

TEST(Registry, MakesByNameAndRejectsUnknownNamesAndParameters) {
  Registry<Part> r("part");
  r.add({"fixed", "a constant", {{"v", "the value", "3"}},
         [](const Params& p) { return std::make_unique<Fixed>(static_cast<int>(p.get_int("v", 3))); }});
  ConfigNode where = ConfigNode::load_string("name: fixd\nparams: {v: 5, w: 1}\n", "r.yaml");
  EXPECT_EQ(r.make("fixed", Params(), where)->value(), 3);
  ConfigNode good = ConfigNode::load_string("v: 5\n", "g.yaml");
  EXPECT_EQ(r.make("fixed", Params(good), good)->value(), 5);
  ConfigError unknown = error_of([&] { r.make("fixd", Params(), where.required("name")); });
  EXPECT_NE(unknown.message().find("valid names are: fixed"), std::string::npos);
  ConfigError param = error_of([&] { r.make("fixed", Params(where.required("params")), where); });
  EXPECT_EQ(param.key(), "params.w");
}

}  // namespace
}  // namespace vlasim
