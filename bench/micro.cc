// Micro-benchmarks of the per-line scanning path, one stage at a time, on the
// lines of a real or simulated log file:
//
//   ncclscan_micro --input FILE [google-benchmark flags]
//
// (FILE defaults to a simulated rank log; see bench/README.md). Each benchmark
// reports bytes/s and lines/s over the same lines, so the stages can be
// compared with each other and with the memchr line split that every scanner,
// ripgrep included, pays.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#if NCCLSCAN_MICRO_HYPERSCAN
#include <hs/hs.h>
#endif

#include "parsers/line_parser.h"
#include "rules/rule_loader.h"
#include "rules/rule_set.h"

namespace {

std::string g_input;  // whole file
std::vector<std::string_view> g_lines;
const ncclscan::RuleSet* g_rules = nullptr;

void SetCounters(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * g_input.size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * g_lines.size()));
}

void BM_SplitLines(benchmark::State& state) {
  for (auto _ : state) {
    size_t n = 0;
    const char* p = g_input.data();
    const char* end = p + g_input.size();
    while (p < end) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
      p = nl ? nl + 1 : end;
      ++n;
    }
    benchmark::DoNotOptimize(n);
  }
  SetCounters(state);
}
BENCHMARK(BM_SplitLines);

void BM_Unwrap(benchmark::State& state) {
  ncclscan::LineParser parser;
  ncclscan::Arena arena;
  for (auto _ : state) {
    for (std::string_view l : g_lines) {
      ncclscan::ParsedLine pl;
      parser.Unwrap(l, &arena, &pl);
      benchmark::DoNotOptimize(pl.text);
    }
    arena.Reset();
  }
  SetCounters(state);
}
BENCHMARK(BM_Unwrap);

void BM_Parse(benchmark::State& state) {
  ncclscan::LineParser parser;
  ncclscan::Arena arena;
  for (auto _ : state) {
    for (std::string_view l : g_lines) {
      parser.ParseEach(l, &arena, [](ncclscan::ParsedLine& pl, int) { benchmark::DoNotOptimize(pl.message); });
    }
    arena.Reset();
  }
  SetCounters(state);
}
BENCHMARK(BM_Parse);

// The text Match() gives the prefilter, of every line (views into *arena).
std::vector<std::string_view> PrefilterTexts(ncclscan::Arena* arena) {
  ncclscan::LineParser parser;
  std::vector<std::string_view> texts;
  for (std::string_view l : g_lines) {
    parser.ParseEach(l, arena, [&](ncclscan::ParsedLine& pl, int) {
      if (!pl.binary) texts.push_back(ncclscan::RuleSet::PrefilterText(pl));
    });
  }
  return texts;
}

// The literal prefilter alone, on the text Match() gives it.
void BM_Prefilter(benchmark::State& state) {
  ncclscan::Arena arena;
  const std::vector<std::string_view> texts = PrefilterTexts(&arena);
  std::vector<int> ids;
  std::vector<uint8_t> seen;
  size_t found = 0;
  for (auto _ : state) {
    for (std::string_view t : texts) {
      ids.clear();
      g_rules->matcher().FindAll(t, &ids, &seen);
      found += ids.size();
    }
  }
  benchmark::DoNotOptimize(found);
  SetCounters(state);
}
BENCHMARK(BM_Prefilter);

#if NCCLSCAN_MICRO_HYPERSCAN
// The same atoms through Hyperscan (literal mode, caseless, one report per
// atom per scan): the production multi-literal matcher that issue 22 asks to
// measure against LiteralMatcher. Two ways to use it: one scan per line's
// prefilter text (what Match() needs: the atoms of that line), and one scan of
// the whole input (the floor: no per-call cost, no line attribution).
struct HsDb {
  hs_database_t* db = nullptr;
  hs_scratch_t* scratch = nullptr;
  explicit HsDb(unsigned extra_flags) {
    const ncclscan::LiteralMatcher& m = g_rules->matcher();
    std::vector<const char*> exprs;
    std::vector<size_t> lens;
    std::vector<unsigned> flags, ids;
    for (size_t i = 0; i < m.size(); ++i) {
      const std::string& a = m.atom(static_cast<int>(i));
      if (a.empty()) continue;
      exprs.push_back(a.data());
      lens.push_back(a.size());
      flags.push_back(HS_FLAG_CASELESS | extra_flags);
      ids.push_back(static_cast<unsigned>(i));
    }
    hs_compile_error_t* err = nullptr;
    if (hs_compile_lit_multi(exprs.data(), flags.data(), ids.data(), lens.data(), static_cast<unsigned>(exprs.size()),
                             HS_MODE_BLOCK, nullptr, &db, &err) != HS_SUCCESS) {
      std::fprintf(stderr, "hyperscan: %s\n", err ? err->message : "compile failed");
      std::exit(2);
    }
    hs_alloc_scratch(db, &scratch);
  }
  ~HsDb() {
    hs_free_scratch(scratch);
    hs_free_database(db);
  }
};

int OnHsMatch(unsigned id, unsigned long long, unsigned long long, unsigned, void* ctx) {
  static_cast<std::vector<int>*>(ctx)->push_back(static_cast<int>(id));
  return 0;
}

void BM_PrefilterHyperscanPerLine(benchmark::State& state) {
  HsDb hs(HS_FLAG_SINGLEMATCH);  // FindAll reports each atom once per line too
  ncclscan::Arena arena;
  const std::vector<std::string_view> texts = PrefilterTexts(&arena);
  std::vector<int> ids;
  size_t found = 0;
  for (auto _ : state) {
    for (std::string_view t : texts) {
      ids.clear();
      hs_scan(hs.db, t.data(), static_cast<unsigned>(t.size()), 0, hs.scratch, OnHsMatch, &ids);
      found += ids.size();
    }
  }
  benchmark::DoNotOptimize(found);
  SetCounters(state);
}
BENCHMARK(BM_PrefilterHyperscanPerLine);

// What each matcher costs to build over the rule set's atoms: paid once per run,
// before the first line (LiteralMatcher is built twice: every rule, and the
// rules that admit NCCL INFO lines).
void BM_BuildLiteralMatcher(benchmark::State& state) {
  const ncclscan::LiteralMatcher& m = g_rules->matcher();
  for (auto _ : state) {
    ncclscan::LiteralMatcher copy;
    for (size_t i = 0; i < m.size(); ++i) copy.Add(m.atom(static_cast<int>(i)));
    copy.Build();
    benchmark::DoNotOptimize(copy.size());
  }
}
BENCHMARK(BM_BuildLiteralMatcher)->Unit(benchmark::kMillisecond);

void BM_BuildHyperscan(benchmark::State& state) {
  for (auto _ : state) {
    HsDb hs(HS_FLAG_SINGLEMATCH);
    benchmark::DoNotOptimize(hs.db);
  }
}
BENCHMARK(BM_BuildHyperscan)->Unit(benchmark::kMillisecond);

void BM_PrefilterHyperscanWholeInput(benchmark::State& state) {
  HsDb hs(0);
  std::vector<int> ids;
  size_t found = 0;
  for (auto _ : state) {
    ids.clear();
    // Every occurrence (no SINGLEMATCH), as attributing atoms to lines would need.
    hs_scan(hs.db, g_input.data(), static_cast<unsigned>(g_input.size()), 0, hs.scratch, OnHsMatch, &ids);
    found += ids.size();
  }
  benchmark::DoNotOptimize(found);
  SetCounters(state);
}
BENCHMARK(BM_PrefilterHyperscanWholeInput);
#endif

// What the parallel pipeline stage does per line: parse, prefilter, RE2/fields.
void BM_ParseAndMatch(benchmark::State& state) {
  ncclscan::LineParser parser;
  ncclscan::Arena arena;
  ncclscan::MatchScratch scratch;
  size_t matches = 0;
  for (auto _ : state) {
    for (std::string_view l : g_lines) {
      parser.ParseEach(l, &arena, [&](ncclscan::ParsedLine& pl, int) {
        g_rules->Match(pl, &scratch, [&](int, const re2::StringPiece*, int) { ++matches; });
      });
    }
    arena.Reset();
  }
  benchmark::DoNotOptimize(matches);
  SetCounters(state);
}
BENCHMARK(BM_ParseAndMatch);

}  // namespace

int main(int argc, char** argv) {
  std::string path = "/tmp/ncclscan-bench/x1/gpu-node-000/rank3.log";
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--input") == 0 && i + 1 < argc) {
      path = argv[++i];
    } else if (std::strncmp(argv[i], "--input=", 8) == 0) {
      path = argv[i] + 8;
    } else {
      args.push_back(argv[i]);
    }
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "ncclscan_micro: cannot read %s (generate it with bench/run.sh or pass --input FILE)\n",
                 path.c_str());
    return 2;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  g_input = ss.str();
  for (size_t p = 0; p < g_input.size();) {
    size_t nl = g_input.find('\n', p);
    if (nl == std::string::npos) nl = g_input.size();
    g_lines.emplace_back(g_input.data() + p, nl - p);
    p = nl + 1;
  }
  std::string errors;
  auto rules = ncclscan::LoadRules({}, &errors);
  if (!rules) {
    std::fprintf(stderr, "%s", errors.c_str());
    return 2;
  }
  g_rules = rules.get();
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
