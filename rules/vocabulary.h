// The words rule files and the engine share: correlation kinds (with the keys
// each one reads and the template variables it fills), the checks of the
// collective-consensus model, condition operators, categories with the team
// that owns their fix by default, owners, the key kinds of keyed facts, and the
// statuses of a diagnosis. One table row per word: the reader validates a
// rule file against these tables, the engine switches on the enums, and the
// reports print the names from the same rows. A word is added in one place
// (its enum and its row); a switch that misses it does not compile
// (-Wswitch), and a row that misses a field fails vocabulary_test.
//
// Facts are the other half of the contract (rules/engine_contract.h).
//
// Thread-safety: constant tables; every function is pure.
#ifndef NCCLSCAN_RULES_VOCABULARY_H_
#define NCCLSCAN_RULES_VOCABULARY_H_

#include <string>
#include <string_view>
#include <vector>

namespace ncclscan {

// --- Correlation kinds (docs/rules.md §3) -----------------------------------

enum class CorrelationKind : int {
  kConsensus,     // the subjects disagree on a fact: name the odd ones out
  kCondition,     // subjects whose facts meet every `where` condition
  kAbsence,       // subjects with fact `present` but never `absent`
  kMissingRanks,  // ranks of a communicator whose logs are missing
  kExtreme,       // the subjects with the lowest (or highest) value of a fact
  kFirstInTime,   // the subject that reported a fact first
  kPeerMap,       // the host most reports name as the far end
  kCollective,    // a check of the collective-consensus model (engine/models/consensus.h)
  kCount
};

struct CorrelationKindInfo {
  CorrelationKind id;
  const char* name;
  // The keys this kind reads, beyond those every correlation has (id, title,
  // category, kind, finding, references, enabled); the others are refused.
  std::vector<std::string_view> keys;
  std::vector<std::string_view> required;  // of `keys`, the ones it cannot do without
  // Template variables its findings fill, beyond {ranks} {hosts} {count}.
  std::vector<std::string_view> vars;
};

// Every kind, in the order of the enum.
const std::vector<CorrelationKindInfo>& CorrelationKinds();
const CorrelationKindInfo& KindInfo(CorrelationKind k);
const char* KindName(CorrelationKind k);
bool ParseCorrelationKind(std::string_view s, CorrelationKind* out);
// The keys every correlation may have, whatever its kind.
const std::vector<std::string_view>& CommonCorrelationKeys();

// --- Checks of the collective-consensus model (engine/models/consensus.h) ------------

enum class CollectiveCheck : int {
  kNeverJoined,
  kStoreOverfull,
  kBehind,
  kMismatch,
  kNotStarted,
  kP2pUnpaired,
  kStraggler,
  kMissingDump,
  kDiedFirst,
  kArrivedLate,
  kStopped,
  kStoppedCollectives,
  kLoneSubmitter,
  kRankZeroAlone,
  kNoProgress,
  kNcclTestsBandwidth,
  kTopoGdrDistance,
  kTopoP2pPath,
  kShmDespiteNvlink,
  kDuplicateGpu,
  kNeverStarted,
  kStartedTwice,
  kEndedAbnormally,
  kEndedPartly,
  kCount
};
const char* CheckName(CollectiveCheck c);
bool ParseCollectiveCheck(std::string_view s, CollectiveCheck* out);

// --- Condition operators (`where:` of a condition correlation) ---------------

enum class ConditionOp : int { kEquals, kNotEquals, kMatches, kExists, kAbsent, kGt, kLt, kGe, kLe, kCount };
const char* OpName(ConditionOp op);
bool ParseConditionOp(std::string_view s, ConditionOp* out);
// gt lt ge le: the value must be a number, and so must the fact's.
bool IsNumericOp(ConditionOp op);

// --- Owners and categories ------------------------------------------------------

// The team that owns the fix (finding.owner; docs/rules.md §4).
enum class Owner : int { kFabric, kGpuHardware, kNodeConfig, kApplication, kLauncher, kLibrary, kCount };
const char* OwnerName(Owner o);
bool ParseOwner(std::string_view s, Owner* out);

// A table field every row must give: a row that leaves it out does not
// compile (aggregate initialisation would need a default constructor).
template <typename T>
struct Given {
  constexpr Given(T v) : value(v) {}  // NOLINT(runtime/explicit): rows are written {…, Owner::kFabric}
  T value;
};

enum class Category : int {
  kTransport,
  kGdr,
  kP2p,
  kEnv,
  kVersion,
  kTimeout,
  kDesync,
  kConnection,
  kIb,
  kCuda,
  kOom,
  kInit,
  kBootstrap,
  kTopology,
  kElastic,
  kConfig,
  kIdentity,
  kCrash,
  kHang,
  kCount
};
struct CategoryInfo {
  Category id;
  const char* name;
  Given<Owner> owner;  // who owns the fix when the rule does not say
};
const std::vector<CategoryInfo>& Categories();
const char* CategoryName(Category c);
bool ParseCategory(std::string_view s, Category* out);
Owner DefaultOwner(Category c);

// --- Key kinds of keyed facts (`key:` of a fact) ----------------------------------

// name: any text (an env variable, a call); rank: a global rank number (a key
// that renders as anything else, such as an empty capture, sets nothing).
enum class KeyKind : int { kName, kComm, kPg, kRank, kCount };
const char* KeyKindName(KeyKind k);  // "name", "comm", "pg", "rank"
bool ParseKeyKind(std::string_view s, KeyKind* out);

// --- Statuses of a diagnosis (the JSON contract's `status`) ----------------------

enum class Status : int { kOk, kWarn, kFail, kCrashed, kHung, kIncomplete, kUnknown, kPartial, kCount };
struct StatusInfo {
  Status id;
  const char* name;      // in the JSON ("ok", "fail", …)
  const char* headline;  // first word of the terminal report ("OK", "FAIL", …)
  // unknown, incomplete, partial: the scan claims neither health nor a failure
  // (`--fail-on unknown` turns them into exit 1; the judge counts no claim).
  bool undecided;
};
const std::vector<StatusInfo>& Statuses();
const char* StatusName(Status s);
const char* StatusHeadline(Status s);
bool IsUndecided(Status s);
bool ParseStatus(std::string_view s, Status* out);

// "a, b, c": the names of a table, for a load error's help text.
std::string CorrelationKindNames();
std::string CollectiveCheckNames();
std::string CategoryNames();
std::string OwnerNames();

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_VOCABULARY_H_
