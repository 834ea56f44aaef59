// Rule files are input: the limits on what one may make the loader read and
// build (rules/yaml_limits.h, RuleLoader::AddDirectory), each an error with its
// position and code, and the files and documents that used to be skipped.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rules/rule_loader.h"
#include "rules/yaml_limits.h"
#include "tests/test_util.h"

namespace ncclscan {
namespace {

// Every rendered diagnostic of loading `dir` (no built-in rules).
std::string LoadDir(const std::string& dir, std::vector<std::string>* ids = nullptr) {
  RuleLoader loader;
  loader.AddDirectory(dir);
  std::vector<Diagnostic> diags;
  auto set = loader.Build(&diags);
  std::string r;
  for (const auto& d : diags) r += RenderDiagnostic(d, loader.sources());
  if (ids && set) {
    for (const auto& rule : set->rules()) ids->push_back(rule.spec.id.value);
  }
  return r;
}

std::string LoadText(const std::string& text) {
  RuleLoader loader;
  loader.AddSource("t.yaml", text);
  std::vector<Diagnostic> diags;
  loader.Build(&diags);
  std::string r;
  for (const auto& d : diags) r += RenderDiagnostic(d, loader.sources());
  return r;
}

std::string OneRule(const std::string& id, const std::string& word) {
  return "rules:\n"
         "  - id: " +
         id +
         "\n"
         "    title: t\n"
         "    category: transport\n"
         "    family: nccl\n"
         "    pattern: 'Using network (?P<net>" +
         word +
         ")'\n"
         "    finding: {explanation: x}\n"
         "    examples:\n"
         "      match: [\"n1:1:1 [0] NCCL INFO Using network " +
         word +
         "\"]\n"
         "      no_match: [\"n1:1:1 [0] NCCL INFO Using network Other\"]\n";
}

TEST(RuleLimits, AliasBombIsStoppedAtTheAliasThatCrossesTheLimit) {
  // A 1 MiB value used 20 times: the value itself, its 15 first uses and the
  // keys pass 16 MiB at the 15th use (line 6 holds the first).
  std::string text =
      "rules:\n  - id: A\n    title: &a \"" + std::string(1 << 20, 'x') + "\"\n    examples:\n      match:\n";
  for (int i = 0; i < 20; ++i) text += "        - *a\n";
  EXPECT_EQ(LoadText(text),
            "t.yaml:20:11: error: the rule file expands to more than 16 MiB of text [E-YAML-TOO-LARGE]\n"
            "            - *a\n"
            "              ^\n"
            "help: an alias (*name) counts its whole anchored value again at each use; a rule file needs far less\n");
}

TEST(RuleLimits, AliasesOfManyNodesAreCountedEachTime) {
  // A list of 1000 nodes (1001 with itself), aliased: the 1047th alias passes
  // 2^20 nodes (1005 before the first: the root, two keys, two lists).
  std::string text = "a: &a [";
  for (int i = 0; i < 1000; ++i) text += "x,";
  text += "]\nb:\n";
  for (int i = 0; i < 1100; ++i) text += "  - *a\n";
  EXPECT_EQ(LoadText(text),
            "t.yaml:1049:5: error: the rule file expands to more than 1048576 YAML nodes [E-YAML-TOO-LARGE]\n"
            "      - *a\n"
            "        ^\n"
            "help: an alias (*name) counts its whole anchored value again at each use; a rule file needs far less\n");
}

TEST(RuleLimits, NestingDepth) {
  // The root mapping is level 1: 63 brackets inside it are within the limit.
  YamlLimitError err;
  EXPECT_TRUE(WithinYamlLimits("t.yaml", "rules: " + std::string(63, '[') + std::string(63, ']'), YamlLimits(), &err));
  EXPECT_EQ(LoadText("rules: " + std::string(64, '[') + std::string(64, ']') + "\n"),
            "t.yaml:1:71: error: YAML nested deeper than 64 levels [E-YAML-TOO-DEEP]\n"
            "    rules: " +
                std::string(64, '[') + std::string(64, ']') +
                "\n"
                "                                                                          ^\n"
                "help: rule files nest a few levels (rules: - finding: ...); this looks generated or hostile\n");
}

TEST(RuleLimits, FileSize) {
  YamlLimits small;
  small.max_bytes = 100;
  YamlLimitError err;
  EXPECT_TRUE(WithinYamlLimits("t.yaml", std::string(100, '#'), small, &err));
  EXPECT_FALSE(WithinYamlLimits("t.yaml", std::string(101, '#'), small, &err));
  EXPECT_EQ(err.code + " " + err.message, "E-FILE-TOO-BIG rule file is larger than 100 bytes");
  TempDir dir;
  dir.Write("big.yaml", "# " + std::string(4 << 20, 'x') + "\n");
  EXPECT_EQ(LoadDir(dir.path()), dir.path() + "/big.yaml: error: rule file is larger than 4 MiB [E-FILE-TOO-BIG]\n");
}

TEST(RuleLimits, BuiltInFilesAreFarBelowEachLimit) {
  // What the built-in files are trusted with (they are parsed without the check):
  // an eighth of each limit still passes.
  YamlLimits eighth;
  eighth.max_bytes = YamlLimits().max_bytes / 8;
  eighth.max_depth = YamlLimits().max_depth / 8;
  eighth.max_nodes = YamlLimits().max_nodes / 8;
  eighth.max_scalar_bytes = YamlLimits().max_scalar_bytes / 8;
  for (int i = 0; i < kNumEmbeddedRuleFiles; ++i) {
    YamlLimitError err;
    EXPECT_TRUE(WithinYamlLimits(kEmbeddedRuleFiles[i].name, kEmbeddedRuleFiles[i].text, eighth, &err))
        << err.pos.file << ":" << err.pos.line << ": " << err.message;
  }
}

TEST(RuleLimits, OnlyRegularFilesAreRead) {
  TempDir dir;
  std::string cmd = "mkfifo '" + dir.path() + "/a_fifo.yaml' && ln -s /dev/zero '" + dir.path() +
                    "/b_zero.yaml' && mkdir '" + dir.path() + "/c_dir.yaml'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  // Returns at once (the FIFO has no writer; reading it would block forever).
  EXPECT_EQ(LoadDir(dir.path()),
            dir.path() + "/a_fifo.yaml: error: rule file is a FIFO, not a regular file [E-FILE-TYPE]\n" + dir.path() +
                "/b_zero.yaml: error: rule file is a character device, not a regular file [E-FILE-TYPE]\n" +
                dir.path() + "/c_dir.yaml: error: rule file is a directory, not a regular file [E-FILE-TYPE]\n");
  // Named directly (--rules PATH) as well.
  EXPECT_EQ(LoadDir(dir.path() + "/a_fifo.yaml"),
            dir.path() + "/a_fifo.yaml: error: rule file is a FIFO, not a regular file [E-FILE-TYPE]\n");
  EXPECT_EQ(LoadDir("/dev/zero"),
            "/dev/zero: error: rule file is a character device, not a regular file [E-FILE-TYPE]\n");
}

// Regression: "a.yml" (five characters) was skipped, and so was every document
// after the first "---".
TEST(RuleLimits, YmlFilesAndEveryDocumentAreRead) {
  TempDir dir;
  dir.Write("a.yml", OneRule("YML-A", "Alpha"));
  dir.Write("b.yaml", OneRule("DOC-ONE", "Beta") + "---\n" + OneRule("DOC-TWO", "Gamma") + "---\n");
  dir.Write(".yaml", OneRule("HIDDEN", "Delta"));  // no name, only the extension: not a rule file
  std::vector<std::string> ids;
  EXPECT_EQ(LoadDir(dir.path(), &ids), "");
  EXPECT_EQ(ids, (std::vector<std::string>{"YML-A", "DOC-ONE", "DOC-TWO"}));
}

TEST(RuleLimits, ProblemsInALaterDocumentPointIntoIt) {
  EXPECT_EQ(LoadText(OneRule("DOC-ONE", "Beta") + "---\nrules: 3\n"),
            "t.yaml:12:8: error: rules must be a list [E-BAD-VALUE]\n"
            "    rules: 3\n"
            "           ^\n");
}

TEST(RenderDiagnostic, LongSourceLinesAreShownAroundTheColumn) {
  std::string line = std::string(300, 'a') + "X" + std::string(300, 'b');
  Diagnostic d{SourcePos{"f.yaml", 1, 301}, "E-X", "here", ""};
  EXPECT_EQ(RenderDiagnostic(d, {{"f.yaml", line + "\n"}}),
            "f.yaml:1:301: error: here [E-X]\n"
            "    ..." +
                std::string(80, 'a') + "X" + std::string(79, 'b') +
                "...\n"
                "       " +
                std::string(80, ' ') + "^\n");
}

}  // namespace
}  // namespace ncclscan
