// Input hygiene (engine/io/source.h): what a walk skips, -g globs, each real file
// once, tar archives member by member, bzip2 / xz, damaged archives, and
// evidence that cites the file and line of a grep -H -n prefix.
#include "engine/io/source.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/reports/report.h"
#include "engine/run/analyze.h"
#include "rules/rule_loader.h"
#include "tests/test_util.h"

namespace ncclscan {
namespace {

const RuleSet& Rules() { return BuiltInRules(); }

// One rank of a 2-host job whose rank 1 cannot connect to its peer.
std::string RankLog(int rank) {
  std::string host = rank < 2 ? "node-a" : "node-b";
  std::string p = host + ":" + std::to_string(1000 + rank) + ":" + std::to_string(1000 + rank) + " [" +
                  std::to_string(rank % 2) + "] ";
  std::string s;
  s += p + "NCCL INFO Bootstrap : Using eth0:10.0.0." + std::to_string(rank < 2 ? 1 : 2) + "<0>\n";
  s += p + "NCCL INFO NCCL version 2.21.5+cuda12.4\n";
  s += p + "NCCL INFO Using network IB\n";
  s += p + "NCCL INFO ncclCommInitRank comm 0x55d0c1a0e9f" + std::to_string(rank) + " rank " + std::to_string(rank) +
       " nranks 4 cudaDev " + std::to_string(rank % 2) + " nvmlDev 0 busId 1b000 commId 0xabc - Init START\n";
  for (int i = 0; i < 40; ++i) s += "step " + std::to_string(i) + " | loss 2.31 | lr 3e-4\n";
  if (rank == 1) {
    s +=
        p + "misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45763> failed : Connection refused\n";
  }
  s += p + "NCCL INFO ncclCommInitRank comm 0x55d0c1a0e9f" + std::to_string(rank) + " rank " + std::to_string(rank) +
       " nranks 4 cudaDev " + std::to_string(rank % 2) + " nvmlDev 0 busId 1b000 commId 0xabc - Init COMPLETE\n";
  return s;
}

// The diagnosis proper: subjects, verdict and findings (everything the JSON
// says after its "input" object, which names the files read and skipped).
std::string Diagnosis(const Analysis& a) {
  std::string j = RenderJson(*a.state, a.diagnosis);
  size_t at = j.find("\"subjects\"");
  return at == std::string::npos ? j : j.substr(at);
}

std::vector<std::string> Paths(const ExpandedInputs& in, const std::string& root) {
  std::vector<std::string> out;
  for (const auto& f : in.files) out.push_back(f.path.substr(root.size() + 1));
  return out;
}

std::vector<std::string> FileNames(const Analysis& a) {
  std::vector<std::string> out;
  for (const auto& f : a.state->files()) out.push_back(f.path);
  return out;
}

uint64_t Skipped(const Analysis& a, const char* reason) {
  auto it = a.state->skipped().count.find(reason);
  return it == a.state->skipped().count.end() ? 0 : it->second;
}

// An archive written with libarchive: `filter` is ARCHIVE_FILTER_*, `tar`
// false writes the single stream of the first member only (raw format).
std::string Archive(const std::vector<std::pair<std::string, std::string>>& members, int filter, bool tar = true) {
  struct archive* a = archive_write_new();
  archive_write_add_filter(a, filter);
  if (tar) {
    archive_write_set_format_pax_restricted(a);
  } else {
    archive_write_set_format_raw(a);
  }
  std::vector<char> buf(1 << 22);
  size_t used = 0;
  EXPECT_EQ(archive_write_open_memory(a, buf.data(), buf.size(), &used), ARCHIVE_OK) << archive_error_string(a);
  for (const auto& m : members) {
    struct archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.first.c_str());
    archive_entry_set_size(e, static_cast<la_int64_t>(m.second.size()));
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    EXPECT_EQ(archive_write_header(a, e), ARCHIVE_OK) << archive_error_string(a);
    archive_write_data(a, m.second.data(), m.second.size());
    archive_entry_free(e);
    if (!tar) break;
  }
  archive_write_close(a);
  archive_write_free(a);
  return std::string(buf.data(), used);
}

// A job directory as people hand it over: logs plus notes and the expected result.
void WriteJobNotes(const TempDir& dir, const std::string& sub) {
  dir.Write(sub + "README.md", "# Incident 42\n\nNCCL WARN socketStartConnect: Connect to 10.9.9.9<1> failed\n");
  dir.Write(sub + "SOURCE.md",
            "Logs from the cluster; rank 3 was the culprit. NCCL WARN Cuda failure 'out of memory'\n");
  dir.Write(sub + "expected.json",
            "{\n  \"primary\": \"NCCL-CONNECT-FAILED\",\n  \"present\": [\"NCCL-CUDA-OOM\"]\n}\n");
}

TEST(Source, JobDirWithNotesDiagnosesAsTheLogsAlone) {
  TempDir dir;
  std::vector<std::string> logs;
  for (int r = 0; r < 4; ++r) logs.push_back(dir.Write("rank" + std::to_string(r) + ".log", RankLog(r)));
  WriteJobNotes(dir, "");
  Analysis all = Analyze(Rules(), {dir.path()}, ScanOptions());
  Analysis alone = Analyze(Rules(), logs, ScanOptions());
  EXPECT_EQ(FileNames(all), logs);
  EXPECT_EQ(Diagnosis(all), Diagnosis(alone));
  EXPECT_EQ(Skipped(all, kSkipNotALog), 3u);
  EXPECT_EQ(all.state->skipped().Summary(),
            "skipped: 3 non-log files (README.md, SOURCE.md, expected.json); use -g GLOB to include them");
  // Named on the command line, a file is always read (ripgrep does the same).
  Analysis named = Analyze(Rules(), {dir.path() + "/README.md"}, ScanOptions());
  EXPECT_EQ(named.state->files().size(), 1u);
  EXPECT_EQ(Skipped(named, kSkipNotALog), 0u);
  // A glob that names them includes them.
  ScanOptions globbed;
  std::string err;
  ASSERT_TRUE(globbed.globs.Add("*", &err)) << err;
  Analysis everything = Analyze(Rules(), {dir.path()}, globbed);
  EXPECT_EQ(everything.state->files().size(), 7u);
}

// The "done when", on a real corpus case: its directory (with
// SOURCE.md, expected.json and truth.json) gives the diagnosis of its logs alone.
TEST(Source, CorpusCaseDirectoryDiagnosesAsItsLogsAlone) {
  const std::string dir = std::string(NCCLSCAN_SOURCE_DIR) + "/corpus/real-dev-shm-exhausted-2node-socket";
  std::vector<std::string> errors;
  std::vector<std::string> logs;
  for (const char* n : {"part1.log", "part2.log", "part3.log", "part4.log"}) logs.push_back(dir + "/" + n);
  ASSERT_EQ(access((dir + "/expected.json").c_str(), R_OK), 0);
  ASSERT_EQ(access((dir + "/SOURCE.md").c_str(), R_OK), 0);
  Analysis all = Analyze(Rules(), {dir}, ScanOptions());
  Analysis alone = Analyze(Rules(), logs, ScanOptions());
  EXPECT_TRUE(all.errors.empty());
  EXPECT_EQ(FileNames(all), logs);
  EXPECT_EQ(all.diagnosis.status, alone.diagnosis.status);
  EXPECT_EQ(all.diagnosis.headline, alone.diagnosis.headline);
  EXPECT_EQ(Diagnosis(all), Diagnosis(alone));
  EXPECT_EQ(Skipped(all, kSkipNotALog), 4u);  // SOURCE.md, expected.json, truth.json, golden.json
}

TEST(Source, NotALogByNameAndByContent) {
  EXPECT_STREQ(SkipByName("README.md"), kSkipNotALog);
  EXPECT_STREQ(SkipByName("notes.MARKDOWN"), kSkipNotALog);
  EXPECT_STREQ(SkipByName("docs/index.rst"), kSkipNotALog);
  EXPECT_EQ(SkipByName("rank0.log"), nullptr);
  EXPECT_EQ(SkipByName("notes.txt"), nullptr);  // .txt is often a log

  std::string png("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16);
  EXPECT_STREQ(SkipByContent("plot.png", png), kSkipBinary);
  EXPECT_STREQ(SkipByContent("core", std::string("\x7f"
                                                 "ELF\x02\x01\x01",
                                                 7)),
               kSkipBinary);
  EXPECT_STREQ(SkipByContent("model.pt", std::string("PK\x03\x04\x14\0\0\0", 8)), kSkipBinary);
  std::string noise;
  for (int i = 0; i < 4096; ++i) noise += static_cast<char>((i * 7919 + 13) % 256);
  EXPECT_STREQ(SkipByContent("blob.bin", noise), kSkipBinary);
  EXPECT_EQ(SkipByContent("rank0.log", RankLog(0)), nullptr);
  EXPECT_EQ(SkipByContent("utf8.log", "step 1 — loss 2.3 ✓ \x1b[32mok\x1b[0m\n"), nullptr);
  // A log the file system zero-filled after a crash is still a log.
  EXPECT_EQ(SkipByContent("crash.log", RankLog(0).substr(0, 500) + std::string(3000, '\0') + RankLog(1)), nullptr);
  EXPECT_EQ(SkipByContent("empty.log", ""), nullptr);
  // A Flight Recorder pickle is kept for the day it is read.
  EXPECT_EQ(SkipByContent("nccl_trace_rank_3", std::string("\x80\x02}q\0(X\x07\0\0\0version", 18)), nullptr);

  EXPECT_STREQ(SkipByContent("expected.json", "{\n  \"primary\": null\n}\n"), kSkipNotALog);
  EXPECT_STREQ(SkipByContent("list.json", "[1, 2, 3]"), kSkipNotALog);
  EXPECT_EQ(SkipByContent("c-json.json", "{\"log\":\"n1:1:1 [0] NCCL INFO x\\n\",\"stream\":\"stderr\"}\n"), nullptr);
  EXPECT_EQ(SkipByContent("fr.json", "{\"version\": \"2.4\", \"pg_config\": {}, \"entries\": []}"), nullptr);
  EXPECT_EQ(SkipByContent("odd.json", "n1:1:1 [0] NCCL INFO not JSON at all\n"), nullptr);
  EXPECT_STREQ(SkipByContent("meta.json.gz", "{\"a\": 1}"), kSkipNotALog);
}

TEST(Source, BinariesFoundByAWalkAreSkippedNamedOnesRead) {
  TempDir dir;
  std::string log = dir.Write("rank0.log", RankLog(0));
  std::string png = dir.Write("loss.png", std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16) + std::string(600, '\x01'));
  Analysis a = Analyze(Rules(), {dir.path()}, ScanOptions());
  EXPECT_EQ(FileNames(a), std::vector<std::string>{log});
  EXPECT_EQ(Skipped(a, kSkipBinary), 1u);
  ASSERT_EQ(a.state->skipped().paths.size(), 1u);
  EXPECT_EQ(a.state->skipped().paths[0], std::make_pair(std::string(kSkipBinary), png));
  Analysis named = Analyze(Rules(), {png}, ScanOptions());
  EXPECT_EQ(named.state->files().size(), 1u);
  EXPECT_EQ(Skipped(named, kSkipBinary), 0u);
  // Even a glob that names it does not make a binary a log.
  ScanOptions g;
  std::string err;
  ASSERT_TRUE(g.globs.Add("*.png", &err));
  EXPECT_EQ(Analyze(Rules(), {dir.path()}, g).state->files().size(), 0u);
}

TEST(Source, SymlinkedDirectoryIsReadOnce) {
  TempDir dir;
  std::vector<std::string> logs;
  for (int r = 0; r < 2; ++r) logs.push_back(dir.Write("run3/rank" + std::to_string(r) + ".log", RankLog(r)));
  ASSERT_EQ(symlink("run3", (dir.path() + "/latest").c_str()), 0);
  Analysis a = Analyze(Rules(), {dir.path()}, ScanOptions());
  EXPECT_EQ(FileNames(a), logs);  // the path without the link is kept
  EXPECT_EQ(Skipped(a, kSkipDuplicate), 2u);
  EXPECT_EQ(Diagnosis(a), Diagnosis(Analyze(Rules(), logs, ScanOptions())));
  // Named through the link and directly: still once.
  Analysis b = Analyze(Rules(), {dir.path() + "/latest", dir.path() + "/run3"}, ScanOptions());
  EXPECT_EQ(FileNames(b), logs);
  EXPECT_EQ(Skipped(b, kSkipDuplicate), 2u);
}

TEST(Source, SameFileNamedTwiceIsReadOnce) {
  TempDir dir;
  std::string a_log = dir.Write("a.log", RankLog(1));
  Analysis once = Analyze(Rules(), {a_log}, ScanOptions());
  Analysis twice = Analyze(Rules(), {dir.path() + "/./a.log", a_log}, ScanOptions());
  EXPECT_EQ(FileNames(twice), std::vector<std::string>{a_log});
  EXPECT_EQ(Skipped(twice, kSkipDuplicate), 1u);
  EXPECT_EQ(twice.state->counters().lines, once.state->counters().lines);
  EXPECT_EQ(Diagnosis(twice), Diagnosis(once));
  // A hard link is the same file too.
  ASSERT_EQ(link(a_log.c_str(), (dir.path() + "/b.log").c_str()), 0);
  EXPECT_EQ(Analyze(Rules(), {dir.path()}, ScanOptions()).state->files().size(), 1u);
}

TEST(Source, WalkErrorsAreCountedAndTheRestRead) {
  TempDir dir;
  std::string log = dir.Write("rank0.log", RankLog(0));
  ASSERT_EQ(symlink("gone.log", (dir.path() + "/dangling.log").c_str()), 0);
  ASSERT_EQ(symlink("loop", (dir.path() + "/loop").c_str()), 0);
  Analysis a = Analyze(Rules(), {dir.path(), dir.path() + "/missing"}, ScanOptions());
  EXPECT_EQ(FileNames(a), std::vector<std::string>{log});
  EXPECT_EQ(a.state->skipped().walk_errors, 3u);
  ASSERT_EQ(a.errors.size(), 3u);
  EXPECT_EQ(a.errors[0],
            "cannot read " + dir.path() + "/dangling.log: dangling symbolic link (its target does not exist)");
  EXPECT_EQ(a.errors[1], "cannot read " + dir.path() + "/loop: symbolic link loop");
  EXPECT_EQ(a.errors[2], "cannot read " + dir.path() + "/missing: No such file or directory");
  std::string json = RenderJson(*a.state, a.diagnosis);
  EXPECT_NE(json.find("\"walk_errors\":3"), std::string::npos);
}

struct GlobCase {
  std::vector<std::string> globs;
  std::vector<std::string> selected;
};

TEST(Source, GlobsIncludeAndExcludeLikeRipgrep) {
  TempDir dir;
  for (const char* f : {"a.log", "b.txt", "debug.log", "sub/c.log", "sub/deep/d.log", "sub/e.out", "old/f.log"}) {
    dir.Write(f, RankLog(0));
  }
  const GlobCase cases[] = {
      {{}, {"a.log", "b.txt", "debug.log", "old/f.log", "sub/c.log", "sub/deep/d.log", "sub/e.out"}},
      {{"*.log"}, {"a.log", "debug.log", "old/f.log", "sub/c.log", "sub/deep/d.log"}},
      {{"*.log", "!debug*"}, {"a.log", "old/f.log", "sub/c.log", "sub/deep/d.log"}},
      {{"!debug*", "*.log"}, {"a.log", "debug.log", "old/f.log", "sub/c.log", "sub/deep/d.log"}},  // last wins
      {{"!*.log"}, {"b.txt", "sub/e.out"}},
      {{"!old"}, {"a.log", "b.txt", "debug.log", "sub/c.log", "sub/deep/d.log", "sub/e.out"}},  // prunes the dir
      {{"sub/*.log"}, {"sub/c.log"}},
      {{"sub/**"}, {"sub/c.log", "sub/deep/d.log", "sub/e.out"}},
      {{"**/d.log"}, {"sub/deep/d.log"}},
      {{"/a.log"}, {"a.log"}},
      {{"*.{txt,out}"}, {"b.txt", "sub/e.out"}},
      {{"[ab].*"}, {"a.log", "b.txt"}},
      {{"[!ab]*.log"}, {"debug.log", "old/f.log", "sub/c.log", "sub/deep/d.log"}},
      {{"?.log"}, {"a.log", "old/f.log", "sub/c.log", "sub/deep/d.log"}},
  };
  for (const auto& c : cases) {
    GlobFilter g;
    std::string err;
    for (const auto& x : c.globs) ASSERT_TRUE(g.Add(x, &err)) << err;
    std::vector<std::string> errors;
    ExpandedInputs in = ExpandInputs({dir.path()}, g, &errors);
    EXPECT_TRUE(errors.empty());
    std::string label;
    for (const auto& x : c.globs) label += " -g '" + x + "'";
    EXPECT_EQ(Paths(in, dir.path()), c.selected) << label;
  }
  // Files named on the command line are read whatever the globs say.
  GlobFilter only_txt;
  std::string err;
  ASSERT_TRUE(only_txt.Add("*.txt", &err));
  std::vector<std::string> errors;
  ExpandedInputs in = ExpandInputs({dir.path() + "/a.log"}, only_txt, &errors);
  ASSERT_EQ(in.files.size(), 1u);
}

TEST(Source, MalformedGlobsAreErrors) {
  GlobFilter g;
  std::string err;
  EXPECT_FALSE(g.Add("rank[0-3.log", &err));
  EXPECT_EQ(err, "unclosed '[' in glob 'rank[0-3.log'");
  EXPECT_FALSE(g.Add("*.{log,txt", &err));
  EXPECT_EQ(err, "unclosed '{' in glob '*.{log,txt'");
  EXPECT_FALSE(g.Add("!", &err));
  EXPECT_TRUE(g.empty());
}

TEST(Source, TarGzMembersAreFilesOfTheirOwn) {
  TempDir dir;
  std::string r0 = RankLog(0), r1 = RankLog(1);
  std::string tgz = dir.Write(
      "job.tar.gz", Archive({{"./logs/rank0.log", r0}, {"./logs/README.md", "# notes\n"}, {"./logs/rank1.log", r1}},
                            ARCHIVE_FILTER_GZIP));
  std::string p0 = dir.Write("plain/logs/rank0.log", r0), p1 = dir.Write("plain/logs/rank1.log", r1);
  Analysis a = Analyze(Rules(), {tgz}, ScanOptions());
  EXPECT_TRUE(a.errors.empty());
  EXPECT_EQ(FileNames(a), (std::vector<std::string>{tgz + ":logs/rank0.log", tgz + ":logs/rank1.log"}));
  EXPECT_EQ(a.state->files()[0].bytes, r0.size());
  EXPECT_EQ(Skipped(a, kSkipNotALog), 1u);
  EXPECT_EQ(a.state->skipped().paths[0].second, tgz + ":logs/README.md");
  Analysis plain = Analyze(Rules(), {p0, p1}, ScanOptions());
  EXPECT_EQ(a.state->counters().lines, plain.state->counters().lines);
  EXPECT_EQ(a.state->counters().matched_lines, plain.state->counters().matched_lines);
  ASSERT_EQ(a.diagnosis.findings.size(), plain.diagnosis.findings.size());
  bool cited = false;
  for (size_t i = 0; i < a.diagnosis.findings.size(); ++i) {
    const Finding& f = a.diagnosis.findings[i];
    EXPECT_EQ(f.rule_id, plain.diagnosis.findings[i].rule_id);
    if (f.rule_id != "NCCL-CONNECT-FAILED") continue;
    ASSERT_FALSE(f.evidence.empty());
    EXPECT_EQ(a.state->CitedPath(f.evidence[0]), tgz + ":logs/rank1.log");
    EXPECT_EQ(a.state->CitedLine(f.evidence[0]), 45);
    cited = true;
  }
  EXPECT_TRUE(cited);
  // Members are matched by -g too (path inside the archive).
  ScanOptions g;
  std::string err;
  ASSERT_TRUE(g.globs.Add("!rank1.log", &err));
  EXPECT_EQ(FileNames(Analyze(Rules(), {tgz}, g)), std::vector<std::string>{tgz + ":logs/rank0.log"});
  // Found by a walk as well, and a compressed member is decompressed.
  std::string ztar = dir.Write(
      "more/b.tar",
      Archive({{"rank2.log.gz", Archive({{"x", RankLog(2)}}, ARCHIVE_FILTER_GZIP, false)}}, ARCHIVE_FILTER_NONE));
  Analysis w = Analyze(Rules(), {dir.path() + "/more"}, ScanOptions());
  EXPECT_EQ(FileNames(w), std::vector<std::string>{ztar + ":rank2.log.gz"});
  EXPECT_EQ(w.state->files()[0].bytes, RankLog(2).size());
}

TEST(Source, TarUnderEveryCompressionAndSingleBzip2Xz) {
  TempDir dir;
  std::string r0 = RankLog(0), r1 = RankLog(1);
  Analysis plain = Analyze(Rules(), {dir.Write("p/r0.log", r0), dir.Write("p/r1.log", r1)}, ScanOptions());
  for (int filter : {ARCHIVE_FILTER_NONE, ARCHIVE_FILTER_ZSTD, ARCHIVE_FILTER_BZIP2, ARCHIVE_FILTER_XZ}) {
    std::string path =
        dir.Write("t" + std::to_string(filter) + ".tar", Archive({{"r0.log", r0}, {"r1.log", r1}}, filter));
    Analysis a = Analyze(Rules(), {path}, ScanOptions());
    EXPECT_TRUE(a.errors.empty()) << filter;
    EXPECT_EQ(a.state->files().size(), 2u) << filter;
    EXPECT_EQ(a.state->counters().matched_lines, plain.state->counters().matched_lines) << filter;
  }
  Analysis one = Analyze(Rules(), {dir.Write("p1/r1.log", r1)}, ScanOptions());
  for (int filter : {ARCHIVE_FILTER_BZIP2, ARCHIVE_FILTER_XZ}) {
    std::string path = dir.Write("r1.log." + std::to_string(filter), Archive({{"r1.log", r1}}, filter, false));
    Analysis a = Analyze(Rules(), {path}, ScanOptions());
    EXPECT_TRUE(a.errors.empty()) << filter;
    ASSERT_EQ(a.state->files().size(), 1u);
    EXPECT_EQ(a.state->files()[0].path, path);
    EXPECT_EQ(a.state->files()[0].bytes, r1.size());
    EXPECT_EQ(a.state->counters().lines, one.state->counters().lines) << filter;
    EXPECT_EQ(a.diagnosis.headline, one.diagnosis.headline) << filter;
  }
}

std::string Half(const std::string& s) { return s.substr(0, s.size() / 2); }

TEST(Source, DamagedArchivesAreReportedAndOtherInputsRead) {
  TempDir dir;
  std::string big0, big1;
  for (int i = 0; i < 60; ++i) big0 += RankLog(0), big1 += RankLog(1);
  std::string good = dir.Write("z_good.log", RankLog(3));
  std::string tgz = Archive({{"rank0.log", big0}, {"rank1.log", big1}}, ARCHIVE_FILTER_GZIP);
  std::string tar = Archive({{"rank0.log", big0}, {"rank1.log", big1}}, ARCHIVE_FILTER_NONE);
  struct Case {
    std::string name, data, error;
  };
  const Case cases[] = {
      {"cut.tar.gz", tgz.substr(0, tgz.size() * 3 / 4), "truncated gzip stream"},
      {"cut.tar", tar.substr(0, 512 + big0.size() + 512 + big1.size() / 2), "runcated tar archive"},
      {"cut.log.bz2", Half(Archive({{"x", big0}}, ARCHIVE_FILTER_BZIP2, false)), "bzip2"},
      {"cut.log.xz", Half(Archive({{"x", big0}}, ARCHIVE_FILTER_XZ, false)), "xz"},
  };
  for (const Case& c : cases) {
    std::string bad = dir.Write(c.name, c.data);
    Analysis a = Analyze(Rules(), {bad, good}, ScanOptions());
    std::string all_errors;
    for (const auto& e : a.errors) all_errors += e + "; ";
    ASSERT_EQ(a.errors.size(), 1u) << c.name << ": " << all_errors;
    EXPECT_EQ(a.errors[0].rfind("cannot read " + bad, 0), 0u) << a.errors[0];
    EXPECT_NE(a.errors[0].find(c.error), std::string::npos) << a.errors[0];
    // The file after it is read in full; the damaged one up to the damage.
    ASSERT_GE(a.state->files().size(), 2u) << c.name;
    EXPECT_EQ(a.state->files().back().path, good);
    EXPECT_EQ(a.state->files().back().bytes, RankLog(3).size());
    EXPECT_GT(a.state->counters().lines, RankLog(3).size() / 1000) << c.name;
    EXPECT_EQ(a.inputs, a.state->files().size() - (a.state->files().front().bytes == 0 ? 1 : 0)) << c.name;
  }
  // The first member of the cut tar was read whole, the second in part.
  Analysis a = Analyze(Rules(), {dir.path() + "/cut.tar"}, ScanOptions());
  ASSERT_EQ(a.state->files().size(), 2u);
  EXPECT_EQ(a.state->files()[0].bytes, big0.size());
  EXPECT_TRUE(a.state->files()[0].error.empty());
  EXPECT_FALSE(a.state->files()[1].error.empty());
}

// A member whose own compressed bytes are damaged (a .gz cut while it was
// written, a bad CRC, a foreign .xz) is that member's error only: the tar
// itself is intact, so the members after it are read, every member is counted
// and the damaged one is named as unreadable. (It used to end the archive: the
// later members vanished and a failed job read "partial: no problem found".)
TEST(Source, DamagedCompressedMemberIsUnreadableAndTheMembersAfterItRead) {
  TempDir dir;
  std::string big, healthy = "node-b:7:7 [0] NCCL INFO Using network IB\n";
  for (int i = 0; i < 5000; ++i) big += "node-a:1:1 [0] NCCL INFO Using network IB\n";
  std::string gz = Archive({{"x", big}}, ARCHIVE_FILTER_GZIP, false);
  std::string zst = Archive({{"x", big}}, ARCHIVE_FILTER_ZSTD, false);
  std::string xz = Archive({{"x", big}}, ARCHIVE_FILTER_XZ, false);
  struct Case {
    std::string member, data, error;
  };
  const Case cases[] = {
      {"a/rank0.log.gz", Half(gz), "truncated gzip stream"},
      {"a/rank0.log.gz", gz.substr(0, 20) + std::string(gz.size() - 20, '\0'), "corrupt gzip data"},
      {"a/rank0.log.zst", Half(zst), "truncated zstd stream"},
      {"a/rank0.log.xz", xz.substr(0, 12) + std::string(40, '\xff'), "xz"},
  };
  for (const Case& c : cases) {
    for (bool failing : {true, false}) {  // rank 1 failed (the job failed), or all is well
      std::string second = failing ? RankLog(1) : healthy;
      std::string tar =
          dir.Write("job.tar", Archive({{c.member, c.data}, {"b/rank1.log", second}}, ARCHIVE_FILTER_NONE));
      Analysis a = Analyze(Rules(), {tar}, ScanOptions());
      SCOPED_TRACE(c.member + " / " + c.error + (failing ? " / failed job" : " / healthy job"));
      ASSERT_EQ(a.errors.size(), 1u);
      EXPECT_EQ(a.errors[0].rfind("cannot read " + tar + ":" + c.member + ": ", 0), 0u) << a.errors[0];
      EXPECT_NE(a.errors[0].find(c.error), std::string::npos) << a.errors[0];
      ASSERT_EQ(FileNames(a), (std::vector<std::string>{tar + ":" + c.member, tar + ":b/rank1.log"}));
      EXPECT_FALSE(a.state->files()[0].error.empty());
      EXPECT_TRUE(a.state->files()[1].error.empty());
      EXPECT_EQ(a.state->files()[1].bytes, second.size());
      std::string json = RenderJson(*a.state, a.diagnosis);
      EXPECT_NE(json.find("\"unreadable_files\":1"), std::string::npos);
      if (failing) {
        EXPECT_EQ(std::string(StatusName(a.diagnosis.status)), "fail");
        ASSERT_FALSE(a.diagnosis.findings.empty());
        EXPECT_EQ(a.diagnosis.findings[0].rule_id, "NCCL-CONNECT-FAILED");
      } else {
        EXPECT_EQ(std::string(StatusName(a.diagnosis.status)), "partial");
      }
    }
  }
}

// An .xz whose stream asks for a dictionary past the decoder's memory limit
// (1.5 GiB here; its block header patched, CRC32 and all) is refused with a
// clear reason, as a zstd window past 2^27 is, instead of the decoder taking
// what the header asks for (libarchive's xz filter set no limit: a 229 KB
// file of zeros took 1.5 GB). The other inputs are read.
TEST(Source, XzDictionaryPastTheMemoryLimitIsRefused) {
  TempDir dir;
  std::string xz = Archive({{"x", RankLog(1)}}, ARCHIVE_FILTER_XZ, false);
  // Stream header (12 bytes), then the block header: its size byte, flags,
  // then the filter flags of LZMA2 (id 0x21, 1 property byte: the dictionary).
  const size_t block = 12, header_size = (static_cast<unsigned char>(xz[block]) + 1) * 4;
  const size_t filter = xz.find(std::string("\x21\x01", 2), block + 2);
  ASSERT_LT(filter, block + header_size);
  xz[filter + 2] = 37;  // (2 | 1) << (37 / 2 + 11) = 1.5 GiB
  const uLong crc = crc32(0, reinterpret_cast<const Bytef*>(xz.data() + block), header_size - 4);
  for (int i = 0; i < 4; ++i) xz[block + header_size - 4 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
  std::string bad = dir.Write("huge_dict.log.xz", xz);
  std::string good = dir.Write("z_good.log", RankLog(3));
  Analysis a = Analyze(Rules(), {bad, good}, ScanOptions());
  ASSERT_EQ(a.errors.size(), 1u);
  EXPECT_EQ(a.errors[0], "cannot read " + bad +
                             ": xz data needs more than 128 MiB to decode (its dictionary is too large): not read");
  ASSERT_EQ(a.state->files().size(), 2u);
  EXPECT_EQ(a.state->files()[1].bytes, RankLog(3).size());
  // The same stream with its own (small) dictionary reads.
  xz = Archive({{"x", RankLog(1)}}, ARCHIVE_FILTER_XZ, false);
  Analysis ok = Analyze(Rules(), {dir.Write("small_dict.log.xz", xz)}, ScanOptions());
  EXPECT_TRUE(ok.errors.empty());
  EXPECT_EQ(ok.state->files()[0].bytes, RankLog(1).size());
}

TEST(Source, GrepPrefixedInputCitesTheOriginalFileAndLine) {
  TempDir dir;
  // `grep -rn . logs/` of two rank logs, piped in (here: saved to a file).
  // Each ends with COLL trace lines, which the parallel stage folds.
  std::string grep;
  for (int r : {0, 1}) {
    std::string log = RankLog(r);
    for (int op = 1; op <= 3; ++op) {
      log += "node-a:" + std::to_string(1000 + r) + ":" + std::to_string(1000 + r) + " [" + std::to_string(r) +
             "] NCCL INFO AllReduce: opCount " + std::to_string(op) +
             " sendbuff 0x7f00 recvbuff 0x7f00 count 1024 datatype 7 op 0 root 0 comm 0x55d0c1a0e9f" +
             std::to_string(r) + " [nranks=4] stream 0x5500\n";
    }
    size_t n = 0, at = 0;
    while (at < log.size()) {
      size_t nl = log.find('\n', at);
      ++n;
      grep += "logs/rank" + std::to_string(r) + ".log:" + std::to_string(n) + ":" + log.substr(at, nl - at) + "\n";
      at = nl + 1;
    }
  }
  std::string path = dir.Write("grep.txt", grep);
  Analysis a = Analyze(Rules(), {path}, ScanOptions());
  EXPECT_EQ(FileNames(a), std::vector<std::string>{path});
  const Finding* connect = nullptr;
  for (const auto& f : a.diagnosis.findings) {
    if (f.rule_id == "NCCL-CONNECT-FAILED") connect = &f;
  }
  ASSERT_NE(connect, nullptr);
  ASSERT_FALSE(connect->evidence.empty());
  const Evidence& e = connect->evidence[0];
  EXPECT_EQ(a.state->CitedPath(e), "logs/rank1.log");
  EXPECT_EQ(a.state->CitedLine(e), 45);
  EXPECT_EQ(e.file, 0);  // the scan itself still knows where it read the line
  EXPECT_EQ(e.line, 48 + 45);
  std::string json = RenderJson(*a.state, a.diagnosis);
  EXPECT_NE(json.find("{\"file\":\"logs/rank1.log\",\"line\":45,"), std::string::npos) << json;
  ReportOptions ro;
  std::string text = RenderText(*a.state, a.diagnosis, ro);
  EXPECT_NE(text.find("logs/rank1.log:45:"), std::string::npos) << text;

  // Facts folded in the parallel stage (the last opCount of each rank) cite
  // the origin too.
  int opcounts = 0;
  const int fact = a.state->rules().FindFact("last_opcount");
  ASSERT_GE(fact, 0);
  for (const Subject& s : a.state->subjects()) {
    if (s.merged_away) continue;
    for (const auto& kv : s.keyed[fact]) {
      const Evidence& v = kv.second.evidence;
      EXPECT_EQ(a.state->CitedPath(v), "logs/rank" + std::to_string(s.rank) + ".log");
      EXPECT_EQ(a.state->CitedLine(v), s.rank == 0 ? 48 : 49);
      ++opcounts;
    }
  }
  EXPECT_EQ(opcounts, 2);

  // A source location at the start of a line is not a grep prefix to cite.
  std::string py = dir.Write("py.log",
                             "/usr/lib/python3/site-packages/torch/x.py:88: n1:7:9 [0] misc/socket.cc:1 NCCL WARN "
                             "socketStartConnect: Connect to 10.1.2.4<39275> failed : Connection refused\n");
  Analysis b = Analyze(Rules(), {py}, ScanOptions());
  for (const auto& f : b.diagnosis.findings) {
    for (const auto& ev : f.evidence) EXPECT_EQ(b.state->CitedPath(ev), py) << f.rule_id;
  }
}

TEST(Source, SkippedInputsAreInTheJson) {
  TempDir dir;
  dir.Write("rank0.log", RankLog(0));
  WriteJobNotes(dir, "");
  Analysis a = Analyze(Rules(), {dir.path()}, ScanOptions());
  std::string json = RenderJson(*a.state, a.diagnosis);
  EXPECT_NE(json.find("\"skipped\":{\"not_a_log\":3,\"binary\":0,\"duplicate\":0,\"hidden\":0,\"paths\":[{\"path\":\"" +
                      dir.path() + "/README.md\",\"reason\":\"not_a_log\"}"),
            std::string::npos)
      << json;
}

}  // namespace
}  // namespace ncclscan
