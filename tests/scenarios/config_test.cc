// ConfigNode and Registry: errors name the file, the line and the key.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>

#include "scenarios/config/config.h"
#include "scenarios/config/registry.h"
#include "scratch.h"

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

TEST(ConfigNode, NullValueIsAnErrorForEveryAccessor) {
  for (const char* null : {"~", "null", ""}) {
    SCOPED_TRACE(null);
    ConfigNode n = ConfigNode::load_string(
        std::string("g:\n  name: a\n  cores: ") + null + "\nxs: [1, ~]\n", "n.yaml");
    ConfigNode g = n.required("g");
    for (const auto& read : std::vector<std::function<void()>>{
             [&] { g.has("cores"); },
             [&] { g.optional("cores"); },
             [&] { g.required("cores"); },
             [&] { g.get_count("cores", 0, 1, 8); },
             [&] { g.get_int("cores", 3); },
             [&] { g.get_double("cores", 3); },
             [&] { g.get_string("cores", "x"); },
             [&] { g.get_bool("cores", true); },
             [&] { g.get_positive("cores", 1); },
             [&] { g.get_nonneg("cores", 1); },
             [&] { g.entries(); },
         }) {
      ConfigError e = error_of(read);
      EXPECT_EQ(e.key(), "g.cores");
      EXPECT_EQ(e.line(), 3);
      EXPECT_NE(e.message().find("value is null"), std::string::npos) << e.what();
    }
    ConfigError item = error_of([&] { n.required("xs").items(); });
    EXPECT_EQ(item.key(), "xs[1]");
    EXPECT_NE(item.message().find("null"), std::string::npos);
    EXPECT_FALSE(g.has("threads"));
    EXPECT_EQ(g.get_count("threads", 7), 7);
    EXPECT_FALSE(g.optional("threads").defined());
  }
}

TEST(ConfigNode, DuplicateKeyNamesTheSecondOccurrence) {
  ConfigError e = error_of(
      [] { ConfigNode::load_string("a: 1\nb:\n  c: 1\n  d: 2\n  c: 3\n", "d.yaml"); });
  EXPECT_EQ(e.file(), "d.yaml");
  EXPECT_EQ(e.key(), "b.c");
  EXPECT_EQ(e.line(), 5);
  EXPECT_NE(e.message().find("already given on line 3"), std::string::npos) << e.what();
  ConfigError in_list =
      error_of([] { ConfigNode::load_string("xs:\n  - {v: 1, v: 2}\n", "l.yaml"); });
  EXPECT_EQ(in_list.key(), "xs[0].v");
  EXPECT_EQ(in_list.line(), 2);
  EXPECT_EQ(error_of([] { ConfigNode::load_string("? [a, b]\n: 1\n", "k.yaml"); }).line(), 1);
}

TEST(ConfigNode, SecondDocumentIsRefusedAtItsStart) {
  ConfigError e = error_of([] { ConfigNode::load_string("a: 1\n---\nb: 2\n", "two.yaml"); });
  EXPECT_EQ(e.file(), "two.yaml");
  EXPECT_EQ(e.line(), 2);
  EXPECT_NE(e.message().find("second YAML document"), std::string::npos) << e.what();
  EXPECT_EQ(error_of([] { ConfigNode::load_string("---\na: 1\n---\n", "t.yaml"); }).line(), 3);
  EXPECT_EQ(ConfigNode::load_string("---\na: 1\n...\n", "one.yaml").get_int("a", 0), 1);
}

TEST(ConfigNode, DeepNestingIsRefusedWithoutCrashing) {
  for (int depth : {kMaxYamlDepth + 1, 3000, 100000}) {
    SCOPED_TRACE(depth);
    std::string flow = "a: " + std::string(depth, '[') + std::string(depth, ']') + "\n";
    ConfigError e = error_of([&] { ConfigNode::load_string(flow, "deep.yaml"); });
    EXPECT_EQ(e.line(), 1);
    EXPECT_NE(e.message().find("nesting deeper than " + std::to_string(kMaxYamlDepth)),
              std::string::npos)
        << e.what();
  }
  std::string block;
  for (int i = 0; i < 1000; ++i) block += std::string(2 * i, ' ') + "a:\n";
  ConfigError e = error_of([&] { ConfigNode::load_string(block, "block.yaml"); });
  EXPECT_NE(e.message().find("nesting deeper than"), std::string::npos) << e.what();
  std::string ok =
      "a: " + std::string(kMaxYamlDepth - 1, '[') + std::string(kMaxYamlDepth - 1, ']');
  EXPECT_TRUE(ConfigNode::load_string(ok, "ok.yaml").required("a").is_sequence());
}

TEST(ConfigNode, AliasesCannotLoopOrMultiplyWithoutBound) {
  ConfigError loop = error_of([] { ConfigNode::load_string("a: &a [1, *a]\n", "loop.yaml"); });
  EXPECT_EQ(loop.key(), "a[1]");
  EXPECT_NE(loop.message().find("alias refers to a list or map that holds it"), std::string::npos)
      << loop.what();
  std::string laughs = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    std::string prev = "*l" + std::to_string(i - 1);
    laughs += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [" + prev;
    for (int j = 1; j < 10; ++j) laughs += ", " + prev;
    laughs += "]\n";
  }
  ConfigError many = error_of([&] { ConfigNode::load_string(laughs, "laughs.yaml"); });
  EXPECT_NE(many.message().find("more than 1000000 values"), std::string::npos) << many.what();
  ConfigNode shared = ConfigNode::load_string("a: &a {v: 1}\nb: *a\n", "ok.yaml");
  EXPECT_EQ(shared.required("b").get_int("v", 0), 1);
}

// A NUL in a value ended the printed message there (issue 28): control characters are
// written as \xNN, so what() holds the whole message.
TEST(ConfigNode, AValueHoldingANulIsPrintedWhole) {
  ConfigNode n = ConfigNode::load_string("card: \"pi0\\0small\"\n", "nul.yaml");
  ConfigError e = error_of([&] { n.required("card").fail("unknown card '" + n.required("card").as_string() + "'"); });
  const std::string what = e.what();  // as printed: up to the first NUL
  EXPECT_NE(what.find("unknown card 'pi0\\x00small'"), std::string::npos) << what;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// A document of more values than a scenario may hold is refused before yaml-cpp builds its
// nodes: a 16 MiB flow list of small values took about 4 GB built (issue 28). The error names
// the top-level key holding them and the line; the process's peak memory barely grows.
TEST(ConfigNode, TooManyValuesAreRefusedBeforeTheTreeIsBuilt) {
  std::string text = "name: x\nx_unknown: [";
  for (int i = 0; i <= 1'000'000; ++i) text += i ? ",1" : "1";
  text += "]\n";
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  ConfigError e = error_of([&] { ConfigNode::load_string(text, "big.yaml"); });
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  EXPECT_EQ(e.file(), "big.yaml");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.key(), "x_unknown");
  EXPECT_NE(e.message().find("more than 1000000 values"), std::string::npos) << e.what();
  // ru_maxrss is in KiB; the built tree of a million values takes several hundred MB. Under
  // AddressSanitizer freed memory stays in its quarantine, so the figure says nothing there.
  if (!kAddressSanitizer) {
    EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 200 * 1024)
        << "peak RSS grew by " << (after.ru_maxrss - before.ru_maxrss) / 1024 << " MB";
  }
  // Values in nested maps and lists count too; keys do not.
  std::string nested = "a:\n";
  std::string list = "[1";
  for (int i = 1; i < 999; ++i) list += ",1";
  list += "]";
  for (int i = 0; i < 1001; ++i) nested += "  k" + std::to_string(i) + ": " + list + "\n";
  ConfigError deep = error_of([&] { ConfigNode::load_string(nested, "nested.yaml"); });
  EXPECT_EQ(deep.key(), "a");
  EXPECT_GE(deep.line(), 1000);
  EXPECT_NO_THROW(ConfigNode::load_string("a: {b: [1, 2, {c: 3}]}\n", "small.yaml"));
}

// yaml-cpp 0.7's LoadAll never consumes a ',' that opens a document: it returned null
// documents without end (a hang that filled memory; found by the fuzzers).
TEST(ConfigNode, ACommaOpeningADocumentIsRefusedNotLoopedOn) {
  for (const char* text : {",", ",\n", "# note\n  , x\n", "#,ef#,ef0ga\n  ,\0\0  s\n"}) {
    ConfigError e = error_of([&] { ConfigNode::load_string(text, "comma.yaml"); });
    EXPECT_EQ(e.file(), "comma.yaml");
    EXPECT_NE(e.message().find("a document cannot start with ','"), std::string::npos) << e.what();
  }
  ConfigError e = error_of([] { ConfigNode::load_string("# note\n ,\n", "comma.yaml"); });
  EXPECT_EQ(e.line(), 2);
  ConfigError second = error_of([] { ConfigNode::load_string("a: 1\n---\n,\n", "two.yaml"); });
  EXPECT_EQ(second.line(), 2);
  EXPECT_NE(second.message().find("second YAML document"), std::string::npos) << second.what();
  EXPECT_FALSE(ConfigNode::load_string("", "empty.yaml").defined());
  EXPECT_FALSE(ConfigNode::load_string("# only a comment\n", "empty.yaml").defined());
  EXPECT_EQ(ConfigNode::load_string("---\na: 3\n...\n", "one.yaml").get_int("a", 0), 3);
}

TEST(ConfigNode, FilesThatAreNotSmallRegularFilesAreRefusedUnread) {
  const std::filesystem::path dir = testing::scratch_dir("config_files");
  ConfigError d = error_of([&] { ConfigNode::load_file(dir.string()); });
  EXPECT_EQ(d.file(), dir.string());
  EXPECT_NE(d.message().find("is a directory"), std::string::npos) << d.what();
  ConfigError z = error_of([] { ConfigNode::load_file("/dev/zero"); });
  EXPECT_NE(z.message().find("not a regular file"), std::string::npos) << z.what();
  const std::string big = (dir / "big.yaml").string();
  { std::ofstream(big) << "a: 1\n"; }
  std::filesystem::resize_file(big, kMaxInputFileBytes + 1);
  ConfigError b = error_of([&] { ConfigNode::load_file(big); });
  EXPECT_NE(b.message().find("the limit for an input file is 16 MiB"), std::string::npos)
      << b.what();
  const std::string small = (dir / "small.yaml").string();
  { std::ofstream(small) << "a: 1\n"; }
  EXPECT_EQ(ConfigNode::load_file(small).get_int("a", 0), 1);
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

namespace vlasim {
namespace {

std::string contents(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Files in `dir` other than `keep` (a temporary left behind would be one).
std::vector<std::string> others(const std::filesystem::path& dir, const std::string& keep) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename() != keep) out.push_back(e.path().filename().string());
  return out;
}

// Issue 49 item 6: the one writer checks every write and the close and renames a complete
// temporary into place: a full device is an error (it said "imported ... into /dev/full", exit
// 0), a failed write leaves the old file whole and no temporary, a replaced file keeps its mode.
TEST(WriteOutputFile, WholeOrNothingAndEveryFailureSaid) {
  const std::filesystem::path dir = testing::scratch_dir("write_output_file");
  const std::filesystem::path f = dir / "out.txt";
  write_output_file(f.string(), "first\n");
  EXPECT_EQ(contents(f), "first\n");
  std::filesystem::permissions(f, std::filesystem::perms(0640));
  write_output_file(f.string(), std::string(1 << 20, 'x'));
  EXPECT_EQ(contents(f).size(), size_t{1} << 20);
  EXPECT_EQ(std::filesystem::status(f).permissions() & std::filesystem::perms::all, std::filesystem::perms(0640));
  EXPECT_TRUE(others(dir, "out.txt").empty());
  try {
    write_output_file("/dev/full", "x");
    ADD_FAILURE() << "writing /dev/full succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write /dev/full: No space left on device"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(write_output_file("/dev/null", "x"));
  EXPECT_THROW(write_output_file((dir / "no/such/dir/f.csv").string(), "x"), std::runtime_error);
  EXPECT_THROW(write_output_file(dir.string(), "x"), std::runtime_error);
  // Through a symbolic link: the file it points at is replaced, the link kept.
  std::filesystem::create_symlink(f, dir / "link.txt");
  write_output_file((dir / "link.txt").string(), "via link\n");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link.txt"));
  EXPECT_EQ(contents(f), "via link\n");
}

}  // namespace
}  // namespace vlasim
