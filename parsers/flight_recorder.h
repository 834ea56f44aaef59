// FlightRecorder: PyTorch Flight Recorder dumps (TORCH_NCCL_DUMP_ON_TIMEOUT=1,
// `nccl_trace_rank_<N>`) read as plain inputs: the pickle PyTorch writes
// (protocol 2, the opcodes listed in docs/flight_recorder.md) and the JSON form.
// A dump is one rank's ring buffer of collectives: per process group, the
// sequence numbers it enqueued, started and completed, with op, sizes, dtypes
// and times — the input of the collective-consensus model (engine/models/consensus.h).
//
// Thread-safety: plain functions over values.
#ifndef NCCLSCAN_PARSERS_FLIGHT_RECORDER_H_
#define NCCLSCAN_PARSERS_FLIGHT_RECORDER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ncclscan {

// One entry of a rank's ring buffer (FLIGHT_RECORDER.md "An entry").
struct FrEntry {
  int64_t record_id = -1;
  std::string pg_id;               // process-group id, as text ("0")
  std::string pg_name, pg_desc;    // process_group tuple: ("0", "default_pg")
  int64_t collective_seq_id = -1;  // per-PG sequence of collectives (0 for p2p)
  int64_t p2p_seq_id = -1;
  int64_t op_id = -1;
  std::string profiling_name;  // "nccl:all_reduce", "nccl:send 1->2", ...
  std::string state;           // "scheduled" | "started" | "completed"
  bool is_p2p = false;
  bool retired = false;
  double time_created_ns = -1;    // -1: absent / None
  double time_started_ns = -1;    // time_discovered_started_ns
  double time_completed_ns = -1;  // time_discovered_completed_ns
  double duration_ms = -1;
  int64_t timeout_ms = -1;
  std::vector<std::vector<int64_t>> input_sizes, output_sizes;
  std::vector<std::string> input_dtypes, output_dtypes;
  std::string top_frame;  // frames[0] as "name (filename:line)", "" if none
};

struct FrProcessGroup {
  std::string name, desc;
  std::vector<int> ranks;  // global ranks, from the "[0, 1, 2, 3]" string
};

struct FrPgStatus {
  int64_t last_enqueued = -1, last_started = -1, last_completed = -1;
};

// One dump file.
struct FrDump {
  std::string version;                              // dump-format version ("2.4")
  std::string nccl_version;                         // comm_lib_version or nccl_version
  std::map<std::string, FrProcessGroup> pg_config;  // by pg name
  std::map<std::string, FrPgStatus> pg_status;      // by pg id
  std::vector<FrEntry> entries;                     // oldest first
  uint64_t entries_dropped = 0;                     // older entries past kMaxFrEntriesPerDump, not kept
};

// A dump as read from one input file: its path, the global rank (from the file
// name's suffix digits, -1 if none) and what it holds.
struct FrFile {
  std::string path;
  int rank = -1;
  FrDump dump;
};

// The largest dump read: a ring buffer of ~2000 entries is a few MiB, stacks
// included. ParseFlightRecorder rejects larger input, and the memory its
// result takes is held under the same bound.
inline constexpr size_t kMaxFlightRecorderBytes = size_t{256} << 20;

// Entries held, whatever the input: a dump keeps its newest
// kMaxFrEntriesPerDump (a ring buffer is ~2000; the newest are those around a
// hang); once the dumps before it hold kMaxFrEntriesHeld, a dump keeps only its
// newest kFrEntriesPastBound. Memory then grows by a few KiB a dump, not by
// its size (20 crafted 1 KiB dumps of 600 k entries each held 4.5 GB).
inline constexpr size_t kMaxFrEntriesPerDump = 20000;
inline constexpr size_t kMaxFrEntriesHeld = size_t{1} << 16;
inline constexpr size_t kFrEntriesPastBound = 16;

// Appends `f` to `dumps` (in input order) under the bound above; *held is the
// number of entries `dumps` holds. Returns the entries `f` lost, those dropped
// when it was parsed included (then cleared: holding a held dump again, as a
// merge does, drops only what the bound now asks). Scan and merge hold dumps
// through this one function, so they keep the same entries.
uint64_t HoldFlightRecorder(std::vector<FrFile>* dumps, size_t* held, FrFile f);

// Whether the first bytes are a pickle of protocol 2 or later (0x80 PROTO):
// never a log, whatever it holds.
bool LooksLikePickle(std::string_view head);

// Whether the first bytes of a file look like a dump: a pickle (0x80 PROTO
// 2..5, an optional protocol-4 FRAME, then EMPTY_DICT or PyTorch's
// torch.jit._pickle type tag) or a JSON object with a "pg_config" or
// "pg_status" key, or both "entries" and "version", in `head` (not a docker
// json-file line).
bool LooksLikeFlightRecorder(std::string_view head);

// Parses a whole dump (pickle or JSON). On failure returns false with a clear
// one-line reason in *err ("unsupported pickle opcode 0x63 at byte 1234",
// "truncated pickle at byte N", "not a Flight Recorder dump: no 'entries'").
bool ParseFlightRecorder(std::string_view bytes, FrDump* out, std::string* err);

// The global rank in a dump's file name: the digits at the end of the base
// name ("nccl_trace_rank_12" -> 12, "trace_rank3.json" -> 3), -1 if none.
int RankFromDumpName(std::string_view path);

}  // namespace ncclscan

#endif  // NCCLSCAN_PARSERS_FLIGHT_RECORDER_H_
