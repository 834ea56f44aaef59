// Internal to rules/: what the loader's files (rule_loader.cc: sources,
// layers, pass 2's selection and disables; rule_compile.cc: each rule and
// correlation compiled; rule_check.cc: pass 3, the prefilter and the
// examples) share.
//
// Thread-safety: as RuleLoader (one thread; OnTwoThreads fans out).
#ifndef NCCLSCAN_RULES_RULE_LOADER_INTERNAL_H_
#define NCCLSCAN_RULES_RULE_LOADER_INTERNAL_H_

#include <re2/re2.h>

#include <atomic>
#include <exception>
#include <map>
#include <string>
#include <system_error>
#include <thread>

#include "rules/pattern_atoms.h"
#include "rules/rule_loader.h"
#include "rules/rule_reader.h"

namespace ncclscan {

// Real rules compile to a few hundred instructions; this bounds per-line cost.
inline constexpr int kMaxProgramSize = 20000;

inline bool ValidId(const std::string& id) {
  if (id.empty() || id.size() > 64 || !(id[0] >= 'A' && id[0] <= 'Z')) return false;
  for (char c : id) {
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

// Runs fn(i) for every i in [0, n) on this thread and one helper, each taking
// the next i when done with the last (put the biggest items first), or on this
// thread alone when no thread can be started. Start-up work that is independent
// per file or per rule (YAML parse, RE2 compiles, example checks) is split this
// way; callers keep results per index, so output order is fixed. An exception
// on the helper is rethrown here.
template <typename F>
void OnTwoThreads(size_t n, F&& fn) {
  std::atomic<size_t> next{0};
  auto run = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  std::exception_ptr helper_error;
  std::thread helper;
  try {
    helper = std::thread([&] {
      try {
        run();
      } catch (...) {
        helper_error = std::current_exception();
      }
    });
  } catch (const std::system_error&) {  // no thread to be had: one is enough
  }
  try {
    run();
  } catch (...) {
    if (helper.joinable()) helper.join();
    throw;
  }
  if (helper.joinable()) helper.join();
  if (helper_error) std::rethrow_exception(helper_error);
}

struct RuleLoader::Impl : RuleReader {
  bool embedded = false;  // the built-in rules are loaded: the engine's facts must all be there
  // The build's analysis of the built-in patterns (AddEmbedded), by pattern text.
  std::map<std::string, PatternAtoms, std::less<>> known_atoms;
};

// Column of `fragment` inside the pattern value, to place the caret.
SourcePos PatternPos(const Located<std::string>& pattern, const std::string& fragment,
                     const std::map<std::string, std::string>& sources);

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_RULE_LOADER_INTERNAL_H_
