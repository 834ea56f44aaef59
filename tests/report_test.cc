// Reports against hostile input: every string from the input reaches the text,
// markdown and JSON reports escaped for them (no terminal controls, bidi
// overrides, HTML, links, mentions or fences of the input's own), text is cut
// between characters, and the reports are bounded ("and N more").
#include "engine/reports/report.h"

#include <gtest/gtest.h>

#include <sstream>

#include "engine/reports/markdown_escape.h"
#include "engine/reports/report_internal.h"
#include "engine/run/analyze.h"
#include "parsers/text_util.h"
#include "rules/rule_loader.h"
#include "tests/test_util.h"

namespace ncclscan {
namespace {

const RuleSet& Rules() { return BuiltInRules(); }

Analysis Scan(const std::vector<std::string>& paths) {
  ScanOptions opts;
  opts.jobs = 1;
  return Analyze(Rules(), paths, opts);
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// Columns a line takes at a terminal: one per character.
size_t Columns(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// `s` is valid UTF-8 and holds no unsafe code point (IsUnsafeCodePoint) but
// its line ends and, when `sgr` is set, the report's own colour sequences.
::testing::AssertionResult Printable(const std::string& s, bool sgr = false) {
  for (size_t i = 0; i < s.size();) {
    if (sgr && s.compare(i, 2, "\x1b[") == 0) {
      size_t j = i + 2;
      while (j < s.size() && (IsDigit(s[j]) || s[j] == ';')) ++j;
      if (j < s.size() && s[j] == 'm') {
        i = j + 1;
        continue;
      }
    }
    uint32_t cp;
    size_t n = DecodeUtf8(s, i, &cp);
    if (n == 0) return ::testing::AssertionFailure() << "invalid UTF-8 at byte " << i << ": " << s.substr(i, 40);
    if (cp != '\n' && IsUnsafeCodePoint(cp)) {
      return ::testing::AssertionFailure() << "raw U+" << std::hex << cp << " at byte " << std::dec << i
                                           << " after: " << s.substr(i > 40 ? i - 40 : 0, std::min<size_t>(i, 40));
    }
    i += n;
  }
  return ::testing::AssertionSuccess();
}

// A markdown document split as a CommonMark renderer splits it: the lines
// outside fenced code blocks, and the lines inside them.
struct Markdown {
  std::vector<std::string> prose, code;
  int blocks = 0;
  bool closed = true;  // every block was closed by its own fence
};

Markdown Split(const std::string& md) {
  Markdown m;
  size_t fence = 0;
  for (const std::string& l : Lines(md)) {
    size_t run = 0;
    while (run < l.size() && l[run] == '`') ++run;
    if (fence == 0) {
      if (run >= 3 && l.find('`', run) == std::string::npos) {
        fence = run;
        ++m.blocks;
      } else {
        m.prose.push_back(l);
      }
    } else if (run >= fence && l.find_first_not_of(' ', run) == std::string::npos) {
      fence = 0;
    } else {
      m.code.push_back(l);
    }
  }
  m.closed = fence == 0;
  return m;
}

// Where `what` occurs in markdown prose with its first character not
// backslash-escaped (an escaped character renders as itself), or npos.
size_t Unescaped(const std::string& md, const std::string& what) {
  for (size_t p = md.find(what); p != std::string::npos; p = md.find(what, p + 1)) {
    size_t slashes = 0;
    while (slashes < p && md[p - 1 - slashes] == '\\') ++slashes;
    if (slashes % 2 == 0) return p;
  }
  return std::string::npos;
}

// Unescaped pipes of a table row (cell borders).
int Pipes(const std::string& row) {
  int n = 0;
  for (size_t i = 0; i < row.size(); ++i) {
    if (row[i] == '\\')
      ++i;
    else if (row[i] == '|')
      ++n;
  }
  return n;
}

// --- the escaping functions -------------------------------------------------------

TEST(SanitizeForTerminal, ShowsEveryUnsafeCodePointEscaped) {
  struct Case {
    const char* in;
    const char* want;
  } cases[] = {
      {"plain text é ✓", "plain text é ✓"},
      {"tab\tkept", "tab\tkept"},
      {"\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"},
      {"new\nline\r", "new\\x0aline\\x0d"},
      {"back\bspace del\x7f nul", "back\\x08space del\\x7f nul"},
      {"C1 csi \xC2\x9B"
       "31m",
       "C1 csi \\u009b31m"},
      {"raw byte \x9b"
       "31m",
       "raw byte \\x9b31m"},
      {"rlo \xE2\x80\xAE"
       "cba",
       "rlo \\u202ecba"},
      {"lre \xE2\x80\xAA pdf \xE2\x80\xAC", "lre \\u202a pdf \\u202c"},
      {"isolates \xE2\x81\xA6 \xE2\x81\xA9", "isolates \\u2066 \\u2069"},
      {"marks \xE2\x80\x8E \xE2\x80\x8F \xD8\x9C", "marks \\u200e \\u200f \\u061c"},
      {"separators \xE2\x80\xA8 \xE2\x80\xA9", "separators \\u2028 \\u2029"},
      {"cut \xE2\x82", "cut \\xe2\\x82"},
  };
  for (const auto& c : cases) EXPECT_EQ(SanitizeForTerminal(c.in), c.want) << c.in;
}

TEST(SanitizeForTerminal, CutsBetweenCharactersAndEscapes) {
  // Every cut of a text mixing 1-3 byte characters and escapes: at most
  // max_bytes, valid UTF-8, "..." at the end, and never half an escape.
  const std::string s =
      "a€b\x1b"
      "c€€\xE2\x80\xAE"
      "d";
  const std::string whole = SanitizeForTerminal(s);
  for (size_t max = 3; max < whole.size(); ++max) {
    std::string cut = SanitizeForTerminal(s, max);
    EXPECT_LE(cut.size(), max);
    EXPECT_TRUE(Printable(cut)) << max;
    ASSERT_TRUE(EndsWith(cut, "...")) << max;
    std::string kept = cut.substr(0, cut.size() - 3);
    EXPECT_TRUE(StartsWith(whole, kept)) << max;
    EXPECT_FALSE(EndsWith(kept, "\\") || EndsWith(kept, "\\x") || EndsWith(kept, "\\x1") || EndsWith(kept, "\\u20"))
        << kept;
  }
  EXPECT_EQ(SanitizeForTerminal(s, whole.size()), whole);
}

TEST(CutUtf8, NeverEndsInsideACharacter) {
  const std::string s = "ab€d";  // € is 3 bytes: 2..4
  EXPECT_EQ(CutUtf8(s, 2), "ab");
  EXPECT_EQ(CutUtf8(s, 3), "ab");
  EXPECT_EQ(CutUtf8(s, 4), "ab");
  EXPECT_EQ(CutUtf8(s, 5), "ab€");
  EXPECT_EQ(CutUtf8(s, 100), s);
  EXPECT_EQ(CutUtf8("\x80\x80\x80\x80\x80", 2), "\x80\x80");  // not UTF-8: cut where asked
}

TEST(AppendJsonEscaped, EscapesControlsBidiAndInvalidBytes) {
  std::string out;
  AppendJsonEscaped(&out, "q\" \\ \n \x1b \x7f \xC2\x9B \xE2\x80\xAE \xE2\x80\xA8 \x9b é");
  EXPECT_EQ(out, "q\\\" \\\\ \\n \\u001b \\u007f \\u009b \\u202e \\u2028 \xEF\xBF\xBD é");
}

TEST(MarkdownText, EscapesHtmlLinksEmphasisAndMentions) {
  struct Case {
    const char* in;
    const char* want;
  } cases[] = {
      {"<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"},
      {"[x](javascript:alert(1))", "\\[x\\](javascript:alert(1))"},
      {"![i](http://x/y.png)", "!\\[i\\](http://x/y.png)"},
      {"*bold* _it_ ~~del~~ `code` $x$", "\\*bold\\* \\_it\\_ \\~\\~del\\~\\~ \\`code\\` \\$x\\$"},
      {"# heading | cell \\", "\\# heading \\| cell \\\\"},
      {"ping @channel and @here, @org/team",
       "ping @\xE2\x80\x8B"
       "channel and @\xE2\x80\x8Bhere, @\xE2\x80\x8Borg/team"},
      {"mail ops@example.com, @ alone", "mail ops@example.com, @ alone"},
      {"a & b", "a &amp; b"},
      {"esc \x1b[31m nl \n", "esc \\\\x1b\\[31m nl \\\\x0a"},
  };
  for (const auto& c : cases) EXPECT_EQ(MarkdownText(c.in), c.want) << c.in;
}

TEST(MarkdownCodeSpan, DelimiterLongerThanAnyBacktickRun) {
  EXPECT_EQ(MarkdownCodeSpan("rank0.log"), "`rank0.log`");
  EXPECT_EQ(MarkdownCodeSpan("a`b"), "``a`b``");
  EXPECT_EQ(MarkdownCodeSpan("```x"), "```` ```x ````");
  EXPECT_EQ(MarkdownCodeSpan(" x "), "`  x  `");
  EXPECT_EQ(MarkdownCodeSpan("a|b", /*in_table_cell=*/true), "`a\\|b`");
  EXPECT_EQ(MarkdownCodeSpan("new\nline"), "`new\\x0aline`");
  EXPECT_EQ(MarkdownFence({"a", "``` x", "b````"}), "`````");
  EXPECT_EQ(MarkdownFence({"plain"}), "```");
}

// --- whole reports of a hostile job ------------------------------------------------

// A host name with a C1 CSI, a right-to-left override and a backspace.
const std::string kHost =
    "gpu\xC2\x9B"
    "a17\xE2\x80\xAE"
    "x\b";
// A file name that closes a fence, opens HTML and clears the screen.
const std::string kEvilName = "evil\n```\n<img src=x onerror=alert(1)>\x1b[2J\x1b]0;pwned\x07.log";

std::string HostileLog() {
  std::string p = kHost + ":48213:48290 [0] ";
  std::string s;
  s += p + "NCCL INFO NCCL version 2.21.5+cuda12.4\xE2\x80\xAE<b>\n";
  s += p +
       "transport/frob.cc:123 NCCL WARN <img src=x onerror=alert(1)> [x](javascript:alert(1)) @channel "
       "*bold* | pipe `tick` ```fence\x1b[31mred\xE2\x81\xA6iso \xE2\x80\xAE"
       "desrever\n";
  s += p +
       "transport/frob.cc:124 NCCL WARN raw C1 \x9b"
       "31m and \xC2\x9B"
       "31m DEL\x7f <script>alert(1)</script>\n";
  return s;
}

TEST(ReportHostile, MarkdownCarriesNothingRaw) {
  TempDir dir;
  Analysis a = Scan({dir.Write(kEvilName, HostileLog())});
  ASSERT_FALSE(a.diagnosis.findings.empty());
  ReportOptions ro;
  ro.ranks = true;
  const std::string md = RenderMarkdown(*a.state, a.diagnosis, ro);
  EXPECT_TRUE(Printable(md));
  Markdown m = Split(md);
  EXPECT_TRUE(m.closed) << md;
  EXPECT_GE(m.blocks, 1);
  std::string prose;
  for (const auto& l : m.prose) prose += l + "\n";
  for (const char* raw : {"<img", "<script", "<b>", "](javascript", "[x]", "@channel", "*bold*", "`tick`"}) {
    EXPECT_EQ(Unescaped(prose, raw), std::string::npos) << "raw '" << raw << "' in markdown prose:\n" << prose;
  }
  EXPECT_NE(prose.find("@\xE2\x80\x8B"
                       "channel"),
            std::string::npos)
      << prose;
  EXPECT_NE(prose.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos) << prose;
  // The only headings are the report's own, and every table row has its own cells.
  for (const auto& l : m.prose) {
    if (StartsWith(l, "#")) {
      EXPECT_TRUE(StartsWith(l, "## ncclscan: ") || StartsWith(l, "### ")) << l;
    }
  }
  int finding_rows = 0, rank_rows = 0;
  bool in_ranks = false;
  for (const auto& l : m.prose) {
    if (StartsWith(l, "### Ranks")) in_ranks = true;
    if (!StartsWith(l, "|")) continue;
    if (in_ranks) {
      ++rank_rows;
      EXPECT_EQ(Pipes(l), 9) << l;
    } else {
      ++finding_rows;
      EXPECT_EQ(Pipes(l), 6) << l;
    }
  }
  EXPECT_EQ(finding_rows, 2 + static_cast<int>(a.diagnosis.findings.size()));
  EXPECT_GE(rank_rows, 3);
  // The evidence, file name and all, stays inside its code block.
  for (const auto& l : m.code) EXPECT_TRUE(StartsWith(l, dir.path() + "/evil\\x0a```\\x0a<img")) << l;
}

TEST(ReportHostile, TextCarriesNoTerminalControls) {
  TempDir dir;
  Analysis a = Scan({dir.Write(kEvilName, HostileLog())});
  ReportOptions ro;
  ro.verbose = true;
  ro.ranks = true;
  const std::string text = RenderText(*a.state, a.diagnosis, ro);
  EXPECT_TRUE(Printable(text)) << text;
  EXPECT_NE(text.find("\\u202e"), std::string::npos) << text;
  EXPECT_NE(text.find("\\u009b"), std::string::npos) << text;
  ro.color = true;
  EXPECT_TRUE(Printable(RenderText(*a.state, a.diagnosis, ro), /*sgr=*/true));
  ro.color = false;
  ro.width = 60;
  const std::string narrow = RenderText(*a.state, a.diagnosis, ro);
  EXPECT_TRUE(Printable(narrow));
  for (const auto& l : Lines(narrow)) {
    // Table rows (--ranks) are not wrapped.
    if (!StartsWith(l, "  rank ") && l.find(" 48213 ") == std::string::npos) {
      EXPECT_LE(Columns(l), 60u) << l;
    }
  }
}

TEST(ReportHostile, JsonIsPlainPrintableUtf8) {
  TempDir dir;
  Analysis a = Scan({dir.Write(kEvilName, HostileLog())});
  const std::string json = RenderJson(*a.state, a.diagnosis);
  EXPECT_TRUE(Printable(json));
  EXPECT_NE(json.find("evil\\n```\\n<img src=x onerror=alert(1)>\\u001b[2J"), std::string::npos);
  EXPECT_NE(json.find("\\u202e"), std::string::npos);
}

TEST(ReportHostile, EvidenceIsCutBetweenCharacters) {
  TempDir dir;
  const std::string prefix = "n1:7:7 [0] transport/frob.cc:200 NCCL WARN ";
  std::string line = prefix + std::string(kMaxEvidenceText - 1 - prefix.size(), 'a');
  for (int i = 0; i < 400; ++i) line += "€";  // the first € spans the cut (bytes 511-513)
  Analysis a = Scan({dir.Write("cut.log", line + "\n")});
  bool seen = false;
  for (const auto& f : a.diagnosis.findings) {
    for (const auto& e : f.evidence) {
      if (e.text.find("frob.cc:200") == std::string::npos) continue;
      seen = true;
      EXPECT_EQ(e.text.size(), kMaxEvidenceText - 1);
      EXPECT_TRUE(Printable(e.text));
    }
    if (f.rule_id == "NCCL-WARN-UNRECOGNISED") {
      EXPECT_TRUE(Printable(f.explanation));
      EXPECT_NE(f.explanation.find("€..."), std::string::npos) << f.explanation;  // the quoted message, cut
    }
  }
  EXPECT_TRUE(seen);
  ReportOptions ro;
  for (const std::string& out : {RenderJson(*a.state, a.diagnosis), RenderText(*a.state, a.diagnosis, ro),
                                 RenderMarkdown(*a.state, a.diagnosis)}) {
    EXPECT_TRUE(Printable(out));
    EXPECT_EQ(out.find("\xEF\xBF\xBD"), std::string::npos)
        << "a replacement character: something was cut mid-character";
    EXPECT_EQ(out.find("\\xe2"), std::string::npos);
  }
}

// --- bounds ---------------------------------------------------------------------------

TEST(ReportBounds, FindingsAreCappedAndCounted) {
  TempDir dir;
  std::string log;
  for (int i = 0; i < 300; ++i)
    log += "n1:7:7 [0] transport/frob.cc:" + std::to_string(1000 + i) + " NCCL WARN storm\n";
  Analysis a = Scan({dir.Write("storm.log", log)});
  const size_t total = a.diagnosis.findings.size();
  ASSERT_GE(total, 300u);
  const std::string json = RenderJson(*a.state, a.diagnosis);
  EXPECT_EQ(Count(json, "{\"rule\":"), kMaxJsonFindings);
  EXPECT_NE(json.find("\"findings_omitted\":" + std::to_string(total - kMaxJsonFindings)), std::string::npos);
  size_t shown_text = 0;
  for (const auto& f : a.diagnosis.findings) shown_text += f.severity != Severity::kInfo;
  const std::string text = RenderText(*a.state, a.diagnosis, ReportOptions());
  EXPECT_NE(text.find("... and " + std::to_string(shown_text - kMaxReportFindings) + " more findings"),
            std::string::npos);
  EXPECT_NE(text.find("[50] "), std::string::npos);
  EXPECT_EQ(text.find("[51] "), std::string::npos);
  const std::string md = RenderMarkdown(*a.state, a.diagnosis);
  EXPECT_NE(md.find("_and " + std::to_string(total - kMaxReportFindings) + " more findings"), std::string::npos);
  EXPECT_EQ(Count(md, "\n### "), kMaxReportFindings);

  // Few findings: nothing omitted.
  Analysis one = Scan({dir.Write("one.log", "n1:7:7 [0] transport/frob.cc:1 NCCL WARN x\n")});
  EXPECT_NE(RenderJson(*one.state, one.diagnosis).find("\"findings_omitted\":0"), std::string::npos);
}

TEST(ReportBounds, SaysHowManyLinesMatchedInAll) {
  TempDir dir;
  std::string log;
  for (int i = 0; i < 12; ++i) log += "n1:7:7 [0] transport/frob.cc:5 NCCL WARN again " + std::to_string(i) + "\n";
  Analysis a = Scan({dir.Write("again.log", log)});
  EXPECT_NE(RenderText(*a.state, a.diagnosis, ReportOptions()).find("(12 matching lines in all, 3 shown)"),
            std::string::npos);
  EXPECT_NE(RenderMarkdown(*a.state, a.diagnosis).find("_12 matching lines in all; the first 5 are shown._"),
            std::string::npos);
}

TEST(ReportBounds, LongCapturesAreCutInExplanations) {
  TempDir dir;
  Analysis a =
      Scan({dir.Write("long.log", "n1:7:7 [0] transport/frob.cc:9 NCCL WARN " + std::string(5000, 'z') + "\n")});
  ASSERT_FALSE(a.diagnosis.findings.empty());
  for (const auto& f : a.diagnosis.findings) EXPECT_LE(f.explanation.size(), kMaxFieldText);
  EXPECT_NE(a.diagnosis.findings[0].explanation.find("zzz..."), std::string::npos);
}

// --- readability ------------------------------------------------------------------------

std::string RankLog(int rank) {
  std::string host = rank < 2 ? "node-a" : "node-b";
  std::string p = host + ":" + std::to_string(1000 + rank) + ":" + std::to_string(1000 + rank) + " [" +
                  std::to_string(rank % 2) + "] NCCL INFO ";
  std::string s;
  s += p + "NCCL version 2.21.5+cuda12.4\n";
  s += p + "Using network IB\n";
  s += p + "ncclCommInitRank comm 0x55d0c1a0e9f" + std::to_string(rank) + " rank " + std::to_string(rank) +
       " nranks 4 cudaDev " + std::to_string(rank % 2) + " nvmlDev 0 busId " + std::to_string(20 + rank % 2) +
       "000 commId 0xabc - Init START\n";
  s += p + "ncclCommInitRank comm 0x55d0c1a0e9f" + std::to_string(rank) + " rank " + std::to_string(rank) +
       " nranks 4 cudaDev " + std::to_string(rank % 2) + " nvmlDev 0 busId " + std::to_string(20 + rank % 2) +
       "000 commId 0xabc - Init COMPLETE\n";
  // The run's end: without it the verdict is "incomplete" (healthy needs evidence).
  s += p + "comm 0x55d0c1a0e9f" + std::to_string(rank) + " rank " + std::to_string(rank) + " nranks 4 cudaDev " +
       std::to_string(rank % 2) + " busId " + std::to_string(20 + rank % 2) + "000 - Destroy COMPLETE\n";
  return s;
}

TEST(ReportReadable, HealthyRunGetsASummaryLineAndRankTable) {
  TempDir dir;
  std::vector<std::string> paths;
  for (int r = 0; r < 4; ++r) paths.push_back(dir.Write("rank" + std::to_string(r) + ".log", RankLog(r)));
  Analysis a = Scan(paths);
  ASSERT_EQ(std::string(StatusName(a.diagnosis.status)), "ok");
  ReportOptions ro;
  ro.ranks = true;
  const std::string text = RenderText(*a.state, a.diagnosis, ro);
  EXPECT_NE(text.find("healthy: 4 ranks on 2 hosts; 1 of 1 communicator initialised on every rank; network IB"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  rank  host    pid   devices  NCCL    transport  last seq  first error\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  3     node-b  1003  1        2.21.5  IB         -         -\n"), std::string::npos) << text;
  const std::string md = RenderMarkdown(*a.state, a.diagnosis, ro);
  EXPECT_NE(md.find("| rank | host | pid | devices | NCCL | transport | last seq | first error |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| 0 | node-a | 1000 | 0 | 2.21.5 | IB | - | - |"), std::string::npos) << md;
}

TEST(ReportReadable, WrapsToTheGivenWidthOnly) {
  TempDir dir;
  std::string log = "n1:7:7 [0] transport/frob.cc:3 NCCL WARN";
  for (int i = 0; i < 40; ++i) log += " word" + std::to_string(i);
  Analysis a = Scan({dir.Write("w.log", log + "\n")});
  ReportOptions ro;
  ro.verbose = true;  // without -v an evidence line is one row, cut (below)
  const std::string flat = RenderText(*a.state, a.diagnosis, ro);
  ro.width = 50;
  const std::string wrapped = RenderText(*a.state, a.diagnosis, ro);
  EXPECT_GT(Lines(wrapped).size(), Lines(flat).size() + 5);
  for (const auto& l : Lines(wrapped)) EXPECT_LE(Columns(l), 50u) << l;
  // Wrapping only moves line breaks: the words are the same.
  auto words = [](const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> w;
    for (std::string x; in >> x;) w.push_back(x);
    return w;
  };
  EXPECT_EQ(words(flat), words(wrapped));
  // Without -v, on a terminal: the evidence line is one row ending in "...".
  ro.verbose = false;
  const std::string first_screen = RenderText(*a.state, a.diagnosis, ro);
  for (const auto& l : Lines(first_screen)) EXPECT_LE(Columns(l), 50u) << l;
  EXPECT_NE(first_screen.find("/w.log:1: n1:7:7"), std::string::npos) << first_screen;
  EXPECT_NE(first_screen.find("...\n"), std::string::npos) << first_screen;
}

}  // namespace
// A list too wide for a row breaks between its items, never inside a host
// name or a number; a row cut ends in "..."; width 0 changes nothing.
TEST(TextLayout, WrapsBetweenTokensAndCutsRows) {
  const std::string hosts = "gpu-node-000,gpu-node-001,gpu-node-002,gpu-node-003";
  const std::string wrapped = WrapColumns("on " + hosts, 0, 2, 30);
  std::istringstream in(wrapped);
  std::string row;
  while (std::getline(in, row)) {
    EXPECT_LE(Columns(row), 30u) << wrapped;
    if (row.find("gpu-node") == std::string::npos) continue;
    EXPECT_TRUE(row.back() == ',' || row.find("gpu-node-003") != std::string::npos) << wrapped;
  }
  EXPECT_EQ(WrapColumns("on " + hosts, 0, 2, 0), "on " + hosts);
  EXPECT_EQ(OneRow("abcdefghijklmnopqrstuvwxyz", 4, 20), "abcdefghijklm...");
  EXPECT_EQ(OneRow("short", 4, 20), "short");
  EXPECT_EQ(OneRow("abcdefghijklmnopqrstuvwxyz", 4, 0), "abcdefghijklmnopqrstuvwxyz");
}

}  // namespace ncclscan
