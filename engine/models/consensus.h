// Consensus: the collective-consensus model (DESIGN.md §7) — who is the culprit.
//
// Per process group (or NCCL communicator) and sequence number, each rank has a
// state (not seen / enqueued / started / completed) with the op type, sizes,
// dtype, root or p2p peer and where that was read. Two kinds of input feed it:
//   - text, through the facts the line rules set (rules/consensus.yaml,
//     rules/coll.yaml, rules/torch.yaml): the COLL trace's calls (a window of
//     the latest call per communicator and rank: the line `last_opcount` keeps), the watchdog's
//     SeqNum / OpType / Numel of the collective a rank waited in, its last
//     enqueued / completed work, and the world size (NCCL nranks, PyTorch's
//     process-group size, `world_size`);
//   - PyTorch Flight Recorder dumps (JobState::flight_recorders()), whose
//     pg_config also says which ranks should exist.
// The culprit is the rank that departs from what the others agree on. The
// checks, each run by a correlation of kind `collective` that names it with
// `check:` (the rule file holds its id, title, severity and texts, so
// `explain`, the corpus and the JSON see it like any other correlation):
//   never_joined  the world size is known, some ranks wait in a collective and
//                 other ranks left no trace at all (elimination; also for one
//                 rank's log alone)
//   store_overfull a store barrier counted more workers than its world size
//                 (an extra process): the waiting ranks beyond the world
//   missing_dump  a rank of pg_config without a dump file while others dumped
//   behind        dumps: the rank(s) furthest behind in one group (never
//                 enqueued the sequence the others wait in)
//   mismatch      one sequence of one group called with another op type,
//                 size, dtype or root than the others (the minority; every
//                 mismatch of every group, the fields that differ named)
//   not_started   enqueued but never started while the others started: from
//                 dumps, and from text where the desync report says a rank
//                 never joined #N while its own status says it enqueued #N
//   p2p_unpaired  dumps: sends and receives that do not pair (peer, size)
//   straggler     the job was killed from outside (launcher signal, time
//                 limit) with one rank behind in its COLL trace
//   never_started text: the world size is stated, some ranks printed their
//                 start (rank_started) and the logs stop there, while the
//                 other ranks of the world printed nothing at all
//   started_twice text: one log prints the start of one global rank twice
//                 (two processes claim it)
//   died_first    text: a rank that did not time out with the others and whose
//                 fatal error (OOM, exception, the launcher's "failed") or last
//                 timestamped line precedes their watchdog timeouts
//   arrived_late  text: a rank that did not time out with the others and whose
//                 first error, a peer that had gone (remote error, connection
//                 closed), comes well after their timeouts: it entered late
// The checks live in consensus_checks.cc, consensus_absent.cc and consensus_text.cc
// (consensus_checks.h).
// Sequences are compared within one group only: sequence numbers of
// different process groups or communicators are unrelated counters.
//
// Memory: the model keeps, per group and rank, at most kWindow sequences (the
// latest ones; from a COLL trace only the latest call per communicator, the line
// `last_opcount` keeps) and at most kMaxP2p point-to-point ops — enough to
// compare the calls around a hang, not the history of the job. Sends and
// receives of a COLL trace come as the latest one per communicator, direction
// and peer with their number (`p2p_last`, set by Send/Recv lines only).
// Why no window of collectives from the COLL trace: any second fact entry on
// every collective line costs the scan measurably (500 MB simulated traced job,
// -j1, CPU-time medians of 8: 0.495 s as is; a `{op}`-keyed latest call per
// collective type 0.56 s, +13%; `{comm} {op}` 0.60 s, +21%).
//
// Thread-safety: a CollectiveModel is built and read by one thread;
// RunCollectiveChecks reads a finalized JobState and only appends to `out`.
#ifndef NCCLSCAN_ENGINE_MODELS_CONSENSUS_H_
#define NCCLSCAN_ENGINE_MODELS_CONSENSUS_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/state/job_state.h"
#include "parsers/flight_recorder.h"

namespace ncclscan {

struct Finding;

enum class CallState { kNotSeen = 0, kEnqueued = 1, kStarted = 2, kCompleted = 3 };
const char* CallStateName(CallState s);

// How the reports name process group `pg`: "pg 3", or "the process group" for
// a watchdog line that names none (PyTorch before 2.2: the empty key).
std::string PgName(const std::string& pg);

// One rank's view of one sequence (or one p2p op) of one group.
struct CollectiveCall {
  int64_t seq = -1;
  CallState state = CallState::kNotSeen;
  std::string op;     // upper case, without "nccl:" ("ALLREDUCE", "_ALLGATHER_BASE", "SEND")
  std::string sizes;  // "[[4, 5]] -> [[4, 5]]" (dumps) or "count 1024" (COLL)
  std::string dtype;  // "Float" or an NCCL datatype code name ("fp32")
  std::string root;   // COLL root ("" for dumps)
  bool p2p = false;
  bool send = false;  // p2p: a send (else a receive)
  int peer = -1;      // p2p: the peer's global rank (-1 unknown)
  int64_t calls = 1;  // COLL trace p2p: how many sends to (receives from) that peer; this is the latest
  Evidence evidence;  // a text line, or the dump file with the entry in its text
};

struct RankView {
  int64_t last_enqueued = -1, last_started = -1, last_completed = -1;
  int64_t waiting_in = -1;                  // seq the watchdog timed out in (text)
  std::map<int64_t, CollectiveCall> calls;  // by seq, the latest kWindow
  std::vector<CollectiveCall> p2p;          // the latest kMaxP2p
  Evidence evidence;                        // where this rank's view was read
};

struct GroupView {
  std::string id;    // "pg 0" (PyTorch process group) or "comm 0x…" (NCCL communicator)
  std::string desc;  // "default_pg"
  bool from_dump = false;
  // COLL trace: the communicator carried sends / receives. Each rank's opCount
  // then counts its own launches, so collectives are not compared by opCount.
  bool coll_p2p = false;
  // TORCH_DISTRIBUTED_DEBUG=DETAIL's fingerprint check: each line names two
  // ranks' calls, so a mismatch names a culprit only by a majority of three or more.
  bool fingerprints = false;
  std::vector<int> members;       // global ranks, when known (pg_config)
  std::map<int, RankView> ranks;  // global rank -> view
};

class CollectiveModel {
 public:
  static constexpr size_t kWindow = 64;
  static constexpr size_t kMaxP2p = 256;

  // One dump file; `file` is its index in JobState::files() (-1 if none).
  void AddDump(const FrFile& f, int file);
  // The latest COLL trace call (the line `last_opcount` keeps) per communicator of every live subject with a rank,
  // and per communicator the latest send to / receive from each peer with their number (`p2p_last`), the peer
  // mapped from its communicator-local rank to a global rank through the Init lines.
  void AddCollTrace(const JobState& state);
  // The collective each rank's watchdog timed out in (`timeout_seq`,
  // `timeout_op`, `work_size`), as a started call of its process group.
  void AddWatchdog(const JobState& state);
  // What the collective-fingerprint check's lines say each rank ran
  // (`collective_fingerprint`, keyed by rank: "OP #SEQ"), as one group.
  void AddFingerprints(const JobState& state);

  const std::map<std::string, GroupView>& groups() const { return groups_; }
  // Global ranks that have a dump file, and the ranks pg_config lists (union).
  const std::set<int>& dump_ranks() const { return dump_ranks_; }
  const std::set<int>& configured_ranks() const { return configured_ranks_; }
  const std::map<int, std::string>& dump_paths() const { return dump_paths_; }

 private:
  void Keep(RankView* v, CollectiveCall c);
  void AddCollP2p(const JobState& state);
  // One subject's fingerprint facts: those of its own rank (own), or the others'.
  void AddFingerprintsOf(const Subject& sub, int fact, bool own);

  std::map<std::string, GroupView> groups_;
  std::set<int> dump_ranks_, configured_ranks_;
  std::map<int, std::string> dump_paths_;
};

// Builds the model from `state` and runs every enabled `collective`
// correlation of the rule set, appending its findings.
void RunCollectiveChecks(const JobState& state, std::vector<Finding>* out, std::vector<std::string>* errors = nullptr);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_MODELS_CONSENSUS_H_
