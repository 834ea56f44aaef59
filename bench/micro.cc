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
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

// The literal prefilter alone, on the text Match() gives it.
void BM_Prefilter(benchmark::State& state) {
  ncclscan::LineParser parser;
  ncclscan::Arena arena;
  std::vector<std::string_view> texts;
  for (std::string_view l : g_lines) {
    parser.ParseEach(l, &arena, [&](ncclscan::ParsedLine& pl, int) {
      if (!pl.binary) texts.push_back(ncclscan::RuleSet::PrefilterText(pl));
    });
  }
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
