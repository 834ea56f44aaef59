#include "rules/engine_contract.h"

#include <algorithm>

namespace ncclscan {

const std::vector<EngineFact>& EngineFacts() {
  static const std::vector<EngineFact> kFacts = {
      {"nccl_version", MergeMode::kLast, false, "", "the report's per-rank summary, the corpus runner and known issues"},
      {"torch_version", MergeMode::kLast, false, "", "known issues of component torch (the versions they affect)"},
      {"network", MergeMode::kLast, false, "", "the report's per-rank summary"},
      {"inter_transport", MergeMode::kSet, false, "", "the report's per-rank summary"},
      {"init_start", MergeMode::kFirst, false, "", "the identity events (Init START)"},
      {"init_complete", MergeMode::kLast, false, "", "the identity events (Init COMPLETE)"},
      {"comm_abort", MergeMode::kFirst, false, "", "the identity events (Abort)"},
      {"first_error", MergeMode::kFirst, false, "", "the report's per-rank summary"},
      {"rank_claimed_elsewhere", MergeMode::kFirst, false, "", "the identity resolution (two hosts, one rank)"},
      {"last_opcount", MergeMode::kMax, true, "comm", "the extreme correlation's cut-off-rank test"},
      {"last_enqueued", MergeMode::kMax, true, "pg", "the report's per-rank summary"},
      {"last_completed", MergeMode::kMax, true, "pg", "the report's per-rank summary"},
      {"timeout_seq", MergeMode::kMin, true, "pg", "the report's per-rank summary"},
      {"p2p_last", MergeMode::kMax, true, "comm", "the consensus model's send/receive pairing (its count)"},
      {"desync_unjoined", MergeMode::kFirst, true, "", "the consensus model's not-started check from text"},
      {"exitcode", MergeMode::kLast, false, "", "the consensus model's died-first check (-6/-15 are victims)"},
  };
  return kFacts;
}

const std::vector<std::string_view>& EngineEvents() {
  static const std::vector<std::string_view> kEvents = {"Init START", "Init COMPLETE", "Abort START",
                                                        "Abort COMPLETE", "Abort", "Destroy COMPLETE"};
  return kEvents;
}

bool IsEngineEvent(std::string_view event) {
  const auto& e = EngineEvents();
  return std::find(e.begin(), e.end(), event) != e.end();
}

const char* MergeModeName(MergeMode m) {
  switch (m) {
    case MergeMode::kFirst: return "first";
    case MergeMode::kLast: return "last";
    case MergeMode::kSet: return "set";
    case MergeMode::kMax: return "max";
    case MergeMode::kMin: return "min";
    case MergeMode::kCount: return "count";
  }
  return "?";
}

std::string EngineFactMismatch(const EngineFact& want, const FactSpec& spec) {
  std::string out;
  auto add = [&out](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (spec.merge != want.merge) {
    add(std::string("merge ") + MergeModeName(want.merge) + ", not " + MergeModeName(spec.merge));
  }
  if (spec.keyed != want.keyed) {
    add(want.keyed ? "keyed: true" : "not keyed");
  } else if (want.keyed && spec.key_kind != want.key_kind) {
    add(std::string("key: ") + (*want.key_kind ? want.key_kind : "name") + ", not key: " +
        (spec.key_kind.empty() ? "name" : spec.key_kind));
  }
  return out;
}

}  // namespace ncclscan
