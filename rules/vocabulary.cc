#include "rules/vocabulary.h"

namespace ncclscan {

namespace {

// The row of `id` in a table whose rows are in enum order.
template <typename Row, typename E>
const Row& RowOf(const std::vector<Row>& table, E id) {
  return table[static_cast<size_t>(id)];
}

template <typename Row, typename E>
bool ParseRow(const std::vector<Row>& table, std::string_view s, E* out) {
  for (const Row& r : table) {
    if (s == r.name) {
      *out = r.id;
      return true;
    }
  }
  return false;
}

template <typename Row>
std::string JoinNames(const std::vector<Row>& table) {
  std::string out;
  for (const Row& r : table) out += (out.empty() ? "" : ", ") + std::string(r.name);
  return out;
}

template <typename E>
struct NameRow {
  E id;
  const char* name;
};

const std::vector<NameRow<CollectiveCheck>>& CheckRows() {
  static const std::vector<NameRow<CollectiveCheck>> kRows = {
      {CollectiveCheck::kNeverJoined, "never_joined"},
      {CollectiveCheck::kStoreOverfull, "store_overfull"},
      {CollectiveCheck::kBehind, "behind"},
      {CollectiveCheck::kMismatch, "mismatch"},
      {CollectiveCheck::kNotStarted, "not_started"},
      {CollectiveCheck::kP2pUnpaired, "p2p_unpaired"},
      {CollectiveCheck::kStraggler, "straggler"},
      {CollectiveCheck::kMissingDump, "missing_dump"},
      {CollectiveCheck::kDiedFirst, "died_first"},
      {CollectiveCheck::kArrivedLate, "arrived_late"},
      {CollectiveCheck::kStopped, "stopped"},
      {CollectiveCheck::kStoppedCollectives, "stopped_collectives"},
      {CollectiveCheck::kLoneSubmitter, "lone_submitter"},
      {CollectiveCheck::kRankZeroAlone, "rank_zero_alone"},
      {CollectiveCheck::kNoProgress, "no_progress"},
      {CollectiveCheck::kNcclTestsBandwidth, "nccltests_bandwidth"},
      {CollectiveCheck::kTopoGdrDistance, "topo_gdr_distance"},
      {CollectiveCheck::kTopoP2pPath, "topo_p2p_path"},
      {CollectiveCheck::kShmDespiteNvlink, "shm_despite_nvlink"},
      {CollectiveCheck::kDuplicateGpu, "duplicate_gpu"},
      {CollectiveCheck::kNeverStarted, "never_started"},
      {CollectiveCheck::kStartedTwice, "started_twice"},
      {CollectiveCheck::kEndedAbnormally, "ended_abnormally"},
      {CollectiveCheck::kEndedPartly, "ended_partly"},
  };
  return kRows;
}

const std::vector<NameRow<ConditionOp>>& OpRows() {
  static const std::vector<NameRow<ConditionOp>> kRows = {
      {ConditionOp::kEquals, "equals"},   {ConditionOp::kNotEquals, "not_equals"},
      {ConditionOp::kMatches, "matches"}, {ConditionOp::kExists, "exists"},
      {ConditionOp::kAbsent, "absent"},   {ConditionOp::kGt, "gt"},
      {ConditionOp::kLt, "lt"},           {ConditionOp::kGe, "ge"},
      {ConditionOp::kLe, "le"},
  };
  return kRows;
}

const std::vector<NameRow<Owner>>& OwnerRows() {
  static const std::vector<NameRow<Owner>> kRows = {
      {Owner::kFabric, "fabric"},           {Owner::kGpuHardware, "gpu-hardware"}, {Owner::kNodeConfig, "node-config"},
      {Owner::kApplication, "application"}, {Owner::kLauncher, "launcher"},        {Owner::kLibrary, "library"},
  };
  return kRows;
}

const std::vector<NameRow<KeyKind>>& KeyKindRows() {
  static const std::vector<NameRow<KeyKind>> kRows = {
      {KeyKind::kName, "name"}, {KeyKind::kComm, "comm"}, {KeyKind::kPg, "pg"}, {KeyKind::kRank, "rank"}};
  return kRows;
}

}  // namespace

const std::vector<CorrelationKindInfo>& CorrelationKinds() {
  static const std::vector<CorrelationKindInfo> kKinds = {
      {CorrelationKind::kConsensus,
       "consensus",
       {"fact", "over", "min_subjects", "ignore_unset", "normal", "tie", "population"},
       {"fact"},
       {"value", "majority", "key", "majority_ranks", "majority_hosts"}},
      {CorrelationKind::kCondition, "condition", {"where", "job"}, {"where"}, {"value"}},
      {CorrelationKind::kAbsence, "absence", {"present", "absent"}, {"present", "absent"}, {}},
      {CorrelationKind::kMissingRanks, "missing_ranks", {}, {}, {"missing", "nranks", "comm"}},
      {CorrelationKind::kExtreme,
       "extreme",
       {"fact", "select", "require", "silent_is_behind"},
       {"fact"},
       {"key", "value", "majority", "group"}},
      {CorrelationKind::kFirstInTime, "first_in_time", {"fact"}, {"fact"}, {"value", "uncertainty"}},
      {CorrelationKind::kPeerMap,
       "peer_map",
       {"fact", "min_reporters"},
       {"fact"},
       {"peer_hosts", "peer_ranks", "reporters"}},
      {CorrelationKind::kCollective,
       "collective",
       {"check"},
       {"check"},
       // engine/models/consensus.h: what each check fills in; from `processes`
       // on, the run's story (checks stopped, stopped_collectives, no_progress,
       // ended_abnormally, ended_partly).
       {"group",  "seq",    "op",      "value",     "majority", "fields", "reporters", "missing",
        "nranks", "source", "trace",   "processes", "stage",    "next",   "behind",    "causes",
        "test",   "first",  "reached", "lines",     "init",     "how",    "ended",     "others"}},
  };
  return kKinds;
}

const CorrelationKindInfo& KindInfo(CorrelationKind k) { return RowOf(CorrelationKinds(), k); }
const char* KindName(CorrelationKind k) { return KindInfo(k).name; }
bool ParseCorrelationKind(std::string_view s, CorrelationKind* out) { return ParseRow(CorrelationKinds(), s, out); }
std::string CorrelationKindNames() { return JoinNames(CorrelationKinds()); }

const std::vector<std::string_view>& CommonCorrelationKeys() {
  static const std::vector<std::string_view> kKeys = {"id",      "title",      "category", "kind",
                                                      "finding", "references", "enabled"};
  return kKeys;
}

const char* CheckName(CollectiveCheck c) { return RowOf(CheckRows(), c).name; }
bool ParseCollectiveCheck(std::string_view s, CollectiveCheck* out) { return ParseRow(CheckRows(), s, out); }
std::string CollectiveCheckNames() { return JoinNames(CheckRows()); }

const char* OpName(ConditionOp op) { return RowOf(OpRows(), op).name; }
bool ParseConditionOp(std::string_view s, ConditionOp* out) { return ParseRow(OpRows(), s, out); }
bool IsNumericOp(ConditionOp op) {
  switch (op) {
    case ConditionOp::kGt:
    case ConditionOp::kLt:
    case ConditionOp::kGe:
    case ConditionOp::kLe:
      return true;
    case ConditionOp::kEquals:
    case ConditionOp::kNotEquals:
    case ConditionOp::kMatches:
    case ConditionOp::kExists:
    case ConditionOp::kAbsent:
    case ConditionOp::kCount:
      return false;
  }
  return false;
}

const char* OwnerName(Owner o) { return RowOf(OwnerRows(), o).name; }
bool ParseOwner(std::string_view s, Owner* out) { return ParseRow(OwnerRows(), s, out); }
std::string OwnerNames() { return JoinNames(OwnerRows()); }

const std::vector<CategoryInfo>& Categories() {
  static const std::vector<CategoryInfo> kCategories = {
      {Category::kTransport, "transport", Owner::kNodeConfig},
      {Category::kGdr, "gdr", Owner::kNodeConfig},
      {Category::kP2p, "p2p", Owner::kNodeConfig},
      {Category::kEnv, "env", Owner::kNodeConfig},
      {Category::kVersion, "version", Owner::kNodeConfig},
      {Category::kTimeout, "timeout", Owner::kApplication},
      {Category::kDesync, "desync", Owner::kApplication},
      {Category::kConnection, "connection", Owner::kFabric},
      {Category::kIb, "ib", Owner::kFabric},
      {Category::kCuda, "cuda", Owner::kGpuHardware},
      {Category::kOom, "oom", Owner::kApplication},
      {Category::kInit, "init", Owner::kLibrary},
      {Category::kBootstrap, "bootstrap", Owner::kFabric},
      {Category::kTopology, "topology", Owner::kNodeConfig},
      {Category::kElastic, "elastic", Owner::kLauncher},
      {Category::kConfig, "config", Owner::kNodeConfig},
      {Category::kIdentity, "identity", Owner::kLauncher},
      {Category::kCrash, "crash", Owner::kApplication},
      {Category::kHang, "hang", Owner::kApplication},
  };
  return kCategories;
}
const char* CategoryName(Category c) { return RowOf(Categories(), c).name; }
bool ParseCategory(std::string_view s, Category* out) { return ParseRow(Categories(), s, out); }
Owner DefaultOwner(Category c) { return RowOf(Categories(), c).owner.value; }
std::string CategoryNames() { return JoinNames(Categories()); }

const char* KeyKindName(KeyKind k) { return RowOf(KeyKindRows(), k).name; }
bool ParseKeyKind(std::string_view s, KeyKind* out) { return ParseRow(KeyKindRows(), s, out); }

const std::vector<StatusInfo>& Statuses() {
  static const std::vector<StatusInfo> kStatuses = {
      {Status::kOk, "ok", "OK", false},
      {Status::kWarn, "warn", "WARN", false},
      {Status::kFail, "fail", "FAIL", false},
      {Status::kCrashed, "crashed", "CRASHED", false},
      {Status::kHung, "hung", "HUNG", false},
      {Status::kIncomplete, "incomplete", "INCOMPLETE", true},
      {Status::kUnknown, "unknown", "UNKNOWN", true},
      {Status::kPartial, "partial", "PARTIAL", true},
  };
  return kStatuses;
}
const char* StatusName(Status s) { return RowOf(Statuses(), s).name; }
const char* StatusHeadline(Status s) { return RowOf(Statuses(), s).headline; }
bool IsUndecided(Status s) { return RowOf(Statuses(), s).undecided; }
bool ParseStatus(std::string_view s, Status* out) { return ParseRow(Statuses(), s, out); }

}  // namespace ncclscan
