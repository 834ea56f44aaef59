// Partials: the scan state of some inputs in a file, and the merge of any
// number of them into the diagnosis one scan over all their inputs gives
// (DESIGN.md §9). `ncclscan partial -o FILE INPUT...` writes one, on each node
// of a cluster over its share of the logs; `ncclscan merge FILE...` reads them.
//
// A partial holds one segment per input file the scan expanded (an archive is
// one input with its members): that input's unfinalized JobState, keyed by
// the input's path and what the input is (a regular file: host, device and
// inode; stdin or a pipe: a hash of its state), so the same path on two nodes
// is two inputs and one file under two spellings is one. A merge keeps each
// input once (the others counted as duplicates, as a scan counts them), sorts
// the segments by input path — the order one scan of the whole set reads them
// in (ExpandInputs sorts) — and folds them with JobState::Absorb, so it is
// associative and commutative: any grouping, any order of partials gives the
// same result. It equals one scan except where a
// scan carries state from one file into the next (JobState::Absorb says
// which; one process's lines split over two files).
//
// File format (version 3), deterministic for the same inputs and rules:
//   "ncclscan-partial\n"  magic
//   varint                version
//   zstd frame with content checksum, of:
//     string  rules signature (RuleSet content hash, rule, fact and
//             correlation ids: a merge needs the same rules)
//     string  ncclscan version that wrote it (informational)
//     varint  n, then n strings: input problems met while scanning
//     varint  n, then n segments: string key (input path, NUL, what the
//             input is: "file HOST DEV INO" or "data HASH"; path alone from
//             older writers), string state (JobState::Encode)
// Integers are LEB128 varints (signed ones zigzag), strings a varint length
// and the bytes, doubles 8 bytes little-endian (engine/state/wire.h); a
// state is its parts in turn (engine/state/parts.h).
//
// Thread-safety: functions are independent; the RuleSet is shared read-only.
#ifndef NCCLSCAN_ENGINE_RUN_PARTIAL_H_
#define NCCLSCAN_ENGINE_RUN_PARTIAL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/run/analyze.h"
#include "engine/scan/scanner.h"
#include "engine/state/wire.h"
#include "rules/rule_set.h"

namespace ncclscan {

inline constexpr uint64_t kPartialVersion = 6;

// What the rules a partial was made with must share with those of the merge.
std::string RulesSignature(const RuleSet& rules);

// Scans `paths` (as Analyze does; empty = stdin) and writes the partial to
// `out_path` ("-": standard output). Input problems go to *errors (and into the
// partial); *inputs counts the files opened. False with *err when the partial
// cannot be written.
bool WritePartialScan(const RuleSet& rules, const std::vector<std::string>& paths, const ScanOptions& opts,
                      const std::string& out_path, std::vector<std::string>* errors, size_t* inputs, std::string* err);

// Merges partial files into one finalized analysis (its errors: the input
// problems the partials recorded). False with *err naming the file when one
// cannot be read, is not a partial, is truncated or corrupt, has another
// version, or was made with other rules.
bool MergePartials(const RuleSet& rules, const std::vector<std::string>& files, Analysis* out, std::string* err);

// The same from partials' bodies (the bytes inside their zstd frame), for the
// fuzzer: each body is checked as a file's would be.
bool MergePartialBodies(const RuleSet& rules, const std::vector<std::string_view>& bodies, Analysis* out,
                        std::string* err);

// The same checks, but writes the union of their segments as one partial
// (for a merge tree): merging it later equals merging the inputs.
bool CombinePartials(const RuleSet& rules, const std::vector<std::string>& files, const std::string& out_path,
                     std::string* err);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_RUN_PARTIAL_H_
