// The engine's contract with the rule files: the facts that engine/*.cc reads or
// sets by name, with the shape it assumes (merge mode, keyed, what the key
// names), and the identity `event` values it acts on. Rule files are data a
// user may override; these names are the few places where C++ depends on that
// data, so the loader checks them at every load (E-ENGINE-FACT,
// E-ENGINE-EVENT) instead of letting a renamed or reshaped fact silently turn
// a feature off.
//
// The engine names a fact only through Fact: RuleSet::fact(Fact::kWorldSize)
// is its index, resolved once at load. Adding a fact the engine reads, or an
// event comparison? Add it to Fact and to the table in engine_contract.cc.
//
// Thread-safety: constant tables; every function is pure.
#ifndef NCCLSCAN_RULES_ENGINE_CONTRACT_H_
#define NCCLSCAN_RULES_ENGINE_CONTRACT_H_

#include <string>
#include <string_view>
#include <vector>

#include "rules/rule.h"
#include "rules/vocabulary.h"

namespace ncclscan {

// Every fact the engine reads or sets, in the order of EngineFacts().
enum class Fact : int {
  kNcclVersion,
  kNetwork,
  kInterTransport,
  kInitStart,
  kInitComplete,
  kCommAbort,
  kFirstError,
  kRankClaimedElsewhere,
  kLastOpcount,
  kLastEnqueued,
  kLastCompleted,
  kTimeoutSeq,
  kP2pLast,
  kDesyncUnjoined,
  kExitcode,
  kTimeoutOp,
  kWorldSize,
  kWorkSize,
  kOom,
  kCrash,
  kElasticFailed,
  kJobKilled,
  kClosedPeer,
  kNccltestsResult,
  kNccltestsRank,
  kCudaDriver,
  kBootstrapIf,
  kSocketIf,
  kNetPlugin,
  kIbDevices,
  kIbMissing,
  kCollChannels,
  kAlgoProto,
  kNvls,
  kIntraTransport,
  kP2pChannels,
  kShmChannels,
  kGdr,
  kTorchVersion,
  kCleanEnd,
  kStallMissing,
  kLastLine,
  kStoreWait,
  kTransportChain,
  kNodes,
  kNprocPerNode,
  kGpuBus,
  kNccltestsBusbw,
  kTopoRow,
  kTopoNic,
  kNvlinkUp,
  kEnv,
  kWorkerPid,
  kWatchdogFired,
  kRankStarted,
  kRankStartedLast,
  kCollectiveFingerprint,
  kWorkersStopped,
  kJobEnd,
  kCount
};
inline constexpr int kNumEngineFacts = static_cast<int>(Fact::kCount);

struct EngineFact {
  Fact id;
  const char* name;
  MergeMode merge;
  bool keyed;
  KeyKind key_kind;      // keyed facts: what the key names
  const char* used_for;  // for the error message: which part of the engine reads it
  // The fields the engine reads (FactSpec::fields): the rule files' list must
  // begin with these, in this order, so FactValue::fields is read by position
  // (the enums below).
  std::vector<std::string_view> fields = {};
};

// Positions in FactValue::fields of the engine facts that carry fields.
enum class CollField : int { kOp, kCount, kDatatype, kRoot };  // last_opcount
enum class P2pField : int { kCount, kDatatype, kDir, kPeer };  // p2p_last (op: Send or Recv; root: the peer)
enum class TimeoutField : int { kOp, kTimeoutMs, kRanMs };     // timeout_seq
enum class StoreField : int { kAwaits, kWorld, kJoined };      // store_wait

// Every fact of the contract, in the order of Fact (EngineFacts()[i].id == i).
const std::vector<EngineFact>& EngineFacts();

// The identity `event` values the engine knows (engine/state/job_state.cc: Init START
// and Init COMPLETE mark a communicator's members, Abort… an abort; the others
// are accepted and ignored).
const std::vector<std::string_view>& EngineEvents();
bool IsEngineEvent(std::string_view event);

// "first", "last", … as written in a rule file.
const char* MergeModeName(MergeMode m);

// "merge max, keyed by comm, fields [op, count, datatype, root]".
std::string EngineFactShape(const EngineFact& f);

// "" when `spec` has the shape `want` needs, else what differs
// ("merge last, not first", "keyed with key: comm", …).
std::string EngineFactMismatch(const EngineFact& want, const FactSpec& spec);

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_ENGINE_CONTRACT_H_
